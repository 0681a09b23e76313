// grid-switch: the GRID switch pipeline on DPDK ports (any PMD: memif,
// af_packet, ring, tap, real NICs). Port i of the table-entry file is DPDK
// port i.
//
//   grid-switch [EAL arguments] -- --config=switch.json
//               [--impair=PORT:loss=P,dup=P,reorder=P,gbps=G]...
//               [--capacity-gbps=C] [--idle-us=50]
//
// With one lcore, it receives, runs the pipeline and transmits. With more
// (-l/--lcores), the main lcore receives and hands each GRID packet to the
// pipeline lcore that owns its (job, slot), so all contributions to a slot
// meet in one pipeline; each pipeline lcore transmits on its own queue.
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

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "grid/switch.h"
#include "switch_common.h"
#include "transport/dpdk.h"
#include "util/random.h"
#include "util/tsan.h"

namespace {

using grid::sw::Pipeline;
using grid::tools::Fail;
using grid::tools::Impairment;
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
         double capacity_gbps, uint64_t seed)
      : pipeline_(std::move(pipeline)), pool_(pool), tx_queue_(tx_queue), ports_(ports) {
    capacity_.Configure(capacity_gbps, 64 * 1024 * 8);
    for (uint16_t p = 0; p < ports_.size(); ++p) {
      ports_[p].faults = grid::tools::PortFaults(ports_[p].impairment, seed, p);
    }
  }

  Pipeline& pipeline() { return pipeline_; }

  // Runs one received frame through the pipeline and queues what it emits.
  void Handle(rte_mbuf* m, uint16_t in_port) {
    if (rte_pktmbuf_linearize(m) != 0) {
      FreeMbuf(m);
      return;
    }
    uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
    const uint32_t len = rte_pktmbuf_data_len(m);
    // The aggregation-capacity limit C_s: DATA this switch would aggregate.
    if (capacity_.limited() && len >= grid::wire::kPayloadOffset) {
      grid::wire::FrameView view;
      if (grid::wire::ParseFrame({data, len}, &view) == grid::wire::WireError::kOk &&
          view.header.type == grid::wire::MessageType::kData &&
          view.header.agg_node == pipeline_.config().node_id && !capacity_.Take(len * 8.0)) {
        ++capacity_drops_;
        FreeMbuf(m);
        return;
      }
    }
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
      for (uint16_t i = n; i-- > sent;) port.queue.push_front(tx[i]);  // retry later, in order
      sent_total += sent;
      pipeline_.SetQueueDepth(p, static_cast<uint32_t>(port.queue.size()));
    }
    return sent_total;
  }

  void Drain(uint64_t* impaired, uint64_t* overflow, uint64_t* capacity) {
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
    *capacity += capacity_drops_;
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
  TokenBucket capacity_;
  uint64_t capacity_drops_ = 0;
  grid::sw::Output out_;
};

// Which worker owns a frame: GRID packets by (job, slot), so every
// contribution to a slot meets in one pipeline; everything else worker 0.
unsigned Owner(const rte_mbuf* m, unsigned workers) {
  if (workers == 1 || rte_pktmbuf_data_len(m) < grid::wire::kPayloadOffset) return 0;
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  uint16_t dst_port, job, slot;
  std::memcpy(&dst_port, d + grid::wire::kUdpOffset + 2, 2);
  std::memcpy(&job, d + grid::wire::kGridOffset + offsetof(grid::wire::WireHeader, job_id), 2);
  std::memcpy(&slot, d + grid::wire::kGridOffset + offsetof(grid::wire::WireHeader, slot), 2);
  dst_port = rte_be_to_cpu_16(dst_port);
  if (dst_port < grid::wire::kUdpPortBase ||
      dst_port >= grid::wire::kUdpPortBase + grid::wire::kUdpPortCount) {
    return 0;
  }
  return (rte_be_to_cpu_16(job) * 7919u + rte_be_to_cpu_16(slot)) % workers;
}

struct Shard {
  Worker* worker;
  rte_ring* ring;
  std::atomic<bool>* reload;
  std::string config_path;
  // SIGUSR1 handshake: main sets 1; the lcore copies its counters into
  // `snapshot` and sets 2, so main never reads counters a lcore is writing.
  std::atomic<int>* dump;
  grid::sw::Counters* snapshot;
};

// A worker lcore's loop: packets from its ring, through its pipeline, out.
int WorkerLoop(void* arg) {
  Shard& s = *static_cast<Shard*>(arg);
  rte_mbuf* bufs[kBurst];
  int idle_rounds = 0;
  while (!g_stop) {
    const unsigned n =
        rte_ring_dequeue_burst(s.ring, reinterpret_cast<void**>(bufs), kBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) {
      rte_mbuf* m = Taken(bufs[i]);
      s.worker->Handle(m, m->port);
    }
    const size_t sent = s.worker->Flush();
    if (s.reload->exchange(false)) Reload(s.worker->pipeline(), s.config_path);
    if (s.dump->load(std::memory_order_acquire) == 1) {
      *s.snapshot = s.worker->pipeline().counters();
      s.dump->store(2, std::memory_order_release);
    }
    if (n == 0 && sent == 0 && ++idle_rounds > 64) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    } else if (n != 0) {
      idle_rounds = 0;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  // Ports over kernel UDP sockets need no DPDK at all.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--udp-port=", 0) == 0) {
      return grid::tools::RunUdpSwitch(argc, argv);
    }
  }
  // A memif client cannot connect before its server's socket exists, and the
  // processes of a fabric start in any order.
  if (absl::Status s = grid::transport::WaitForMemifServers(argc, argv, absl::Seconds(60));
      !s.ok()) {
    Fail(std::string(s.message()));
  }
  const int eal = rte_eal_init(argc, argv);
  if (eal < 0) Fail(std::string("EAL initialisation failed: ") + rte_strerror(rte_errno));
  argc -= eal;
  argv += eal;

  const grid::tools::SwitchFlags flags = grid::tools::ParseSwitchFlags(argc, argv);
  const std::string& config_path = flags.config_path;
  const double capacity_gbps = flags.capacity_gbps;
  const int idle_us = flags.idle_us;
  const auto& impairments = flags.impairments;
  const grid::sw::SwitchConfig config = LoadConfig(config_path);
  if (absl::Status st = grid::sw::ValidateConfig(config); !st.ok()) Fail(std::string(st.message()));
  const uint16_t ports = config.num_ports;
  // rte_eal_init succeeds even when a --vdev failed: count the ports.
  if (rte_eth_dev_count_avail() != ports) {
    Fail("the table file has " + std::to_string(ports) + " ports but DPDK has " +
         std::to_string(rte_eth_dev_count_avail()) + " (check the --vdev/-a arguments)");
  }
  // One lcore: it does everything. More: the main lcore receives, and every
  // other lcore runs a pipeline for its share of the slots.
  const unsigned workers = rte_lcore_count() > 1 ? rte_lcore_count() - 1 : 1;
  rte_mempool* pool =
      rte_pktmbuf_pool_create("grid_switch", 8191 * workers, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                              static_cast<int>(rte_socket_id()));
  if (pool == nullptr) Fail(std::string("mbuf pool: ") + rte_strerror(rte_errno));
  std::vector<Port> port_state(ports);
  for (const auto& [p, imp] : impairments) {
    if (p >= ports) Fail("--impair: port " + std::to_string(p) + " does not exist");
    port_state[p].impairment = imp;
    // Each worker gets its share of a rate-limited link.
    port_state[p].bucket.Configure(imp.gbps / workers, 64 * 1024 * 8);
  }
  for (uint16_t p = 0; p < ports; ++p) {
    // A transmit queue per pipeline lcore. As many receive queues, because
    // some PMDs (memif) pair them; only queue 0 is polled.
    rte_eth_conf conf{};
    const auto queues = static_cast<uint16_t>(workers);
    bool ok = rte_eth_dev_configure(p, queues, queues, &conf) >= 0;
    for (uint16_t q = 0; ok && q < queues; ++q) {
      ok = rte_eth_rx_queue_setup(p, q, 1024, rte_eth_dev_socket_id(p), nullptr, pool) >= 0 &&
           rte_eth_tx_queue_setup(p, q, 1024, rte_eth_dev_socket_id(p), nullptr) >= 0;
    }
    if (!ok || rte_eth_dev_start(p) < 0) {
      Fail("cannot start DPDK port " + std::to_string(p) + " with " + std::to_string(workers) +
           " transmit queues");
    }
    rte_eth_promiscuous_enable(p);
  }
  std::vector<std::unique_ptr<Worker>> pool_workers;
  for (unsigned w = 0; w < workers; ++w) {
    auto pipeline = Pipeline::Create(config);
    if (!pipeline.ok()) Fail(std::string(pipeline.status().message()));
    pool_workers.push_back(std::make_unique<Worker>(*std::move(pipeline), pool,
                                                    static_cast<uint16_t>(w), port_state,
                                                    capacity_gbps / workers, 0x5eed + w));
  }
  grid::tools::InstallSignals();
  std::fprintf(stderr, "grid-switch: %s, %u ports, %u pipeline lcore(s), running\n",
               config.name.c_str(), ports, workers);

  std::vector<Shard> shards(workers);
  std::vector<std::atomic<bool>> reloads(workers);
  std::vector<std::atomic<int>> dumps(workers);
  std::vector<grid::sw::Counters> snapshots(workers);
  if (workers > 1) {
    unsigned w = 0;
    unsigned lcore;
    RTE_LCORE_FOREACH_WORKER(lcore) {
      const std::string name = "grid_shard" + std::to_string(w);
      rte_ring* ring = rte_ring_create(name.c_str(), 4096, static_cast<int>(rte_socket_id()),
                                       RING_F_SP_ENQ | RING_F_SC_DEQ);
      if (ring == nullptr) Fail("cannot create ring " + name);
      shards[w] =
          Shard{pool_workers[w].get(), ring, &reloads[w], config_path, &dumps[w], &snapshots[w]};
      rte_eal_remote_launch(WorkerLoop, &shards[w], lcore);
      ++w;
    }
  }

  rte_mbuf* rx[kBurst];
  int idle_rounds = 0;
  while (!g_stop) {
    size_t work = 0;
    for (uint16_t p = 0; p < ports; ++p) {
      const uint16_t n = rte_eth_rx_burst(p, 0, rx, kBurst);
      work += n;
      for (uint16_t i = 0; i < n; ++i) {
        Taken(rx[i]);
        rx[i]->port = p;
        if (workers == 1) {
          pool_workers[0]->Handle(rx[i], p);
          continue;
        }
        grid::util::TsanRelease(rx[i]);
        if (rte_ring_enqueue(shards[Owner(rx[i], workers)].ring, rx[i]) != 0) {
          FreeMbuf(rx[i]);  // the shard is overrun: a queue drop
        }
      }
    }
    if (workers == 1) work += pool_workers[0]->Flush();
    if (g_dump.exchange(false)) {
      grid::sw::Counters total;
      if (workers == 1) {
        total = pool_workers[0]->pipeline().counters();
      } else {
        for (auto& d : dumps) d.store(1, std::memory_order_release);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        for (unsigned w = 0; w < workers; ++w) {
          while (dumps[w].load(std::memory_order_acquire) != 2 &&
                 std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
          }
          if (dumps[w].exchange(0) == 2) total.Add(snapshots[w]);
        }
      }
      std::fprintf(stderr, "%s\n", grid::sw::CountersToJson(total).c_str());
    }
    if (g_reload.exchange(false)) {
      if (workers == 1) {
        Reload(pool_workers[0]->pipeline(), config_path);
      } else {
        for (auto& r : reloads) r = true;
      }
    }
    // Yield when idle, so several switches and hosts can share two cores.
    if (work == 0 && ++idle_rounds > 64 && idle_us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    } else if (work != 0) {
      idle_rounds = 0;
    }
  }
  rte_eal_mp_wait_lcore();
  uint64_t impaired = 0, overflow = 0, capacity_drops = 0;
  grid::sw::Counters total;
  for (auto& w : pool_workers) {
    w->Drain(&impaired, &overflow, &capacity_drops);
    total.Add(w->pipeline().counters());
  }
  std::printf(
      "{\"switch\":\"%s\",\"lcores\":%u,\"impaired_drops\":%llu,\"queue_drops\":%llu,"
      "\"capacity_drops\":%llu,\"counters\":%s}\n",
      config.name.c_str(), workers, static_cast<unsigned long long>(impaired),
      static_cast<unsigned long long>(overflow), static_cast<unsigned long long>(capacity_drops),
      grid::sw::CountersToJson(total).c_str());
  // Exit without closing the ports: DPDK 22.11's memif driver can fault in
  // its interrupt thread while ports close after peers went away, which
  // kills (or, under ASan, hangs) the switch at the very end. The kernel
  // closes the sockets and frees the memory; the peers see the disconnect.
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(0);
}
