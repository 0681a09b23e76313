// grid-ns3: GRID packet by packet in ns-3, running the library's own worker
// engine, root engine and switch runtime (docs/simulation.md). For each
// planner it plans the job, runs one allreduce on every rank, checks every
// element, and prints the communication time and each rank's rate next to
// the flow model's prediction for the same plan, then the run's digest.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grid/topology.h"
#include "grid/wire.h"
#include "sim/ring.h"
#include "sim/scenario.h"
#include "sim/sweep.h"
#include "tools/flags.h"
#include "tools/progress.h"

namespace {

using namespace grid;

constexpr char kUsage[] =
    "usage: grid-ns3 [--topology=SPEC|FILE] [--planners=grid,grid-paths,atp,switchml,geryon]\n"
    "                [--workers=N] [--elements=N] [--type=int32|float32] [--seed=S]\n"
    "                [--frame=ELEMENTS] [--slots=P] [--atp=best-effort|reserve]\n"
    "                [--links=FILE] [--mark=FRAMES]\n"
    "                [--faults=SPEC] [--timeout=DURATION] [--csv=FILE] [--ring] [--sweep=N]\n"
    "Runs one allreduce of --elements per rank on every planner's plan, packet by packet\n"
    "in ns-3 with the library's engines and switch pipeline, and prints per planner the\n"
    "communication time, the mean rank rate beside the flow model's (links and paper\n"
    "models), resends and drops, whether every element was right, and the run's digest\n"
    "(the same inputs give the same digest). --frame and --slots fix the job's frame\n"
    "width and pool (default: chosen as grid-controller chooses them); --atp as\n"
    "grid-controller's (best effort by default). --links writes every link direction's\n"
    "bytes and utilization per planner (CSV). --mark sets the switches' CONGESTION\n"
    "threshold (queued frames; default the tables', 64).\n"
    "--ring: then a ring allreduce of the same bytes on the same hosts over ns-3's TCP\n"
    "  (switches as IP routers), with GRID's time against it (faults do not apply).\n"
    "Faults (docs/simulation.md): loss=P,dup=P,reorder=P,seed=N;down=A-B@T;up=A-B@T;\n"
    "  restart=SWITCH@T;root@T;slow=RANK@T  (T like 2ms, 150us).\n"
    "--sweep=N [--verbose]: instead, N random fault schedules (seeds --seed, --seed+1, ...) over "
    "the\n"
    "  planners in turn, each judged: every rank exact, or an error within twice its\n"
    "  timeout; a seed that breaks this is printed with the command that replays it.\n"
    "Exit status: 0 every rank exact (a sweep: no broken promise), 1 otherwise, 2 usage.\n";

double Mean(const std::vector<sim::RankOutcome>& ranks, double sim::RankOutcome::*field) {
  double sum = 0;
  for (const sim::RankOutcome& r : ranks) sum += r.*field;
  return ranks.empty() ? 0 : sum / static_cast<double>(ranks.size());
}

double Min(const std::vector<sim::RankOutcome>& ranks, double sim::RankOutcome::*field) {
  double m = ranks.empty() ? 0 : ranks[0].*field;
  for (const sim::RankOutcome& r : ranks) m = std::min(m, r.*field);
  return m;
}

// One planner's line (and CSV row): the ranks' mean rate beside the flow
// model's mean and minimum. Every rank of an allreduce waits for the
// slowest contributor of each chunk, so the packet-level rates sit near the
// model's minimum, not its mean (docs/simulation.md, "Reading the rates").
void Report(const sim::Scenario& sc, const sim::Outcome& out, std::FILE* csv) {
  const uint64_t resends = out.resends();
  const double gbps = Mean(out.ranks, &sim::RankOutcome::gbps);
  const double links = Mean(out.ranks, &sim::RankOutcome::links_gbps);
  const double links_min = Min(out.ranks, &sim::RankOutcome::links_gbps);
  const double paper = Mean(out.ranks, &sim::RankOutcome::paper_gbps);
  const double paper_min = Min(out.ranks, &sim::RankOutcome::paper_gbps);
  const double ms = absl::ToDoubleMilliseconds(out.comm_time);
  std::printf("%-11s %10.3f %8.4g %8.4g %8.4g %8.4g %8llu %8llu %7.2f %6s %016llx\n",
              sc.planner.c_str(), ms, gbps, links, links_min, paper,
              static_cast<unsigned long long>(resends),
              static_cast<unsigned long long>(out.switch_drops), out.max_link_utilization,
              out.all_exact() ? "yes" : "NO", static_cast<unsigned long long>(out.digest));
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    const sim::RankOutcome& o = out.ranks[r];
    if (!o.status.ok() || !o.exact) {
      std::printf("  rank %zu: %s\n", r,
                  o.status.ok() ? "wrong result" : std::string(o.status.message()).c_str());
    }
  }
  uint64_t marked = 0, timeouts = 0;
  absl::Duration rtt = absl::ZeroDuration();
  for (const sim::RankOutcome& r : out.ranks) {
    marked += r.stats.congestion_signals;
    timeouts += r.stats.timeouts;
    rtt = std::max(rtt, r.stats.min_rtt);
  }
  std::printf(
      "  aggregators: %s; pool %u x %u elements; longest min RTT %s; %llu marked, %llu "
      "timeouts; %llu events in %.2f s\n",
      absl::StrJoin(out.aggregators, " ").c_str(), out.slots, out.elements,
      absl::FormatDuration(rtt).c_str(), static_cast<unsigned long long>(marked),
      static_cast<unsigned long long>(timeouts), static_cast<unsigned long long>(out.events),
      out.wall_seconds);
  for (const auto& [reason, n] : out.drops_by_reason) {
    std::printf("  dropped as %s: %llu\n", reason.c_str(), static_cast<unsigned long long>(n));
  }
  if (csv != nullptr) {
    std::fprintf(csv,
                 "%s,%d,%zu,%llu,%.6f,%.4f,%.4f,%.4f,%.4f,%.4f,%llu,%llu,%llu,%.4f,%d,%016llx,%llu,"
                 "%.3f,%.6f,%.0f\n",
                 sc.planner.c_str(), static_cast<int>(out.ranks.size()), sc.elements,
                 static_cast<unsigned long long>(sc.seed), ms, gbps, links, links_min, paper,
                 paper_min, static_cast<unsigned long long>(resends),
                 static_cast<unsigned long long>(out.switch_drops),
                 static_cast<unsigned long long>(out.fabric.lost), out.max_link_utilization,
                 out.all_exact() ? 1 : 0, static_cast<unsigned long long>(out.digest),
                 static_cast<unsigned long long>(out.events), out.wall_seconds,
                 absl::ToDoubleMilliseconds(out.slowest_rank()), out.bytes_per_rank());
  }
  std::fflush(stdout);
}

// --ring: the host ring on the same hosts and bytes, and each planner's
// communication time against it.
void RingReport(const tools::Flags& flags, const sim::Scenario& base,
                const std::vector<topology::NodeId>& hosts,
                const std::vector<std::pair<std::string, absl::Duration>>& grid_times,
                std::FILE* csv) {
  auto topology = topology::LoadTopology(base.topology);
  if (!topology.ok()) flags.Exit(topology.status());
  const uint64_t bytes = static_cast<uint64_t>(base.elements) * 4;
  auto ring = sim::RunRing(*topology, hosts, bytes, base.seed);
  if (!ring.ok()) flags.Exit(ring.status());
  std::printf("%-11s %10.3f %8.2f   (TCP, %llu bytes per rank; %llu events in %.2f s)\n", "ring",
              absl::ToDoubleMilliseconds(ring->comm_time), ring->gbps,
              static_cast<unsigned long long>(ring->bytes_per_rank),
              static_cast<unsigned long long>(ring->events), ring->wall_seconds);
  for (const auto& [name, time] : grid_times) {
    std::printf("  %s: %.3fx the ring's time\n", name.c_str(),
                absl::FDivDuration(time, ring->comm_time));
  }
  if (csv != nullptr) {
    std::fprintf(csv, "ring,%d,%zu,%llu,%.6f,%.4f,,,,,,,,,1,,%llu,%.3f,%.6f,%llu\n",
                 static_cast<int>(hosts.size()), base.elements,
                 static_cast<unsigned long long>(base.seed),
                 absl::ToDoubleMilliseconds(ring->comm_time), ring->gbps,
                 static_cast<unsigned long long>(ring->events), ring->wall_seconds,
                 absl::ToDoubleMilliseconds(ring->comm_time),
                 static_cast<unsigned long long>(ring->bytes_per_rank));
  }
}

// --sweep: a clean run per planner gives the faults' targets, then each
// seed's schedule runs and is judged.
int Sweep(const tools::Flags& flags, const sim::Scenario& base,
          const std::vector<std::string>& planners, int count, bool verbose) {
  auto topology = topology::LoadTopology(base.topology);
  if (!topology.ok()) flags.Exit(topology.status());
  std::vector<sim::Targets> targets;
  for (const std::string& name : planners) {
    sim::Scenario sc = base;
    sc.planner = name;
    sc.faults = {};
    auto clean = sim::RunScenario(sc);
    if (!clean.ok()) flags.Exit(clean.status());
    targets.push_back({clean->aggregators, clean->root_host, static_cast<int>(clean->ranks.size()),
                       clean->comm_time});
  }
  int exact = 0, failed = 0, broken = 0;
  tools::Progress progress("grid-ns3 sweep", count);
  for (int i = 0; i < count; ++i) {
    progress.Update(i);
    sim::Scenario sc = base;
    const size_t p = static_cast<size_t>(i) % planners.size();
    sc.planner = planners[p];
    sc.faults =
        sim::RandomFaultSchedule(*topology, targets[p], base.seed + static_cast<uint64_t>(i));
    auto out = sim::RunScenario(sc);
    if (!out.ok()) flags.Exit(out.status());
    const std::vector<std::string> violations = sim::Violations(*out, sc.engine.timeout);
    if (!violations.empty() || verbose) progress.Done();  // lines of its own follow
    if (!violations.empty()) {
      ++broken;
      std::printf("seed %llu (%s): %s\n  replay: %s\n",
                  static_cast<unsigned long long>(base.seed + static_cast<uint64_t>(i)),
                  sc.planner.c_str(), absl::StrJoin(violations, "; ").c_str(),
                  sim::ReplayCommand(sc).c_str());
    } else if (out->all_exact()) {
      ++exact;
    } else {
      ++failed;
    }
    if (verbose) {
      std::string first_error = "every rank exact";
      for (const sim::RankOutcome& r : out->ranks) {
        if (!r.status.ok()) {
          first_error = std::string(r.status.message());
          break;
        }
      }
      std::printf("seed %llu %s %.3f ms, %llu resends, %llu lost, %llu queue drops: %s\n  %s\n",
                  static_cast<unsigned long long>(base.seed + static_cast<uint64_t>(i)),
                  sc.planner.c_str(), absl::ToDoubleMilliseconds(out->comm_time),
                  static_cast<unsigned long long>(out->resends()),
                  static_cast<unsigned long long>(out->fabric.lost),
                  static_cast<unsigned long long>(out->fabric.switch_queue_drops),
                  first_error.c_str(), sc.faults.ToSpec().c_str());
    }
  }
  progress.Done();
  std::printf(
      "sweep: %d schedules, %d every rank exact, %d ended with errors in time, %d broke the "
      "promise\n",
      count, exact, failed, broken);
  return broken == 0 ? 0 : 1;
}

// The scenario the flags describe, every planner's but for `planner`.
sim::Scenario ScenarioFromFlags(const tools::Flags& flags) {
  sim::Scenario base;
  base.topology = flags.String("topology", "testbed");
  base.workers = static_cast<int>(flags.Int("workers", 8, 1, 4096));
  base.elements = static_cast<size_t>(flags.Int("elements", 65536, 1, int64_t{1} << 30));
  base.seed = static_cast<uint64_t>(flags.Int("seed", 1, 0, INT64_MAX));
  base.frame_elements = static_cast<uint16_t>(flags.Int("frame", 0, 0, wire::kMaxElements));
  base.slots = static_cast<uint32_t>(flags.Int("slots", 0, 0, wire::kMaxSlots));
  base.congestion_threshold = static_cast<uint32_t>(flags.Int("mark", 0, 0, 1 << 30));
  const std::string atp = flags.String("atp", "best-effort");
  if (atp != "best-effort" && atp != "reserve") flags.Fail("--atp: best-effort or reserve");
  base.planner_options.atp_best_effort = atp == "best-effort";
  const std::string type = flags.String("type", "int32");
  if (type != "int32" && type != "float32") flags.Fail("--type must be int32 or float32");
  base.type = type == "int32" ? DataType::kInt32 : DataType::kFloat32;
  if (auto t = flags.Get("timeout")) {
    if (!absl::ParseDuration(*t, &base.engine.timeout) ||
        base.engine.timeout <= absl::ZeroDuration()) {
      flags.Fail("--timeout=" + *t + ": expected a duration like 2s or 500ms");
    }
  }
  if (auto spec = flags.Get("faults")) {
    auto faults = sim::ParseFaultSchedule(*spec);
    if (!faults.ok()) flags.Exit(faults.status());
    base.faults = *faults;
  }
  return base;
}

// The CSV file flag `key` names, its header written; null without the flag.
std::FILE* OpenCsv(const tools::Flags& flags, const std::string& key, const char* header) {
  auto path = flags.Get(key);
  if (!path) return nullptr;
  std::FILE* f = std::fopen(path->c_str(), "w");
  if (f == nullptr) flags.Error("cannot write " + *path);
  std::fprintf(f, "%s\n", header);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const tools::Flags flags(
      "grid-ns3", argc, argv,
      {"topology", "planners", "workers", "elements", "type", "seed", "faults", "timeout", "csv",
       "sweep", "verbose", "ring", "frame", "slots", "atp", "links", "mark"},
      kUsage);
  const sim::Scenario base = ScenarioFromFlags(flags);
  const std::vector<std::string> planners =
      absl::StrSplit(flags.String("planners", "grid,grid-paths,atp,switchml,geryon"), ',');
  if (flags.Get("sweep")) {
    return Sweep(flags, base, planners, static_cast<int>(flags.Int("sweep", 200, 1, 1000000)),
                 flags.Get("verbose").has_value());
  }
  std::FILE* csv =
      OpenCsv(flags, "csv",
              "planner,workers,elements,seed,comm_ms,mean_gbps,links_gbps,"
              "links_min_gbps,paper_gbps,paper_min_gbps,resends,switch_drops,lost,"
              "max_link_util,exact,digest,events,wall_s,slowest_rank_ms,bytes_per_rank");
  std::FILE* links = OpenCsv(flags, "links", "planner,from,to,gbps,bytes,utilization");
  bool all_exact = true;
  std::vector<topology::NodeId> hosts;
  std::vector<std::pair<std::string, absl::Duration>> grid_times;
  for (const std::string& name : planners) {
    sim::Scenario sc = base;
    sc.planner = name;
    auto out = sim::RunScenario(sc);
    if (!out.ok()) flags.Exit(out.status());
    if (&name == &planners.front()) {
      std::printf("%-11s %10s %8s %8s %8s %8s %8s %8s %7s %6s %16s\n", "planner", "comm_ms", "gbps",
                  "links", "(min)", "paper", "resends", "drops", "maxlink", "exact", "digest");
    }
    Report(sc, *out, csv);
    for (const sim::Outcome::LinkLoad& l : out->links) {
      if (links == nullptr) break;
      std::fprintf(links, "%s,%s,%s,%g,%llu,%.4f\n", name.c_str(), l.from.c_str(), l.to.c_str(),
                   l.gbps, static_cast<unsigned long long>(l.bytes), l.utilization);
    }
    all_exact = all_exact && out->all_exact();
    hosts = out->hosts;
    grid_times.emplace_back(name, out->comm_time);
  }
  if (flags.Get("ring")) RingReport(flags, base, hosts, grid_times, csv);
  if (csv != nullptr) std::fclose(csv);
  if (links != nullptr) std::fclose(links);
  return all_exact ? 0 : 1;
}
