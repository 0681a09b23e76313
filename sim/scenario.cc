#include "sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grid/control.h"
#include "grid/numerics.h"
#include "grid/topology.h"
#include "ns3/simulator.h"
#include "sim/nodes.h"
#include "util/random.h"

namespace grid::sim {

namespace {

// Debian's Abseil has its own string_view.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

ns3::Time ToNs3(absl::Duration d) { return ns3::NanoSeconds(absl::ToInt64Nanoseconds(d)); }

// "A@T": the name before '@' and the time after it.
absl::Status ParseAt(std::string_view item, std::string_view what, std::string& name,
                     absl::Duration& at) {
  const size_t sign = item.rfind('@');
  if (sign == std::string_view::npos || !absl::ParseDuration(Absl(item.substr(sign + 1)), &at) ||
      at < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fault schedule: %s \"%s\": expected NAME@TIME (a time like 2ms or 150us)", what, item));
  }
  name = std::string(item.substr(0, sign));
  return absl::OkStatus();
}

absl::StatusOr<FaultEvent> ParseLinkEvent(std::string_view value, FaultEvent::Kind kind,
                                          std::string_view key) {
  FaultEvent e;
  e.kind = kind;
  std::string ends;
  if (absl::Status s = ParseAt(value, key, ends, e.at); !s.ok()) return s;
  const std::vector<std::string> ab = absl::StrSplit(ends, '-');
  if (ab.size() != 2 || ab[0].empty() || ab[1].empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fault schedule: %s=%s: expected A-B@TIME (a link's two ends)", key, value));
  }
  e.a = ab[0];
  e.b = ab[1];
  return e;
}

std::vector<int32_t> Ints(uint64_t seed, int rank, size_t count) {
  util::Random rng(util::Mix(seed, static_cast<uint64_t>(rank)));
  std::vector<int32_t> v(count);
  // Sums of up to 2^11 ranks stay within int32.
  for (int32_t& x : v) x = static_cast<int32_t>(rng.Below(1u << 20)) - (1 << 19);
  return v;
}

std::vector<float> Floats(uint64_t seed, int rank, size_t count) {
  util::Random rng(util::Mix(seed, static_cast<uint64_t>(rank)));
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>(rng.Uniform(-1, 1));
  return v;
}

// The inputs of every rank, as int32 or float32 words.
struct Data {
  std::vector<std::vector<int32_t>> ints;
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<uint32_t>> out;  // each rank's result, either type's bits
  const void* In(int r) const {
    return ints.empty() ? static_cast<const void*>(floats[r].data()) : ints[r].data();
  }
};

// Which ranks' results are right: int32 exact, float32 within the scheme's
// bound for each chunk (numerics.md).
std::vector<bool> Check(const Data& d, int world, uint16_t elements) {
  std::vector<bool> exact(world, true);
  const size_t count = d.out[0].size();
  if (!d.ints.empty()) {
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < world; ++r) want += d.ints[r][i];
      for (int r = 0; r < world; ++r) {
        if (static_cast<int32_t>(d.out[r][i]) != want) exact[r] = false;
      }
    }
    return exact;
  }
  for (size_t block = 0; block < count; block += elements) {
    const size_t n = std::min<size_t>(elements, count - block);
    uint8_t e = 0;
    for (int r = 0; r < world; ++r) {
      e = std::max(e, numerics::BlockExponent({d.floats[r].data() + block, n}).value_or(0));
    }
    for (size_t i = block; i < block + n; ++i) {
      double sum = 0, magnitude = 0;
      for (int r = 0; r < world; ++r) {
        sum += d.floats[r][i];
        magnitude += std::fabs(d.floats[r][i]);
      }
      const double bound = numerics::SumErrorBound(e, world, world, magnitude);
      for (int r = 0; r < world; ++r) {
        float got;
        std::memcpy(&got, &d.out[r][i], sizeof got);
        if (!(std::fabs(got - sum) <= bound)) exact[r] = false;
      }
    }
  }
  return exact;
}

}  // namespace

std::string FaultSchedule::ToSpec() const {
  std::vector<std::string> parts;
  // %.17g: the spec reads back to the same doubles, so a replay is exact.
  parts.push_back(absl::StrFormat("loss=%.17g,dup=%.17g,reorder=%.17g,seed=%d", links.loss,
                                  links.duplicate, links.reorder, links.seed));
  for (const FaultEvent& e : events) {
    const std::string at = absl::FormatDuration(e.at);
    switch (e.kind) {
      case FaultEvent::Kind::kLinkDown:
        parts.push_back(absl::StrFormat("down=%s-%s@%s", e.a, e.b, at));
        break;
      case FaultEvent::Kind::kLinkUp:
        parts.push_back(absl::StrFormat("up=%s-%s@%s", e.a, e.b, at));
        break;
      case FaultEvent::Kind::kSwitchRestart:
        parts.push_back(absl::StrFormat("restart=%s@%s", e.a, at));
        break;
      case FaultEvent::Kind::kRootRestart:
        parts.push_back(absl::StrFormat("root@%s", at));
        break;
    }
  }
  for (const auto& [rank, late] : slow) {
    parts.push_back(absl::StrFormat("slow=%d@%s", rank, absl::FormatDuration(late)));
  }
  return absl::StrJoin(parts, ";");
}

absl::StatusOr<FaultSchedule> ParseFaultSchedule(std::string_view spec) {
  FaultSchedule f;
  for (absl::string_view piece : absl::StrSplit(Absl(spec), ';', absl::SkipEmpty())) {
    const std::string_view part(piece.data(), piece.size());
    const size_t eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : part.substr(eq + 1);
    if (key == "down" || key == "up") {
      auto e = ParseLinkEvent(
          value, key == "down" ? FaultEvent::Kind::kLinkDown : FaultEvent::Kind::kLinkUp, key);
      if (!e.ok()) return e.status();
      f.events.push_back(*e);
    } else if (key == "restart") {
      FaultEvent e;
      e.kind = FaultEvent::Kind::kSwitchRestart;
      if (absl::Status s = ParseAt(value, key, e.a, e.at); !s.ok()) return s;
      f.events.push_back(e);
    } else if (key.rfind("root@", 0) == 0) {
      FaultEvent e;
      e.kind = FaultEvent::Kind::kRootRestart;
      if (absl::Status s = ParseAt(part, "root", e.a, e.at); !s.ok()) return s;
      e.a.clear();
      f.events.push_back(e);
    } else if (key == "slow") {
      std::string rank;
      absl::Duration late;
      if (absl::Status s = ParseAt(value, key, rank, late); !s.ok()) return s;
      int r = 0;
      if (!absl::SimpleAtoi(rank, &r) || r < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("fault schedule: slow=%s: expected RANK@TIME", value));
      }
      f.slow.emplace_back(r, late);
    } else {
      auto links = transport::ParseLinkFaults(part);
      if (!links.ok()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "fault schedule: \"%s\": %s (parts: loss=,dup=,reorder=,seed=; down=A-B@T; "
            "up=A-B@T; restart=S@T; root@T; slow=R@T)",
            part, links.status().message()));
      }
      f.links = *links;
    }
  }
  return f;
}

uint64_t Outcome::resends() const {
  uint64_t n = 0;
  for (const RankOutcome& r : ranks) n += r.stats.retransmissions;
  return n;
}

absl::Duration Outcome::slowest_rank() const {
  absl::Duration d = absl::ZeroDuration();
  for (const RankOutcome& r : ranks) d = std::max(d, r.elapsed);
  return d;
}

double Outcome::bytes_per_rank() const {
  double bytes = 0;
  for (const RankOutcome& r : ranks) bytes += static_cast<double>(r.stats.bytes_sent);
  return ranks.empty() ? 0 : bytes / static_cast<double>(ranks.size());
}

bool Outcome::all_exact() const {
  return std::all_of(ranks.begin(), ranks.end(),
                     [](const RankOutcome& r) { return r.status.ok() && r.exact; });
}

namespace {

// A scenario's job as grid-controller would plan it, with its tables and
// the flow model's rates for the plan.
struct Planned {
  topology::Topology topology;
  std::map<topology::NodeId, sw::SwitchConfig> switches;
  std::vector<host_config::WorkerConfig> workers;
  host_config::RootConfig root;
  planner::Evaluation links, paper;
  std::vector<std::string> aggregators;
};

absl::StatusOr<Planned> PlanScenario(const Scenario& sc) {
  Planned p;
  auto topology = topology::LoadTopology(sc.topology);
  if (!topology.ok()) return topology.status();
  p.topology = *std::move(topology);
  control::JobRequest request;
  request.workers = sc.workers;
  request.seed = sc.seed;
  request.planner = sc.planner;
  request.planner_options = sc.planner_options;
  request.params.job_id = 1;
  // 0: chosen as grid-controller chooses them by default (--elements=auto
  // --slots=auto): from the MTU, the switches' width and memory, and the
  // bandwidth-delay product of the topology's latencies.
  request.params.elements = sc.frame_elements;
  request.params.slots = sc.slots;
  request.params.token = static_cast<uint32_t>(util::Mix(sc.seed, 0x70ce)) | 1;
  auto job = control::PlanJob(p.topology, request);
  if (!job.ok()) return job.status();
  auto switches = control::BuildSwitchConfigs(p.topology, job->plan, job->params);
  if (!switches.ok()) return switches.status();
  auto workers = control::BuildWorkerConfigs(p.topology, job->plan, job->params);
  if (!workers.ok()) return workers.status();
  auto root = control::BuildRootConfig(p.topology, job->plan, job->params);
  if (!root.ok()) return root.status();
  auto links = planner::Evaluate(p.topology, job->plan, planner::Model::kLinks);
  if (!links.ok()) return links.status();
  auto paper = planner::Evaluate(p.topology, job->plan, planner::Model::kPaper);
  if (!paper.ok()) return paper.status();
  p.switches = *std::move(switches);
  if (sc.congestion_threshold > 0) {
    for (auto& [node, config] : p.switches) config.congestion_threshold = sc.congestion_threshold;
  }
  p.workers = *std::move(workers);
  p.root = *std::move(root);
  p.links = *std::move(links);
  p.paper = *std::move(paper);
  for (const planner::Aggregator& a : planner::Aggregators(job->plan)) {
    p.aggregators.push_back(p.topology.node(a.node).name);
  }
  return p;
}

// Schedules the fault events; the error names a node the topology lacks,
// before anything is scheduled.
absl::Status ScheduleFaults(const FaultSchedule& faults, const topology::Topology& topology,
                            Fabric* fabric, SimRoot* root) {
  std::vector<std::pair<topology::NodeId, topology::NodeId>> ends;
  for (const FaultEvent& e : faults.events) {
    if (e.kind == FaultEvent::Kind::kRootRestart) {
      ends.emplace_back(topology::kNoNode, topology::kNoNode);
      continue;
    }
    auto a = topology.Find(e.a);
    auto b = e.b.empty() ? a : topology.Find(e.b);
    if (!a || !b) {
      return absl::InvalidArgumentError(
          absl::StrFormat("fault schedule: no node \"%s\" in the topology", !a ? e.a : e.b));
    }
    ends.emplace_back(*a, *b);
  }
  for (size_t i = 0; i < faults.events.size(); ++i) {
    const FaultEvent e = faults.events[i];
    const auto [a, b] = ends[i];
    ns3::Simulator::Schedule(ToNs3(e.at), [fabric, root, e, a = a, b = b] {
      switch (e.kind) {
        case FaultEvent::Kind::kLinkDown:
          fabric->SetLinkDown(a, b, true);
          break;
        case FaultEvent::Kind::kLinkUp:
          fabric->SetLinkDown(a, b, false);
          break;
        case FaultEvent::Kind::kSwitchRestart:
          (void)fabric->RestartSwitch(a);
          break;
        case FaultEvent::Kind::kRootRestart:
          root->Restart();
          break;
      }
    });
  }
  return absl::OkStatus();
}

// The fabric's side of the outcome: digest, drops, link utilization.
void CollectFabric(const Planned& p, const Fabric& fabric, Outcome& out) {
  out.digest = fabric.digest();
  out.fabric = fabric.stats();
  std::vector<uint64_t> drops(sw::kNumDrops, 0);
  for (const auto& [node, config] : p.switches) {
    auto c = fabric.SwitchCounters(node);
    if (!c.ok()) continue;
    for (int d = 0; d < sw::kNumDrops; ++d) drops[d] += c->drops[d];
  }
  for (int d = 0; d < sw::kNumDrops; ++d) {
    out.switch_drops += drops[d];
    if (drops[d] > 0) out.drops_by_reason.emplace_back(sw::DropName(d), drops[d]);
  }
  const double seconds = absl::ToDoubleSeconds(out.comm_time);
  for (topology::ArcId arc = 0; arc < p.topology.num_arcs() && seconds > 0; ++arc) {
    const uint64_t bytes = fabric.arc_bytes()[arc];
    const double utilization =
        static_cast<double>(bytes) * 8 / seconds / 1e9 / p.topology.ArcGbps(arc);
    out.max_link_utilization = std::max(out.max_link_utilization, utilization);
    if (bytes > 0) {
      out.links.push_back({p.topology.node(p.topology.ArcFrom(arc)).name,
                           p.topology.node(p.topology.ArcTo(arc)).name, p.topology.ArcGbps(arc),
                           bytes, utilization});
    }
  }
}

// The ranks' inputs, from the seed.
Data MakeData(const Scenario& sc, int world) {
  Data data;
  data.out.assign(world, std::vector<uint32_t>(sc.elements, 0));
  for (int r = 0; r < world; ++r) {
    if (sc.type == DataType::kInt32) {
      data.ints.push_back(Ints(sc.seed, r, sc.elements));
    } else {
      data.floats.push_back(Floats(sc.seed, r, sc.elements));
    }
  }
  return data;
}

}  // namespace

absl::StatusOr<Outcome> RunScenario(const Scenario& sc) {
  const absl::Time wall_start = absl::Now();  // wall time is reported, never used
  auto planned = PlanScenario(sc);
  if (!planned.ok()) return planned.status();
  const Planned& p = *planned;
  const int world = static_cast<int>(p.workers.size());
  std::vector<absl::Duration> late(world, absl::ZeroDuration());
  for (const auto& [r, d] : sc.faults.slow) {
    if (r >= world) {
      return absl::InvalidArgumentError(
          absl::StrFormat("fault schedule: slow=%d: the job has %d ranks", r, world));
    }
    late[r] = d;
  }
  Outcome out;
  out.aggregators = p.aggregators;
  out.root_host = p.topology.node(p.root.node).name;
  for (const host_config::WorkerConfig& w : p.workers) out.hosts.push_back(w.node);
  out.slots = p.workers[0].slots;
  out.elements = p.workers[0].elements;
  // ns-3's simulator is global: whatever this run leaves (events, nodes)
  // goes with it, on every return. Its events are never run after the
  // nodes they point to are gone, only deleted.
  struct Teardown {
    ~Teardown() { ns3::Simulator::Destroy(); }
  } teardown;
  auto fabric = Fabric::Create(p.topology, p.switches, sc.faults.links);
  if (!fabric.ok()) return fabric.status();
  auto root = SimRoot::Create(p.root, **fabric);
  if (!root.ok()) return root.status();
  std::vector<std::unique_ptr<SimRank>> ranks;
  for (const host_config::WorkerConfig& w : p.workers) {
    auto rank = SimRank::Create(w, sc.engine, **fabric);
    if (!rank.ok()) return rank.status();
    ranks.push_back(*std::move(rank));
  }
  if (absl::Status s = ScheduleFaults(sc.faults, p.topology, fabric->get(), root->get()); !s.ok()) {
    return s;
  }
  Data data = MakeData(sc, world);
  for (int r = 0; r < world; ++r) {
    ns3::Simulator::Schedule(ToNs3(late[r]), [&, r] {
      ranks[r]->Start(sc.type, data.In(r), data.out[r].data(), sc.elements);
    });
  }
  // Every rank ends, one way or the other, within its timeout after it
  // starts; twice that is a hang.
  ns3::Simulator::Stop(ToNs3(*std::max_element(late.begin(), late.end()) + 2 * sc.engine.timeout));
  ns3::Simulator::Run();

  const std::vector<bool> exact = Check(data, world, p.workers[0].elements);
  for (int r = 0; r < world; ++r) {
    RankOutcome o;
    o.ended = ranks[r]->done();
    o.status = o.ended ? ranks[r]->status()
                       : absl::UnavailableError(absl::StrFormat(
                             "rank %d never ended: a hang (stopped at twice its timeout)", r));
    o.elapsed = ranks[r]->elapsed();
    o.exact = o.status.ok() && exact[r];
    o.stats = ranks[r]->stats();
    const double seconds = absl::ToDoubleSeconds(o.elapsed);
    o.gbps = seconds > 0 ? static_cast<double>(o.stats.bytes_sent) * 8 / seconds / 1e9 : 0;
    o.links_gbps = p.links.worker_gbps[r];
    o.paper_gbps = p.paper.worker_gbps[r];
    out.comm_time = std::max(out.comm_time, late[r] + o.elapsed);
    out.ranks.push_back(std::move(o));
  }
  CollectFabric(p, **fabric, out);
  out.root = (*root)->stats();
  out.events = ns3::Simulator::GetEventCount();
  out.wall_seconds = absl::ToDoubleSeconds(absl::Now() - wall_start);
  return out;
}

}  // namespace grid::sim
