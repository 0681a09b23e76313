// grid-controller: plans a job and publishes what every component runs with,
// into a rendezvous store (docs/worker.md, "Bootstrap"):
//   grid/plan                 the plan (grid-plan/1)
//   grid/switch/<name>        each switch's table file (grid-switch/1)
//   grid/root                 the root's config (grid-root/1)
//   grid/worker/<rank>        each worker's config (grid-worker/1)
// With --udp-base-port (kernel UDP) or --memif-dir (DPDK memif), the fabric
// is emulated on one host:
//   grid/transport/<rank>, grid/root-transport   transport specs
//   grid/switch-ports/<name>  grid-switch's arguments but --config, one per
//                             line (--udp-port flags, or EAL arguments)
// With --serve=PORT it hosts the store over TCP and keeps running (until
// SIGINT/SIGTERM); with --store=file:DIR it writes and exits.
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/store.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "tools/flags.h"

namespace {

constexpr char kUsage[] =
    "usage: grid-controller --topology=SPEC|FILE --workers=N (--store=file:DIR | --serve=PORT)\n"
    "                       [--planner=grid] [--root=HOST] [--seed=1] [--job-id=1] [--token=N]\n"
    "                       [--slots=256] [--elements=64] [--udp-base-port=P] [--host=127.0.0.1]\n"
    "                       [--memif-dir=DIR [--eal-memory-mb=128]]\n"
    "                       [--link-impairment=loss=P,dup=P,reorder=P] [--link-gbps=G]\n"
    "Plans the job and publishes the switch tables, the root's and every worker's config.\n";

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const tools::Flags flags("grid-controller", argc, argv,
                           {"topology", "workers", "store", "serve", "planner", "root", "seed",
                            "job-id", "token", "slots", "elements", "udp-base-port", "host",
                            "link-impairment", "memif-dir", "eal-memory-mb", "link-gbps"},
                           kUsage);
  auto topo = topology::LoadTopology(flags.Required("topology"));
  if (!topo.ok()) flags.Fail(std::string(topo.status().message()));
  const int workers = static_cast<int>(flags.Int("workers", 0, 1, 65535));
  if (!flags.Get("workers")) flags.Fail("--workers is required");
  auto job = planner::MakeJob(*topo, workers, flags.Get("root"),
                              static_cast<uint64_t>(flags.Int("seed", 1, 0, 1ll << 40)));
  if (!job.ok()) flags.Fail(std::string(job.status().message()));
  auto created = planner::PlannerRegistry::WithBuiltins().Create(flags.String("planner", "grid"));
  if (!created.ok()) flags.Fail(std::string(created.status().message()));
  auto plan = (*created)->Plan(*topo, *job);
  if (!plan.ok()) flags.Fail(std::string(plan.status().message()));

  control::JobParams params;
  params.job_id = static_cast<uint16_t>(flags.Int("job-id", 1, 0, 65535));
  params.token = static_cast<uint32_t>(flags.Int("token", 0x6a1d, 0, 0xffffffffll));
  params.slots = static_cast<uint32_t>(flags.Int("slots", 256, 1, 65536));
  params.elements =
      static_cast<uint16_t>(flags.Int("elements", wire::kDefaultElements, 1, wire::kMaxElements));
  auto switches = control::BuildSwitchConfigs(*topo, *plan, params);
  if (!switches.ok()) flags.Fail(std::string(switches.status().message()));
  auto worker_configs = control::BuildWorkerConfigs(*topo, *plan, params);
  if (!worker_configs.ok()) flags.Fail(std::string(worker_configs.status().message()));
  auto root = control::BuildRootConfig(*topo, *plan, params);
  if (!root.ok()) flags.Fail(std::string(root.status().message()));

  std::unique_ptr<StoreServer> server;
  std::string store_spec;
  if (auto port = flags.Get("serve")) {
    auto s = ServeTcpStore(static_cast<int>(flags.Int("serve", 0, 0, 65535)));
    if (!s.ok()) flags.Fail(std::string(s.status().message()));
    server = *std::move(s);
    store_spec = absl::StrFormat("tcp:127.0.0.1:%d", server->port());
  } else {
    store_spec = flags.Required("store");
  }
  auto store = OpenStore(store_spec);
  if (!store.ok()) flags.Fail(std::string(store.status().message()));
  // Emulated links: faults on every direction (hosts through their transport
  // spec, switches through --impair on every port), and a rate limit at
  // every switch port (so at the fabric's links and the root's ingress).
  const std::string impair = flags.String("link-impairment", "");
  std::string switch_impair = impair;
  if (auto gbps = flags.Get("link-gbps")) {
    double g = 0;
    if (!absl::SimpleAtod(*gbps, &g) || g <= 0) flags.Fail("--link-gbps: expected a rate > 0");
    switch_impair += (switch_impair.empty() ? "gbps=" : ",gbps=") + *gbps;
  }
  // The emulated fabric's keys go in first: a rank that finds its config
  // (published last, by PublishJob) finds its transport too.
  std::vector<std::pair<std::string, std::string>> emulation;
  auto put = [&](const std::string& key, const std::string& value) {
    emulation.emplace_back(key, value);
  };

  if (flags.Get("udp-base-port")) {
    // Link i of the topology is two UDP sockets, one per direction's arc.
    const int base = static_cast<int>(flags.Int("udp-base-port", 0, 1024, 65535));
    const std::string host = flags.String("host", "127.0.0.1");
    if (base + 2 * static_cast<int>(topo->links().size()) > 65535) {
      flags.Fail("--udp-base-port: the topology's links need ports beyond 65535");
    }
    auto end = [&](topology::NodeId node, size_t port) {
      // The socket at `node` for its port-th link is base + the arc out of
      // `node`; the neighbour's is base + the reverse arc.
      const topology::ArcId arc = topo->neighbors(node)[port].arc;
      return std::pair{base + arc, base + topology::Topology::Reverse(arc)};
    };
    for (const auto& [node, c] : *switches) {
      std::string lines;
      for (size_t p = 0; p < topo->neighbors(node).size(); ++p) {
        const auto [own, peer] = end(node, p);
        lines += absl::StrFormat("--udp-port=%s:%d@%s:%d\n", host, own, host, peer);
        if (!switch_impair.empty()) {
          lines += absl::StrFormat("--impair=%d:%s\n", p, switch_impair);
        }
      }
      put("grid/switch-ports/" + c.name, lines);
    }
    auto link_spec = [&](topology::NodeId host_node) {
      const auto [own, peer] = end(host_node, 0);
      return absl::StrFormat("udp-link:bind=%s:%d,peer=%s:%d%s%s,seed=%d", host, own, host, peer,
                             impair.empty() ? "" : ",", impair, own);
    };
    for (const control::WorkerConfig& w : *worker_configs) {
      put(absl::StrFormat("grid/transport/%d", w.rank), link_spec(w.node));
    }
    put("grid/root-transport", link_spec(root->node));
  }
  if (auto dir = flags.Get("memif-dir")) {
    // One memif socket per link, DIR/link<i>.sock. A host is always the
    // client; between switches, the lower node id serves.
    const int memory = static_cast<int>(flags.Int("eal-memory-mb", 128, 32, 65536));
    auto eal = [&](const std::string& prefix) {
      return std::vector<std::string>{"--no-huge",
                                      "--no-pci",
                                      "-m",
                                      std::to_string(memory),
                                      "--no-shconf",
                                      "--no-telemetry",
                                      "--log-level=error",
                                      "--lcores=0@(0-1)",
                                      "--file-prefix=" + prefix};
    };
    auto vdev = [&](topology::NodeId node, size_t port, int index) {
      const topology::Adjacent& adj = topo->neighbors(node)[port];
      const bool serves =
          topo->node(node).is_switch() && (!topo->node(adj.node).is_switch() || node < adj.node);
      return absl::StrFormat(
          "--vdev=net_memif%d,role=%s,id=0,socket=%s/link%d.sock,socket-abstract=no", index,
          serves ? "server" : "client", *dir, adj.arc / 2);
    };
    for (const auto& [node, c] : *switches) {
      std::string lines;
      for (const std::string& a : eal(absl::StrFormat("gs%d-%s", params.job_id, c.name))) {
        lines += a + "\n";
      }
      for (size_t p = 0; p < topo->neighbors(node).size(); ++p) {
        lines += vdev(node, p, static_cast<int>(p)) + "\n";
      }
      lines += "--\n";
      for (size_t p = 0; !switch_impair.empty() && p < topo->neighbors(node).size(); ++p) {
        lines += absl::StrFormat("--impair=%d:%s\n", p, switch_impair);
      }
      put("grid/switch-ports/" + c.name, lines);
    }
    auto host_spec = [&](topology::NodeId host_node, const std::string& prefix) {
      std::string spec = "dpdk:";
      for (const std::string& a : eal(prefix)) spec += a + " ";
      spec += vdev(host_node, 0, 0);
      if (!impair.empty()) {
        spec += " --";
        for (absl::string_view kv : absl::StrSplit(impair, ',')) spec += " " + std::string(kv);
        spec += absl::StrFormat(" seed=%d", host_node + 1);
      }
      return spec;
    };
    for (const control::WorkerConfig& w : *worker_configs) {
      put(absl::StrFormat("grid/transport/%d", w.rank),
          host_spec(w.node, absl::StrFormat("gw%d-%d", params.job_id, w.rank)));
    }
    put("grid/root-transport", host_spec(root->node, absl::StrFormat("gr%d", params.job_id)));
  }
  for (const auto& [key, value] : emulation) {
    if (absl::Status s = (*store)->Set(key, value); !s.ok()) flags.Fail(std::string(s.message()));
  }
  if (absl::Status s = control::PublishJob(*topo, *plan, params, **store); !s.ok()) {
    flags.Fail(std::string(s.message()));
  }
  std::printf("grid-controller: %s planned %d workers, %zu switches, root %s; published to %s\n",
              plan->planner.c_str(), workers, switches->size(), topo->node(root->node).name.c_str(),
              store_spec.c_str());
  std::fflush(stdout);
  if (server) {
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}
