// grid-controller: plans a job and publishes what every component runs with,
// into a rendezvous store (docs/worker.md, "Bootstrap"):
//   grid/plan                 the plan (grid-plan/1)
//   grid/switch/<name>        each switch's table file (grid-switch/1)
//   grid/root                 the root's config (grid-root/1)
//   grid/worker/<rank>        each worker's config (grid-worker/1)
// An emulated fabric on one host adds the transports and wiring
// (tools/emulation.h): --udp-base-port (kernel UDP links), --memif-dir (DPDK
// memif) or --netns (network namespaces and veth pairs). With --switch=bmv2
// the switches are simple_switch running p4/v1model/grid.p4, and the
// controller loads their tables through simple_switch_CLI. With --serve=PORT
// it hosts the store over TCP and keeps running (until SIGINT/SIGTERM); with
// --store=file:DIR it writes and exits.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/store.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "store/wait.h"
#include "tools/emulation.h"
#include "tools/flags.h"
#include "tools/p4runtime_load.h"
#include "transport/faults.h"

namespace {

using namespace grid;

constexpr char kUsage[] =
    "usage: grid-controller --topology=SPEC|FILE --workers=N (--store=file:DIR | --serve=PORT)\n"
    "                       [--planner=grid] [--root=HOST] [--seed=1] [--job-id=1] [--token=N]\n"
    "                       [--slots=auto|N] [--elements=auto|N] [--mtu=BYTES] [--rtt-us=US]\n"
    "                       [--slot-base=0] [--label-base=0]\n"
    "                       [--switch=grid|bmv2|p4runtime:ADDR,... --p4info=F --p4-json=F\n"
    "                        [--election-id=1] [--p4runtime-timeout-s=10]]\n"
    "                       [--udp-base-port=P [--host=127.0.0.1]]\n"
    "                       [--memif-dir=DIR [--eal-memory-mb=128] [--memif-queues=1]]\n"
    "                       [--netns=PREFIX [--host-transport=udp|af_packet]]\n"
    "                       [--link-impairment=loss=P,dup=P,reorder=P]\n"
    "                       [--link-gbps=G | --emulation-scale=S] [--atp=best-effort|reserve]\n"
    "                       [--bmv2-thrift-base=9090] [--bmv2-cli=simple_switch_CLI]\n"
    "                       [--bmv2-wait-s=60]\n"
    "       grid-controller --delete-job=J[,J...] --switch=p4runtime:ADDR,... --p4info=F\n"
    "                       --p4-json=F [--election-id=1] [--p4runtime-timeout-s=10]\n"
    "Plans the job and publishes the switch tables, the root's and every worker's config.\n"
    "An emulated fabric is shaped by --link-gbps (every switch port alike) or by\n"
    "--emulation-scale (each port at its link's rate in the topology times S, and each\n"
    "switch's aggregation capacity C_s times S). --atp=best-effort (the default) runs ATP\n"
    "as ATP behaves: switches pass on what they have no capacity for (docs/switch.md).\n"
    "--elements=auto (the default) takes the widest frame that the paths' MTU (--mtu; an\n"
    "emulated fabric's own, else 1500) and the switches (--switch: P4 takes 64) carry, a\n"
    "multiple of 32; --slots=auto (the default) sizes the pool for it and for the largest\n"
    "bandwidth-delay product of the ranks (the planned rate times the round trip: --rtt-us,\n"
    "measured, else the topology's link latencies), within the switches' memory and,\n"
    "for P4, 511 slots (docs/worker.md, \"Frame width and pool\"). --elements=64\n"
    "--slots=256 are the paper's Tofino frames.\n"
    "--switch=p4runtime takes HOST:PORT[/DEVICE] per switch in node order, or NAME=HOST:PORT.\n"
    "--delete-job takes jobs off P4Runtime switches and clears their registers by committing\n"
    "the program again, refused where a switch holds a job not named (docs/deploy.md).\n"
    "--memif-queues=N gives every memif link N queue pairs: each grid-switch runs N pipeline\n"
    "lcores, and each host's transport opens N, one per progress thread (GRID_THREADS=N,\n"
    "grid-root --threads=N) when the host has that many.\n";

constexpr char kFlags[] =
    "topology workers store serve planner root seed job-id token slots elements mtu rtt-us "
    "udp-base-port host link-impairment memif-dir eal-memory-mb memif-queues link-gbps switch "
    "netns host-transport bmv2-thrift-base bmv2-cli bmv2-wait-s slot-base label-base "
    "emulation-scale atp p4info p4-json election-id p4runtime-timeout-s delete-job";

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

// The planned job and everything built from it.
struct Job {
  topology::Topology topology;
  planner::Plan plan;
  host_config::JobParams params;
  std::map<topology::NodeId, sw::SwitchConfig> switches;
  std::vector<host_config::WorkerConfig> workers;
  host_config::RootConfig root;
  uint64_t bdp_bytes = 0;  // the pool's bandwidth-delay product (control::PlanBdpBytes)
};

template <typename T>
T Check(absl::StatusOr<T> value, const tools::Flags& flags) {
  if (!value.ok()) flags.Exit(value.status());
  return *std::move(value);
}

// The smallest MTU on the job's paths: --mtu, else the emulated links'
// (veths: 1500; memif and loopback UDP carry kMaxElements frames), else
// Ethernet's 1500.
size_t PathMtu(const tools::Flags& flags) {
  if (flags.Get("mtu")) return static_cast<size_t>(flags.Int("mtu", 1500, 68, 65535));
  if (flags.Get("netns")) return 1500;
  if (flags.Get("memif-dir") || flags.Get("udp-base-port")) return 65535;
  return 1500;
}

// The job as the flags ask for it; control::PlanJob chooses what they
// leave to it ("auto" frames and pool, a random token).
control::JobRequest Request(const tools::Flags& flags) {
  control::JobRequest r;
  if (!flags.Get("workers")) flags.Fail("--workers is required");
  r.workers = static_cast<int>(flags.Int("workers", 0, 1, 65535));
  r.root = flags.String("root", "");
  r.seed = static_cast<uint64_t>(flags.Int("seed", 1, 0, 1ll << 40));
  r.planner = flags.String("planner", "grid");
  const std::string atp = flags.String("atp", "best-effort");
  if (atp != "best-effort" && atp != "reserve") flags.Fail("--atp: best-effort or reserve");
  r.planner_options.atp_best_effort = atp == "best-effort";
  r.params.job_id = static_cast<uint16_t>(flags.Int("job-id", 1, 0, 65535));
  r.params.token = static_cast<uint32_t>(flags.Int("token", 0, 1, 0xffffffffll));
  // Another job on the same switches takes other ranges (docs/security.md).
  r.params.slot_base = static_cast<uint32_t>(flags.Int("slot-base", 0, 0, 1 << 24));
  r.params.label_base = static_cast<uint16_t>(flags.Int("label-base", 0, 0, 65534));
  r.params.elements = flags.String("elements", "auto") == "auto"
                          ? 0
                          : static_cast<uint16_t>(flags.Int("elements", 0, 1, wire::kMaxElements));
  r.params.slots = flags.String("slots", "auto") == "auto"
                       ? 0
                       : static_cast<uint32_t>(flags.Int("slots", 0, 1, 65536));
  r.path_mtu = PathMtu(flags);
  const std::string kind = flags.String("switch", "grid");
  r.switches = kind == "bmv2" || kind.rfind("p4runtime:", 0) == 0 ? control::SwitchKind::kP4
                                                                  : control::SwitchKind::kGrid;
  r.rtt = absl::Microseconds(flags.Int("rtt-us", 0, 0, 10'000'000));
  return r;
}

Job PlanJob(const tools::Flags& flags) {
  Job j;
  // Before planning, which can take a while: ranks waiting on a file store
  // see it being published (store::AwaitKey).
  if (auto spec = flags.Get("store"); spec && !flags.Get("serve")) {
    auto store = Check(OpenStore(*spec), flags);
    if (absl::Status s = store::MarkPlanning(*store, "grid-controller"); !s.ok()) flags.Exit(s);
  }
  j.topology = Check(topology::LoadTopology(flags.Required("topology")), flags);
  control::PlannedJob planned = Check(control::PlanJob(j.topology, Request(flags)), flags);
  j.plan = std::move(planned.plan);
  j.params = planned.params;
  j.bdp_bytes = planned.bdp_bytes;
  j.switches = Check(control::BuildSwitchConfigs(j.topology, j.plan, j.params), flags);
  j.workers = Check(control::BuildWorkerConfigs(j.topology, j.plan, j.params), flags);
  j.root = Check(control::BuildRootConfig(j.topology, j.plan, j.params), flags);
  return j;
}

// The emulated fabric's keys, if one was asked for.
tools::Keys Emulation(const tools::Flags& flags, const Job& j, const tools::EmulationOptions& o) {
  const tools::Fabric fabric{j.topology, j.switches, j.workers, j.root, j.params.job_id};
  if (o.kind == tools::SwitchKind::kBmv2 && !flags.Get("netns")) {
    flags.Fail("--switch=bmv2 runs on a --netns fabric");
  }
  const int fabrics = (flags.Get("udp-base-port") ? 1 : 0) + (flags.Get("memif-dir") ? 1 : 0) +
                      (flags.Get("netns") ? 1 : 0);
  if (fabrics > 1) flags.Fail("--udp-base-port, --memif-dir and --netns: one fabric, not several");
  if (flags.Get("udp-base-port")) {
    const int base = static_cast<int>(flags.Int("udp-base-port", 0, 1024, 65535));
    if (base + 2 * static_cast<int>(j.topology.links().size()) > 65535) {
      flags.Fail("--udp-base-port: the topology's links need ports beyond 65535");
    }
    return tools::UdpEmulation(fabric, o, base, flags.String("host", "127.0.0.1"));
  }
  if (auto dir = flags.Get("memif-dir")) return tools::MemifEmulation(fabric, o, *dir);
  if (auto prefix = flags.Get("netns")) {
    if (prefix->empty() || prefix->size() > 6) flags.Fail("--netns: a prefix of 1 to 6 characters");
    const std::string transport = flags.String("host-transport", "udp");
    if (transport != "udp" && transport != "af_packet") {
      flags.Fail("--host-transport: udp or af_packet");
    }
    return tools::NetnsEmulation(fabric, o, *prefix, transport);
  }
  return {};
}

// The store the job goes to (served here with --serve), with the emulated
// fabric's keys first: a rank that finds its config (published last, by
// PublishJob) finds its transport too.
struct Published {
  std::unique_ptr<StoreServer> server;
  std::string store_spec;
};

Published Publish(const tools::Flags& flags, const Job& job, const tools::Keys& emulation) {
  Published p;
  p.store_spec = flags.String("store", "");
  if (flags.Get("serve")) {
    p.server = Check(ServeTcpStore(static_cast<int>(flags.Int("serve", 0, 0, 65535))), flags);
    p.store_spec = absl::StrFormat("tcp:127.0.0.1:%d", p.server->port());
  } else if (p.store_spec.empty()) {
    flags.Fail("--store or --serve is required");
  }
  auto store = Check(OpenStore(p.store_spec), flags);
  for (const auto& [key, value] : emulation) {
    if (absl::Status s = store->Set(key, value); !s.ok()) flags.Exit(s);
  }
  if (absl::Status s = control::PublishJob(job.topology, job.plan, job.params, *store); !s.ok()) {
    flags.Exit(s);
  }
  return p;
}

// What the flow model predicts for this very plan, under both models, so a
// measured rate can be set against it (scripts/testbed.sh).
void PrintPredictions(const Job& job, const std::string& store_spec) {
  std::printf("grid-controller: %s planned %zu workers, %zu switches, root %s; published to %s\n",
              job.plan.planner.c_str(), job.workers.size(), job.switches.size(),
              job.topology.node(job.root.node).name.c_str(), store_spec.c_str());
  std::printf(
      "grid-controller: frames of %d elements, a pool of %u slots (bandwidth-delay product %llu "
      "bytes)\n",
      job.params.elements, job.params.slots, static_cast<unsigned long long>(job.bdp_bytes));
  for (const planner::Model model : {planner::Model::kLinks, planner::Model::kPaper}) {
    if (auto e = planner::Evaluate(job.topology, job.plan, model); e.ok()) {
      std::printf("grid-controller: model %s predicts a min rate of %.6f Gbps per worker\n",
                  planner::ModelName(model), e->min_gbps);
    }
  }
  std::fflush(stdout);
}

void LoadIntoBmv2(const tools::Flags& flags, const Job& job,
                  const tools::EmulationOptions& options) {
  const tools::Fabric fabric{job.topology, job.switches, job.workers, job.root, job.params.job_id};
  if (absl::Status s =
          tools::LoadBmv2(fabric, options, flags.String("bmv2-cli", "simple_switch_CLI"),
                          absl::Seconds(flags.Int("bmv2-wait-s", 60, 1, 3600)));
      !s.ok()) {
    flags.Exit(s);
  }
  std::printf("grid-controller: tables loaded into %zu BMv2 switches\n", job.switches.size());
  std::fflush(stdout);
}

tools::P4RuntimeOptions P4RuntimeOptionsFrom(const tools::Flags& flags,
                                             const tools::EmulationOptions& options) {
  return {options.p4runtime, flags.Required("p4info"), flags.Required("p4-json"),
          static_cast<uint64_t>(flags.Int("election-id", 1, 1, 1ll << 62)),
          absl::Seconds(flags.Int("p4runtime-timeout-s", 10, 1, 3600))};
}

void Print(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::printf("grid-controller: %s\n", line.c_str());
  std::fflush(stdout);
}

// --delete-job=J[,J...]: those jobs off the P4Runtime switches of
// --switch, their registers cleared; no planning, no store.
int DeleteP4RuntimeJobs(const tools::Flags& flags) {
  const tools::EmulationOptions options = tools::EmulationOptionsFrom(flags);
  if (options.kind != tools::SwitchKind::kP4Runtime) {
    flags.Fail("--delete-job takes the switches as --switch=p4runtime:ADDR[,ADDR...]");
  }
  std::set<uint32_t> jobs;
  for (absl::string_view j : absl::StrSplit(flags.String("delete-job", ""), ',')) {
    uint32_t id = 0;
    if (!absl::SimpleAtoi(j, &id) || id == 0 || id > 65535) {
      flags.Fail("--delete-job: job ids from 1 to 65535, separated by commas");
    }
    jobs.insert(id);
  }
  Print(Check(tools::DeleteP4RuntimeJobs(jobs, P4RuntimeOptionsFrom(flags, options)), flags));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const tools::Flags flags("grid-controller", argc, argv, absl::StrSplit(kFlags, ' '), kUsage);
  if (flags.Get("delete-job")) return DeleteP4RuntimeJobs(flags);
  const Job job = PlanJob(flags);
  const tools::EmulationOptions options = tools::EmulationOptionsFrom(flags);
  const Published published = Publish(flags, job, Emulation(flags, job, options));
  PrintPredictions(job, published.store_spec);
  if (options.kind == tools::SwitchKind::kBmv2) LoadIntoBmv2(flags, job, options);
  if (options.kind == tools::SwitchKind::kP4Runtime) {
    const tools::P4RuntimeOptions o = P4RuntimeOptionsFrom(flags, options);
    Print(Check(tools::LoadP4Runtime(job.switches, job.params.job_id, o), flags));
  }
  if (published.server) {
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}
