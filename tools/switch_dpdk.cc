// grid-switch on DPDK ports (any PMD: memif, af_packet, ring, tap, real
// NICs): port i of the tables is DPDK port i. The runtime is the library's
// (sw::SwitchRuntime); this file moves mbufs between it and the ports.
//
// With one lcore, it receives, runs the pipeline and transmits. With more
// (-l/--lcores), the main lcore receives on every queue and hands each GRID
// packet to the lane (a pipeline lcore) that owns its slot, so all
// contributions to a slot meet in one pipeline; each lane transmits on its
// own queue, the one a rank's lane for those slots reads (docs/switch.md,
// "Lanes").
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/switch_flags.h"
#include "tools/switch_idle.h"
#include "tools/switch_mbuf.h"
#include "tools/switch_metrics.h"
#include "tools/switch_trace.h"
#include "transport/dpdk.h"
#include "util/tsan.h"

namespace grid::tools {
namespace {

using sw::RuntimeTunables;
using Runtime = sw::SwitchRuntime<MbufOps>;

// One lane: a runtime and its transmit queue on every port.
struct Lane {
  std::unique_ptr<Runtime> runtime;
  uint16_t tx_queue = 0;
  const transport::MemifBells* bells = nullptr;  // the single-lcore switch's peers
  size_t Flush() {
    return runtime->Flush(SteadyNs(), [&](uint16_t port, absl::Span<rte_mbuf*> frames) -> size_t {
      for (rte_mbuf* m : frames) util::TsanRelease(m);  // the PMD frees them
      const uint16_t sent =
          rte_eth_tx_burst(port, tx_queue, frames.data(), static_cast<uint16_t>(frames.size()));
      if (sent != 0 && bells != nullptr) {
        if (transport::PeerBell* peer = bells->peer(port)) peer->Ring(sent);
      }
      return sent;
    });
  }
};

// What a lane lcore runs with (several lcores only).
struct LaneCore {
  Lane* lane;
  rte_ring* ring;
  const SwitchFlags* flags;
  unsigned shares;
  std::atomic<bool> reload{false};
  // SIGUSR1 handshake: main sets 1; the lcore copies its counters into
  // `snapshot` and sets 2, so main never reads counters a lcore is writing.
  std::atomic<int> dump{0};
  sw::Counters snapshot;
};

// A lane lcore's loop: packets from its ring, through its runtime, out.
int LaneLoop(void* arg) {
  LaneCore& s = *static_cast<LaneCore*>(arg);
  rte_mbuf* bufs[RuntimeTunables::kBurst];
  IdleBackoff idle(s.flags->idle_us, nullptr);
  while (!g_stop) {
    const unsigned n = rte_ring_dequeue_burst(s.ring, reinterpret_cast<void**>(bufs),
                                              RuntimeTunables::kBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) {
      rte_mbuf* m = Taken(bufs[i]);
      s.lane->runtime->Handle(m, m->port);
    }
    const size_t sent = s.lane->Flush();
    if (s.reload.exchange(false)) Reload(s.lane->runtime->pipeline(), *s.flags, s.shares);
    if (s.dump.load(std::memory_order_acquire) == 1) {
      s.snapshot = s.lane->runtime->pipeline().counters();
      s.dump.store(2, std::memory_order_release);
    }
    idle.After(n + sent, [] { return true; });
  }
  return 0;
}

// What the main lcore runs: the ports, the lanes, and the lane cores.
struct Switch {
  SwitchFlags flags;
  sw::SwitchConfig config;
  uint16_t ports = 0;
  unsigned lanes = 1;
  rte_mempool* pool = nullptr;
  std::vector<Lane> lane;
  std::vector<std::unique_ptr<LaneCore>> cores;
  std::vector<std::string> eal_args;  // before rte_eal_init permutes argv
  transport::MemifBells bells;
  std::unique_ptr<SwitchMetrics> metrics;                               // --metrics
  std::unique_ptr<SwitchTrace> trace = SwitchTrace::FromEnvironment();  // GRID_TRACE
};

// The EAL, the flags after its arguments, the tables, and one lane per pipeline lcore.
void Init(int argc, char** argv, Switch& sw) {
  // A memif client cannot connect before its server's socket exists, and the
  // processes of a fabric start in any order.
  if (absl::Status s = transport::WaitForMemifServers(argc, argv, absl::Seconds(60)); !s.ok()) {
    Fail(std::string(s.message()), 1);
  }
  sw.eal_args.assign(argv, argv + argc);
  const int eal = rte_eal_init(argc, argv);
  if (eal < 0) Fail(std::string("EAL initialisation failed: ") + rte_strerror(rte_errno), 1);
  sw.flags = ParseSwitchFlags(argc - eal, argv + eal);
  sw.lanes = rte_lcore_count() > 1 ? rte_lcore_count() - 1 : 1;
  sw.config = LoadConfig(sw.flags, sw.lanes);
  sw.ports = sw.config.num_ports;
  // rte_eal_init succeeds even when a --vdev failed: count the ports.
  if (rte_eth_dev_count_avail() != sw.ports) {
    Fail("the table file has " + std::to_string(sw.ports) + " ports but DPDK has " +
         std::to_string(rte_eth_dev_count_avail()) + " (check the --vdev/-a arguments)");
  }
}

// The mbuf pool, the ports, and the lanes with their share of each rate.
void StartPorts(Switch& sw) {
  constexpr unsigned kMbufsPerLane = 8191;
  sw.pool =
      rte_pktmbuf_pool_create("grid_switch", kMbufsPerLane * sw.lanes, 256, 0,
                              transport::GridMbufDataRoom(), static_cast<int>(rte_socket_id()));
  if (sw.pool == nullptr) Fail(std::string("mbuf pool: ") + rte_strerror(rte_errno), 1);
  const std::vector<sw::PortShaping> shaping = PortShapings(sw.flags, sw.ports, sw.lanes);
  // A transmit and a receive queue per lane on every port (the main lcore polls them all).
  for (uint16_t p = 0; p < sw.ports; ++p) {
    absl::Status s = transport::StartQueues(p, static_cast<uint16_t>(sw.lanes), sw.pool);
    if (!s.ok()) Fail(std::string(s.message()), 1);
  }
  sw.lane.resize(sw.lanes);
  for (unsigned w = 0; w < sw.lanes; ++w) {
    auto pipeline = sw::Pipeline::Create(sw.config);
    if (!pipeline.ok()) Fail(std::string(pipeline.status().message()));
    sw.lane[w].runtime =
        std::make_unique<Runtime>(*std::move(pipeline), shaping, 0x5eed + w, MbufOps{sw.pool});
    sw.lane[w].tx_queue = static_cast<uint16_t>(w);
    if (sw.trace) sw.trace->Attach(*sw.lane[w].runtime);
  }
  std::vector<char*> args;
  for (std::string& a : sw.eal_args) args.push_back(a.data());
  std::vector<uint16_t> ports(sw.ports);
  for (uint16_t p = 0; p < sw.ports; ++p) ports[p] = p;
  // A client port toward a switch above: that switch may have its socket
  // but not yet a started port. Our own clients (hosts, switches below)
  // connect to our started ports by themselves.
  if (absl::Status s = transport::AwaitMemifClientLinks(static_cast<int>(args.size()), args.data(),
                                                        ports, absl::Seconds(60));
      !s.ok()) {
    Fail(std::string(s.message()), 1);
  }
  // Doorbells on the single-lcore switch; lane cores keep napping.
  if (sw.lanes == 1) {
    sw.bells = transport::OpenMemifBells(static_cast<int>(args.size()), args.data(), ports);
    sw.lane[0].bells = &sw.bells;
  }
}

// With several lcores: a ring and a loop per lane.
void LaunchLaneCores(Switch& sw) {
  if (sw.lanes == 1) return;
  constexpr unsigned kRingSize = 4096;
  unsigned w = 0;
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) {
    const std::string name = "grid_lane" + std::to_string(w);
    rte_ring* ring = rte_ring_create(name.c_str(), kRingSize, static_cast<int>(rte_socket_id()),
                                     RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ring == nullptr) Fail("cannot create ring " + name, 1);
    auto core = std::make_unique<LaneCore>();
    core->lane = &sw.lane[w];
    core->ring = ring;
    core->flags = &sw.flags;
    core->shares = sw.lanes;
    rte_eal_remote_launch(LaneLoop, core.get(), lcore);
    sw.cores.push_back(std::move(core));
    ++w;
  }
}

// Every lane's counters, summed (SIGUSR1, --metrics).
sw::Counters GatherCounters(Switch& sw) {
  sw::Counters total;
  if (sw.lanes == 1) {
    total = sw.lane[0].runtime->pipeline().counters();
  } else {
    for (auto& s : sw.cores) s->dump.store(1, std::memory_order_release);
    const int64_t deadline = SteadyNs() + 1'000'000'000;
    for (auto& s : sw.cores) {
      while (s->dump.load(std::memory_order_acquire) != 2 && SteadyNs() < deadline) sched_yield();
      if (s->dump.exchange(0) == 2) total.Add(s->snapshot);
    }
  }
  return total;
}

// Every receive queue of every port, into the one lane or the lane cores'
// rings: a peer with several queue pairs (a rank's `dpdk: ... --
// queues=N`) sends on all of them.
size_t ReceiveAll(Switch& sw) {
  rte_mbuf* rx[RuntimeTunables::kBurst];
  size_t received = 0;
  for (uint16_t p = 0; p < sw.ports; ++p) {
    for (uint16_t q = 0; q < sw.lanes; ++q) {
      const uint16_t n = rte_eth_rx_burst(p, q, rx, RuntimeTunables::kBurst);
      received += n;
      for (uint16_t i = 0; i < n; ++i) {
        Taken(rx[i]);
        rx[i]->port = p;
        if (sw.lanes == 1) {
          sw.lane[0].runtime->Handle(rx[i], p);
          continue;
        }
        util::TsanRelease(rx[i]);
        const auto lane = sw::OwnerLane(
            {rte_pktmbuf_mtod(rx[i], const uint8_t*), rte_pktmbuf_data_len(rx[i])}, sw.lanes);
        if (rte_ring_enqueue(sw.cores[lane]->ring, rx[i]) != 0) {
          FreeMbuf(rx[i]);  // the lane core is overrun: a queue drop
        }
      }
    }
  }
  return received;
}

// The main lcore: receive, run the one lane or feed the lane cores; signals
// between bursts.
void MainLoop(Switch& sw) {
  IdleBackoff idle(sw.flags.idle_us, sw.bells.own.get());
  while (!g_stop) {
    const size_t received = ReceiveAll(sw);
    size_t work = received;
    if (sw.lanes == 1) work += sw.lane[0].Flush();
    // Input drained: wake the hosts that were sent less than they wait for.
    if (received == 0) sw.bells.Flush();
    if (g_dump.exchange(false))
      std::fprintf(stderr, "%s\n", CountersToJson(GatherCounters(sw)).c_str());
    if (sw.metrics && sw.metrics->Due(SteadyNs())) sw.metrics->Post(SteadyNs(), GatherCounters(sw));
    if (g_reload.exchange(false)) {
      if (sw.lanes == 1) Reload(sw.lane[0].runtime->pipeline(), sw.flags, 1);
      for (auto& s : sw.cores) s->reload = true;  // lane cores reload their own
    }
    // A peer with no bell would never wake this switch: nap then.
    idle.After(work, [&] {
      return sw.lanes != 1 || sw.lane[0].runtime->Backlog() || !sw.bells.AllPresent();
    });
  }
}

// The final counters on stdout, as one JSON line.
void Report(Switch& sw) {
  sw::PortDrops drops;
  sw::Counters total;
  for (Lane& l : sw.lane) {
    drops.Add(l.runtime->drops());
    l.runtime->Drain();
    total.Add(l.runtime->pipeline().counters());
  }
  std::printf("%s\n", sw::RuntimeReportJson(sw.config.name, sw.lanes, drops,
                                            sw.config.capacity_gbps * sw.lanes, total)
                          .c_str());
  if (sw.trace) sw.trace->Write(sw.config);
}

}  // namespace

const bool kHaveDpdk = true;

int RunDpdkSwitch(int argc, char** argv) {
  Switch sw;
  Init(argc, argv, sw);
  StartPorts(sw);
  LaunchLaneCores(sw);
  InstallSignals();
  std::fprintf(stderr, "grid-switch: %s, %u ports, %u lane(s), running\n", sw.config.name.c_str(),
               sw.ports, sw.lanes);
  std::vector<const sw::Pipeline*> pipelines;  // live until the process exits
  for (const Lane& l : sw.lane) pipelines.push_back(&l.runtime->pipeline());
  const auto reporter = StartReporter(sw.flags, pipelines);
  sw.metrics = SwitchMetrics::Start(sw.flags, sw.config.name, pipelines);
  MainLoop(sw);
  if (reporter) reporter->Stop();
  rte_eal_mp_wait_lcore();
  Report(sw);
  // Exit without closing the ports: DPDK 22.11's memif driver can fault in its interrupt thread
  // as ports close after peers left, killing (or, under ASan, hanging) the switch at the end.
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(0);
}

}  // namespace grid::tools
