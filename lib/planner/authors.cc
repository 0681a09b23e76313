#include "planner/authors.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"
#include "util/random.h"

namespace grid::planner {

std::vector<double> AuthorsCapacities(const Topology& topology, uint64_t seed) {
  // A stream of its own, so the draw does not disturb the topology's.
  util::Random rng(util::Mix(seed, 0xa07405));
  std::vector<double> capacity(topology.num_nodes(), 0);
  for (NodeId s : topology.Switches()) {
    const double draw = 3200.0 - static_cast<double>(rng.Below(1001));
    capacity[s] = topology.node(s).programmable ? topology.node(s).capacity_gbps : draw;
  }
  return capacity;
}

absl::StatusOr<Evaluation> AuthorsBaseline(const Topology& topology, const JobSpec& job,
                                           std::string_view planner,
                                           const std::vector<double>& capacity_gbps) {
  const int n = static_cast<int>(job.workers.size());
  if (n == 0) return absl::InvalidArgumentError("authors' baselines: the job has no workers");
  if (capacity_gbps.size() != static_cast<size_t>(topology.num_nodes())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("authors' baselines: %d capacities for %d nodes", capacity_gbps.size(),
                        topology.num_nodes()));
  }
  const double band = PsIngressGbps(topology, job);
  // Each worker's aggregation point: a switch, or the root.
  std::vector<NodeId> at(n, job.root);
  if (planner == "geryon") {
    // Every worker at the PS.
  } else if (planner == "switchml" || planner == "atp") {
    std::vector<double> spare = capacity_gbps;
    const NodeId ps_tor = topology.TorOf(job.root);
    for (int r = 0; r < n; ++r) {
      const NodeId tor = topology.TorOf(job.workers[r]);
      if (tor == topology::kNoNode) {
        return absl::InvalidArgumentError(
            absl::StrFormat("authors' %s: rank %d has no ToR", planner, r));
      }
      if (planner == "switchml") {
        at[r] = tor;
        continue;
      }
      const double demand = WorkerGbps(topology, job, r);
      if (spare[tor] >= demand) {
        at[r] = tor;
      } else if (ps_tor != topology::kNoNode && spare[ps_tor] >= demand) {
        at[r] = ps_tor;
      }
      if (at[r] != job.root) spare[at[r]] -= demand;
    }
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        "authors' baselines: no formula for planner \"%s\" (geryon, switchml, atp)", planner));
  }
  std::map<NodeId, int> count;  // workers per switch used
  int direct = 0;
  for (NodeId a : at) {
    if (a == job.root) {
      ++direct;
    } else {
      ++count[a];
    }
  }
  const double share = band / static_cast<double>(count.size() + static_cast<size_t>(direct));
  Evaluation e;
  e.worker_gbps.resize(n);
  std::map<NodeId, double> largest;
  for (int r = 0; r < n; ++r) {
    const NodeId a = at[r];
    if (a == job.root) {
      e.worker_gbps[r] = share;
      e.ps_ingress_gbps += share;
      continue;
    }
    e.worker_gbps[r] = std::max(share, capacity_gbps[a] / count[a]);
    e.switch_aggregation_gbps += e.worker_gbps[r];
    e.switch_load_gbps[a] += e.worker_gbps[r];
    largest[a] = std::max(largest[a], e.worker_gbps[r]);
  }
  for (const auto& [s, rate] : largest) e.ps_ingress_gbps += rate;
  e.min_gbps = *std::min_element(e.worker_gbps.begin(), e.worker_gbps.end());
  for (double x : e.worker_gbps) e.mean_gbps += x / n;
  return e;
}

}  // namespace grid::planner
