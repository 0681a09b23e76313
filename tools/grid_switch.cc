// grid-switch: the GRID switch pipeline on DPDK ports (any PMD: memif,
// af_packet, ring, tap, real NICs). Port i of the table-entry file is DPDK
// port i.
//
//   grid-switch [EAL arguments] -- --config=switch.json
//               [--impair=PORT:loss=P,dup=P,reorder=P,gbps=G]...
//               [--capacity-gbps=C] [--rate-scale=S] [--idle-us=50]
//
// The switch aggregates at most its table's capacity_gbps (C_s), or
// --capacity-gbps, times --rate-scale (an emulation's scale factor).
//
// With one lcore, it receives, runs the pipeline and transmits. With more
// (-l/--lcores), the main lcore receives on every queue and hands each GRID
// packet to the pipeline lcore that owns its slot, so all contributions to a
// slot meet in one pipeline; each pipeline lcore transmits on its own queue,
// the one a rank's lane for those slots reads (docs/switch.md, "Lcores").
//
// Signals: SIGUSR1 prints the counters (JSON, stderr), SIGHUP reloads the
// table file, SIGINT/SIGTERM stop and print the final counters on stdout.
#include <rte_byteorder.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "grid/switch.h"
#include "switch_common.h"
#include "transport/dpdk.h"
#include "transport/lanes.h"
#include "util/random.h"
#include "util/tsan.h"

namespace {

using grid::sw::Pipeline;
using grid::tools::Fail;
using grid::tools::Impairment;
using grid::tools::kBucketBurstBits;
using grid::tools::ParseImpairment;
using grid::tools::TokenBucket;

using grid::tools::g_dump;
using grid::tools::g_reload;
using grid::tools::g_stop;
using grid::tools::LoadConfig;
using grid::tools::Reload;

constexpr size_t kBurst = 32;
constexpr size_t kMaxQueue = 1024;

// A fixed ring of mbufs waiting for a port's rate limit: no allocation per
// packet.
class MbufQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  bool push_back(rte_mbuf* m) {
    if (size_ == kMaxQueue) return false;
    ring_[(head_ + size_++) % kMaxQueue] = m;
    return true;
  }
  void push_front(rte_mbuf* m) {  // only after a pop_front, so there is room
    head_ = (head_ + kMaxQueue - 1) % kMaxQueue;
    ring_[head_] = m;
    ++size_;
  }
  rte_mbuf* front() const { return ring_[head_]; }
  void pop_front() {
    head_ = (head_ + 1) % kMaxQueue;
    --size_;
  }

 private:
  std::array<rte_mbuf*, kMaxQueue> ring_{};
  size_t head_ = 0, size_ = 0;
};

struct Port {
  Impairment impairment;
  grid::transport::FaultInjector faults{grid::transport::LinkFaults{}};
  TokenBucket bucket;
  MbufQueue queue;           // waiting for the rate limit
  rte_mbuf* held = nullptr;  // held back one packet, to reorder
  uint64_t impaired_drops = 0, overflow_drops = 0;
};

}  // namespace

// Every mbuf this switch gives back to the pool goes through here: another
// lcore may take it out next (util/tsan.h).
void FreeMbuf(rte_mbuf* m) {
  grid::util::TsanRelease(m);
  rte_pktmbuf_free(m);
}

// An mbuf from the pool or from another lcore's ring (util/tsan.h).
rte_mbuf* Taken(rte_mbuf* m) {
  if (m != nullptr) grid::util::TsanAcquire(m);
  return m;
}

// One pipeline with its transmit side: the whole switch on a single lcore,
// or one slot shard of it when several lcores run (the main lcore then
// receives and hands each packet to the worker that owns its slot).
class Worker {
 public:
  Worker(Pipeline pipeline, rte_mempool* pool, uint16_t tx_queue, const std::vector<Port>& ports,
         uint64_t seed)
      : pipeline_(std::move(pipeline)), pool_(pool), tx_queue_(tx_queue), ports_(ports) {
    for (uint16_t p = 0; p < ports_.size(); ++p) {
      ports_[p].faults = grid::tools::PortFaults(ports_[p].impairment, seed, p);
    }
  }

  Pipeline& pipeline() { return pipeline_; }

  // The peers to wake after sending to them (the single-lcore switch only).
  void set_bells(const grid::transport::MemifBells* bells) { bells_ = bells; }

  // Whether frames wait for a port's rate limit or a reordering: the loop
  // must come back for them on a timer, not on a doorbell.
  bool Backlog() const {
    for (const Port& port : ports_) {
      if (!port.queue.empty() || port.held != nullptr) return true;
    }
    return false;
  }

  // Runs one received frame through the pipeline and queues what it emits.
  void Handle(rte_mbuf* m, uint16_t in_port) {
    if (rte_pktmbuf_linearize(m) != 0) {
      FreeMbuf(m);
      return;
    }
    uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
    const uint32_t len = rte_pktmbuf_data_len(m);
    out_.Clear();
    pipeline_.Process({data, len}, in_port, &out_);
    int input_uses = 0;
    for (const grid::sw::OutFrame& f : out_.frames) input_uses += f.is_input;
    if (input_uses == 0) {
      FreeMbuf(m);
    } else if (input_uses > 1) {
      rte_mbuf_refcnt_update(m, static_cast<int16_t>(input_uses - 1));
    }
    for (const grid::sw::OutFrame& f : out_.frames) {
      rte_mbuf* o = m;
      if (f.is_input) {
        rte_pktmbuf_data_len(m) = static_cast<uint16_t>(f.length);
        m->pkt_len = f.length;
      } else {
        o = Taken(rte_pktmbuf_alloc(pool_));
        if (o == nullptr) continue;
        char* dst = rte_pktmbuf_append(o, static_cast<uint16_t>(f.length));
        if (dst == nullptr) {
          FreeMbuf(o);
          continue;
        }
        std::memcpy(dst, out_.arena.data() + f.offset, f.length);
      }
      Enqueue(f.port, o);
    }
  }

  // Transmits what each port's rate allows; reports queue depths. Returns
  // the packets sent.
  size_t Flush() {
    // Once per poll round, not per packet: the credit of the time since the
    // last round, for the next burst.
    capacity_.Grant(pipeline_);
    size_t sent_total = 0;
    for (uint16_t p = 0; p < ports_.size(); ++p) {
      Port& port = ports_[p];
      // A packet held back to be reordered goes once nothing follows it, so
      // a pause in traffic never strands it.
      if (port.held != nullptr && port.queue.empty()) {
        port.queue.push_back(port.held);
        port.held = nullptr;
      }
      rte_mbuf* tx[kBurst];
      uint16_t n = 0;
      while (!port.queue.empty() && n < kBurst &&
             port.bucket.Take(rte_pktmbuf_pkt_len(port.queue.front()) * 8.0)) {
        tx[n++] = port.queue.front();
        port.queue.pop_front();
      }
      for (uint16_t i = 0; i < n; ++i) grid::util::TsanRelease(tx[i]);  // the PMD frees them
      const uint16_t sent = n ? rte_eth_tx_burst(p, tx_queue_, tx, n) : 0;
      if (sent != 0 && bells_ != nullptr) {
        if (grid::transport::PeerBell* peer = bells_->peer(p)) peer->Ring(sent);
      }
      for (uint16_t i = n; i-- > sent;) port.queue.push_front(tx[i]);  // retry later, in order
      sent_total += sent;
      pipeline_.SetQueueDepth(p, static_cast<uint32_t>(port.queue.size()));
    }
    return sent_total;
  }

  void Drain(uint64_t* impaired, uint64_t* overflow) {
    for (Port& port : ports_) {
      *impaired += port.impaired_drops;
      *overflow += port.overflow_drops;
      while (!port.queue.empty()) {
        FreeMbuf(port.queue.front());
        port.queue.pop_front();
      }
      if (port.held) FreeMbuf(port.held);
      port.held = nullptr;
    }
  }

 private:
  // Hands a frame to port p's transmit side, through its impairments.
  void Enqueue(uint16_t p, rte_mbuf* m) {
    Port& port = ports_[p];
    const int n = port.faults.Copies();
    if (n == 0) {
      ++port.impaired_drops;
      FreeMbuf(m);
      return;
    }
    rte_mbuf* copies[2] = {m, nullptr};
    if (n == 2) copies[1] = Taken(rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX));
    for (rte_mbuf* c : copies) {
      if (c == nullptr) continue;
      if (port.faults.Hold(port.held == nullptr)) {
        port.held = c;  // goes out after the next one
        continue;
      }
      for (rte_mbuf* x : {c, port.held}) {
        if (x == nullptr) continue;
        if (!port.queue.push_back(x)) {
          ++port.overflow_drops;
          FreeMbuf(x);
        }
      }
      port.held = nullptr;
    }
  }

  Pipeline pipeline_;
  rte_mempool* pool_;
  uint16_t tx_queue_;
  std::vector<Port> ports_;
  grid::tools::CapacityClock capacity_;
  grid::sw::Output out_;
  const grid::transport::MemifBells* bells_ = nullptr;
};

// Which worker owns a frame: GRID packets by slot, so every contribution to
// a slot meets in one pipeline, and worker w sends the results of slots
// s = w mod workers on transmit queue w: the queue a rank's lane for those
// slots reads (transport::LaneOf, Transport::OpenLanes), when the rank has
// as many queue pairs as this switch has pipeline lcores. Everything else
// goes to worker 0.
unsigned Owner(const rte_mbuf* m, unsigned workers) {
  if (workers == 1 || rte_pktmbuf_data_len(m) < grid::wire::kPayloadOffset) return 0;
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  uint16_t dst_port;
  std::memcpy(&dst_port, d + grid::wire::kUdpOffset + offsetof(grid::wire::UdpHeader, dst_port), 2);
  dst_port = rte_be_to_cpu_16(dst_port);
  if (dst_port < grid::wire::kUdpPortBase ||
      dst_port >= grid::wire::kUdpPortBase + grid::wire::kUdpPortCount) {
    return 0;
  }
  return grid::transport::LaneOf({d, rte_pktmbuf_data_len(m)}, workers);
}

namespace {

struct Shard {
  Worker* worker;
  rte_ring* ring;
  std::atomic<bool>* reload;
  const grid::tools::SwitchFlags* flags;
  unsigned shares;  // pipelines sharing the capacity
  // SIGUSR1 handshake: main sets 1; the lcore copies its counters into
  // `snapshot` and sets 2, so main never reads counters a lcore is writing.
  std::atomic<int>* dump;
  grid::sw::Counters* snapshot;
  int idle_us;
};

// Poll loops yield the CPU (sched_yield) on each of kIdleRounds empty
// rounds, then sleep, so several switches and hosts can share two cores
// (two busy pollers on one core collapse). With a doorbell (memif ports,
// one lcore) the loop blocks until a peer sends; with none, or while frames
// wait for a rate limit, it naps for --idle-us. --idle-us=0 polls without
// pause. Every DPDK loop uses it.
class IdleBackoff {
 public:
  static constexpr int kIdleRounds = 64;
  // The longest block on the doorbell: how late a signal's request (dump,
  // reload, stop) may be served.
  static constexpr absl::Duration kBellWait = absl::Milliseconds(20);

  IdleBackoff(int idle_us, grid::transport::Doorbell* bell) : idle_us_(idle_us), bell_(bell) {}

  // `must_nap` (asked only once the loop is idle): frames wait for a timer,
  // or a peer could never ring.
  void After(size_t work, absl::FunctionRef<bool()> must_nap) {
    if (work != 0 || idle_us_ == 0) {
      idle_rounds_ = 0;
      Disarm();
      return;
    }
    if (++idle_rounds_ <= kIdleRounds) {
      // Not a busy poll: with more pollers than cores, the process that
      // will send next needs this CPU.
      sched_yield();
      return;
    }
    if (bell_ == nullptr || must_nap()) {
      Disarm();
      std::this_thread::sleep_for(std::chrono::microseconds(idle_us_));
    } else if (!armed_) {
      bell_->Arm();  // the next round looks at the rings once more
      armed_ = true;
    } else {
      bell_->Wait(kBellWait);
      armed_ = false;
    }
  }

 private:
  void Disarm() {
    if (armed_) bell_->Disarm();
    armed_ = false;
  }
  const int idle_us_;
  grid::transport::Doorbell* const bell_;
  int idle_rounds_ = 0;
  bool armed_ = false;
};

// A worker lcore's loop: packets from its ring, through its pipeline, out.
int WorkerLoop(void* arg) {
  Shard& s = *static_cast<Shard*>(arg);
  rte_mbuf* bufs[kBurst];
  IdleBackoff idle(s.idle_us, nullptr);
  while (!g_stop) {
    const unsigned n =
        rte_ring_dequeue_burst(s.ring, reinterpret_cast<void**>(bufs), kBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) {
      rte_mbuf* m = Taken(bufs[i]);
      s.worker->Handle(m, m->port);
    }
    const size_t sent = s.worker->Flush();
    if (s.reload->exchange(false)) Reload(s.worker->pipeline(), *s.flags, s.shares);
    if (s.dump->load(std::memory_order_acquire) == 1) {
      *s.snapshot = s.worker->pipeline().counters();
      s.dump->store(2, std::memory_order_release);
    }
    idle.After(n + sent, [] { return true; });
  }
  return 0;
}

// Everything the main lcore runs: the ports, the pipeline workers, and with
// several lcores the shards that feed them.
struct Switch {
  grid::tools::SwitchFlags flags;
  grid::sw::SwitchConfig config;
  uint16_t ports = 0;
  unsigned workers = 1;
  rte_mempool* pool = nullptr;
  std::vector<std::unique_ptr<Worker>> pipelines;
  std::vector<Shard> shards;
  std::vector<std::atomic<bool>> reloads;
  std::vector<std::atomic<int>> dumps;
  std::vector<grid::sw::Counters> snapshots;
  std::vector<std::string> eal_args;  // before rte_eal_init permutes argv
  grid::transport::MemifBells bells;
};

// The EAL, the flags after its arguments, the tables, and one lcore per
// pipeline worker (the main lcore receives when there are more).
void Init(int argc, char** argv, Switch& sw) {
  // A memif client cannot connect before its server's socket exists, and the
  // processes of a fabric start in any order.
  if (absl::Status s = grid::transport::WaitForMemifServers(argc, argv, absl::Seconds(60));
      !s.ok()) {
    Fail(std::string(s.message()));
  }
  sw.eal_args.assign(argv, argv + argc);
  const int eal = rte_eal_init(argc, argv);
  if (eal < 0) Fail(std::string("EAL initialisation failed: ") + rte_strerror(rte_errno));
  sw.flags = grid::tools::ParseSwitchFlags(argc - eal, argv + eal);
  sw.config = LoadConfig(sw.flags.config_path);
  if (absl::Status st = grid::sw::ValidateConfig(sw.config); !st.ok()) {
    Fail(std::string(st.message()));
  }
  sw.ports = sw.config.num_ports;
  // rte_eal_init succeeds even when a --vdev failed: count the ports.
  if (rte_eth_dev_count_avail() != sw.ports) {
    Fail("the table file has " + std::to_string(sw.ports) + " ports but DPDK has " +
         std::to_string(rte_eth_dev_count_avail()) + " (check the --vdev/-a arguments)");
  }
  sw.workers = rte_lcore_count() > 1 ? rte_lcore_count() - 1 : 1;
  grid::tools::ApplyCapacity(sw.config, sw.flags, sw.workers);
}

// The mbuf pool, every port with a transmit queue per pipeline worker and as
// many receive queues (the main lcore polls them all), and the workers'
// pipelines with their share of each rate limit.
void StartPorts(Switch& sw) {
  constexpr unsigned kMbufsPerWorker = 8191;
  constexpr uint16_t kDescriptors = 1024;
  sw.pool = rte_pktmbuf_pool_create("grid_switch", kMbufsPerWorker * sw.workers, 256, 0,
                                    grid::transport::GridMbufDataRoom(),
                                    static_cast<int>(rte_socket_id()));
  if (sw.pool == nullptr) Fail(std::string("mbuf pool: ") + rte_strerror(rte_errno));
  std::vector<Port> port_state(sw.ports);
  for (const auto& [p, imp] : sw.flags.impairments) {
    if (p >= sw.ports) Fail("--impair: port " + std::to_string(p) + " does not exist");
    port_state[p].impairment = imp;
    port_state[p].bucket.Configure(imp.gbps / sw.workers, kBucketBurstBits);
  }
  const auto queues = static_cast<uint16_t>(sw.workers);
  for (uint16_t p = 0; p < sw.ports; ++p) {
    rte_eth_conf conf{};
    bool ok = rte_eth_dev_configure(p, queues, queues, &conf) >= 0;
    for (uint16_t q = 0; ok && q < queues; ++q) {
      const int socket = rte_eth_dev_socket_id(p);
      ok = rte_eth_rx_queue_setup(p, q, kDescriptors, socket, nullptr, sw.pool) >= 0 &&
           rte_eth_tx_queue_setup(p, q, kDescriptors, socket, nullptr) >= 0;
    }
    if (!ok || rte_eth_dev_start(p) < 0) {
      Fail("cannot start DPDK port " + std::to_string(p) + " with " + std::to_string(queues) +
           " transmit queues");
    }
    rte_eth_promiscuous_enable(p);
    grid::transport::FitMtuToGridFrames(p);
  }
  for (unsigned w = 0; w < sw.workers; ++w) {
    auto pipeline = Pipeline::Create(sw.config);
    if (!pipeline.ok()) Fail(std::string(pipeline.status().message()));
    sw.pipelines.push_back(std::make_unique<Worker>(
        *std::move(pipeline), sw.pool, static_cast<uint16_t>(w), port_state, 0x5eed + w));
  }
  std::vector<char*> args;
  for (std::string& a : sw.eal_args) args.push_back(a.data());
  std::vector<uint16_t> ports(sw.ports);
  for (uint16_t p = 0; p < sw.ports; ++p) ports[p] = p;
  // A client port toward a switch above: that switch may have its socket
  // but not yet a started port. Our own clients (hosts, switches below)
  // connect to our started ports by themselves.
  if (absl::Status s = grid::transport::AwaitMemifClientLinks(
          static_cast<int>(args.size()), args.data(), ports, absl::Seconds(60));
      !s.ok()) {
    Fail(std::string(s.message()));
  }
  // Doorbells on the single-lcore switch; shards keep napping.
  if (sw.workers == 1) {
    sw.bells = grid::transport::OpenMemifBells(static_cast<int>(args.size()), args.data(), ports);
    sw.pipelines[0]->set_bells(&sw.bells);
  }
}

// With several lcores: a ring and a loop per pipeline worker.
void LaunchShards(Switch& sw) {
  sw.shards.resize(sw.workers);
  sw.reloads = std::vector<std::atomic<bool>>(sw.workers);
  sw.dumps = std::vector<std::atomic<int>>(sw.workers);
  sw.snapshots.resize(sw.workers);
  if (sw.workers == 1) return;
  constexpr unsigned kRingSize = 4096;
  unsigned w = 0;
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) {
    const std::string name = "grid_shard" + std::to_string(w);
    rte_ring* ring = rte_ring_create(name.c_str(), kRingSize, static_cast<int>(rte_socket_id()),
                                     RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ring == nullptr) Fail("cannot create ring " + name);
    sw.shards[w] = Shard{sw.pipelines[w].get(),
                         ring,
                         &sw.reloads[w],
                         &sw.flags,
                         sw.workers,
                         &sw.dumps[w],
                         &sw.snapshots[w],
                         sw.flags.idle_us};
    rte_eal_remote_launch(WorkerLoop, &sw.shards[w], lcore);
    ++w;
  }
}

// SIGUSR1: every pipeline's counters, summed, on stderr.
void DumpCounters(Switch& sw) {
  grid::sw::Counters total;
  if (sw.workers == 1) {
    total = sw.pipelines[0]->pipeline().counters();
  } else {
    for (auto& d : sw.dumps) d.store(1, std::memory_order_release);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (unsigned w = 0; w < sw.workers; ++w) {
      while (sw.dumps[w].load(std::memory_order_acquire) != 2 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      if (sw.dumps[w].exchange(0) == 2) total.Add(sw.snapshots[w]);
    }
  }
  std::fprintf(stderr, "%s\n", grid::sw::CountersToJson(total).c_str());
}

// The main lcore: receive on every port, run the one pipeline or hand each
// packet to the shard that owns its slot; signals between bursts.
void MainLoop(Switch& sw) {
  rte_mbuf* rx[kBurst];
  IdleBackoff idle(sw.flags.idle_us, sw.bells.own.get());
  while (!g_stop) {
    size_t work = 0;
    // Every receive queue: a peer with several queue pairs (a rank's
    // `dpdk: ... -- queues=N`) sends on all of them.
    for (uint16_t p = 0; p < sw.ports; ++p) {
      for (uint16_t q = 0; q < sw.workers; ++q) {  // a queue pair per worker
        const uint16_t n = rte_eth_rx_burst(p, q, rx, kBurst);
        work += n;
        for (uint16_t i = 0; i < n; ++i) {
          Taken(rx[i]);
          rx[i]->port = p;
          if (sw.workers == 1) {
            sw.pipelines[0]->Handle(rx[i], p);
            continue;
          }
          grid::util::TsanRelease(rx[i]);
          if (rte_ring_enqueue(sw.shards[Owner(rx[i], sw.workers)].ring, rx[i]) != 0) {
            FreeMbuf(rx[i]);  // the shard is overrun: a queue drop
          }
        }
      }
    }
    const size_t received = work;
    if (sw.workers == 1) work += sw.pipelines[0]->Flush();
    // Input drained: wake the hosts that were sent less than they wait for.
    if (received == 0) sw.bells.Flush();
    if (g_dump.exchange(false)) DumpCounters(sw);
    if (g_reload.exchange(false)) {
      if (sw.workers == 1) {
        Reload(sw.pipelines[0]->pipeline(), sw.flags, 1);
      } else {
        for (auto& r : sw.reloads) r = true;
      }
    }
    // A peer with no bell would never wake this switch: nap then.
    idle.After(work, [&] {
      return sw.workers != 1 || sw.pipelines[0]->Backlog() || !sw.bells.AllPresent();
    });
  }
}

// The final counters on stdout, as one JSON line.
void Report(Switch& sw) {
  uint64_t impaired = 0, overflow = 0;
  grid::sw::Counters total;
  for (auto& w : sw.pipelines) {
    w->Drain(&impaired, &overflow);
    total.Add(w->pipeline().counters());
  }
  std::printf(
      "{\"switch\":\"%s\",\"lcores\":%u,\"impaired_drops\":%llu,\"queue_drops\":%llu,"
      "\"capacity_gbps\":%g,\"counters\":%s}\n",
      sw.config.name.c_str(), sw.workers, static_cast<unsigned long long>(impaired),
      static_cast<unsigned long long>(overflow), sw.config.capacity_gbps * sw.workers,
      grid::sw::CountersToJson(total).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (grid::tools::WantsSwitchUsage(argc, argv)) {
    std::printf("%s", grid::tools::kSwitchUsage);
    return 0;
  }
  // Ports over kernel UDP sockets need no DPDK at all.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--udp-port=", 0) == 0) {
      return grid::tools::RunUdpSwitch(argc, argv);
    }
  }
  Switch sw;
  Init(argc, argv, sw);
  StartPorts(sw);
  LaunchShards(sw);
  grid::tools::InstallSignals();
  std::fprintf(stderr, "grid-switch: %s, %u ports, %u pipeline lcore(s), running\n",
               sw.config.name.c_str(), sw.ports, sw.workers);
  MainLoop(sw);
  rte_eal_mp_wait_lcore();
  Report(sw);
  // Exit without closing the ports: DPDK 22.11's memif driver can fault in
  // its interrupt thread while ports close after peers went away, which
  // kills (or, under ASan, hangs) the switch at the very end. The kernel
  // closes the sockets and frees the memory; the peers see the disconnect.
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(0);
}
