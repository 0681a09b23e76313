#include "sim/sweep.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "util/random.h"

namespace grid::sim {

namespace {

// A time within the horizon, to the nanosecond.
absl::Duration Within(util::Random& rng, absl::Duration horizon) {
  return absl::Nanoseconds(static_cast<int64_t>(
      rng.Uniform(0, 1) * static_cast<double>(absl::ToInt64Nanoseconds(horizon))));
}

std::string Pick(util::Random& rng, const std::vector<std::string>& names) {
  return names[rng.Below(static_cast<uint32_t>(names.size()))];
}

}  // namespace

FaultSchedule RandomFaultSchedule(const topology::Topology& topology, const Targets& targets,
                                  uint64_t seed) {
  util::Random rng(util::Mix(seed, 0xfa17));
  FaultSchedule f;
  f.links.seed = seed;
  // Each kind of link fault in about half the schedules, up to a few percent.
  if (rng.Uniform() < 0.5) f.links.loss = 0.05 * rng.Uniform();
  if (rng.Uniform() < 0.5) f.links.duplicate = 0.03 * rng.Uniform();
  if (rng.Uniform() < 0.5) f.links.reorder = 0.05 * rng.Uniform();
  std::vector<std::string> nodes = targets.aggregators;
  nodes.push_back(targets.root);
  if (rng.Uniform() < 0.3) {
    // A link of an aggregation switch or of the root goes down, and comes
    // back after a while, or never.
    const std::string a = Pick(rng, nodes);
    const auto node = topology.Find(a);
    const auto adj = topology.neighbors(*node);
    const std::string b =
        topology.node(adj[rng.Below(static_cast<uint32_t>(adj.size()))].node).name;
    FaultEvent down;
    down.kind = FaultEvent::Kind::kLinkDown;
    down.at = Within(rng, targets.horizon);
    down.a = a;
    down.b = b;
    f.events.push_back(down);
    if (rng.Uniform() < 0.8) {
      FaultEvent up = down;
      up.kind = FaultEvent::Kind::kLinkUp;
      up.at = down.at + Within(rng, 2 * targets.horizon);
      f.events.push_back(up);
    }
  }
  if (!targets.aggregators.empty() && rng.Uniform() < 0.3) {
    FaultEvent e;
    e.kind = FaultEvent::Kind::kSwitchRestart;
    e.at = Within(rng, targets.horizon);
    e.a = Pick(rng, targets.aggregators);
    f.events.push_back(e);
  }
  if (rng.Uniform() < 0.2) {
    FaultEvent e;
    e.kind = FaultEvent::Kind::kRootRestart;
    e.at = Within(rng, targets.horizon);
    f.events.push_back(e);
  }
  if (targets.ranks > 0 && rng.Uniform() < 0.3) {
    // One draw per statement: the order of a call's arguments is the
    // compiler's, and a schedule must not depend on it.
    const int rank = static_cast<int>(rng.Below(static_cast<uint32_t>(targets.ranks)));
    f.slow.emplace_back(rank, Within(rng, targets.horizon));
  }
  return f;
}

std::vector<std::string> Violations(const Outcome& out, absl::Duration timeout) {
  std::vector<std::string> v;
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    const RankOutcome& o = out.ranks[r];
    if (!o.ended) {
      v.push_back(absl::StrFormat("rank %d hung", r));
    } else if (o.status.ok() && !o.exact) {
      v.push_back(absl::StrFormat("rank %d ended OK with a wrong sum", r));
    } else if (!o.status.ok() && o.elapsed > 2 * timeout) {
      v.push_back(absl::StrFormat("rank %d failed after %s, beyond twice its timeout: %s", r,
                                  absl::FormatDuration(o.elapsed), o.status.message()));
    } else if (!o.status.ok() && o.status.message().empty()) {
      v.push_back(absl::StrFormat("rank %d failed without a message", r));
    }
  }
  return v;
}

std::string ReplayCommand(const Scenario& s) {
  return absl::StrFormat(
      "grid-ns3 --topology='%s' --planners=%s --workers=%d --elements=%d --type=%s --seed=%d "
      "--frame=%d --slots=%d --atp=%s --timeout=%s --faults='%s'",
      s.topology, s.planner, s.workers, s.elements,
      s.type == DataType::kInt32 ? "int32" : "float32", s.seed, s.frame_elements, s.slots,
      s.planner_options.atp_best_effort ? "best-effort" : "reserve",
      absl::FormatDuration(s.engine.timeout), s.faults.ToSpec());
}

}  // namespace grid::sim
