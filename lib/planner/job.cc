// Jobs, plan structure checks and evaluation.
#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"
#include "grid/planner.h"
#include "planner/flow_model.h"
#include "util/random.h"

namespace grid::planner {

absl::StatusOr<JobSpec> MakeJob(const Topology& topo, int num_workers,
                                std::optional<std::string> root_name, uint64_t seed) {
  if (num_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("workers must be >= 1 (got %d)", num_workers));
  }
  JobSpec job;
  job.seed = seed;
  util::Random rng(seed * 0x9e3779b97f4a7c15ull + 37);
  if (root_name) {
    auto id = topo.Find(*root_name);
    if (!id || !topo.node(*id).is_host()) {
      return absl::InvalidArgumentError(absl::StrFormat("root \"%s\" is not a host", *root_name));
    }
    job.root = *id;
  } else if (auto declared = topo.HostsWithRole(topology::HostRole::kRoot); !declared.empty()) {
    job.root = declared.front();
  }
  std::vector<NodeId> declared = topo.HostsWithRole(topology::HostRole::kWorker);
  std::erase(declared, job.root);
  if (static_cast<int>(declared.size()) >= num_workers) {
    job.workers.assign(declared.begin(), declared.begin() + num_workers);
  } else {
    std::vector<NodeId> pool;
    for (NodeId h : topo.Hosts()) {
      if (h != job.root) pool.push_back(h);
    }
    const int needed = num_workers + (job.root == topology::kNoNode ? 1 : 0);
    if (static_cast<int>(pool.size()) < needed) {
      return absl::InvalidArgumentError(
          absl::StrFormat("topology \"%s\" has %d hosts; a job of %d workers and a root needs %d",
                          topo.name(), topo.Hosts().size(), num_workers, num_workers + 1));
    }
    rng.Shuffle(pool);
    if (job.root == topology::kNoNode) {
      job.root = pool.back();
      pool.pop_back();
    }
    job.workers.assign(pool.begin(), pool.begin() + num_workers);
  }
  return job;
}

double WorkerGbps(const Topology& topo, const JobSpec& job, int rank) {
  return job.worker_gbps > 0 ? job.worker_gbps : topo.AccessGbps(job.workers[rank]);
}

double PsIngressGbps(const Topology& topo, const JobSpec& job) {
  return job.ps_ingress_gbps > 0 ? job.ps_ingress_gbps : topo.AccessGbps(job.root);
}

std::vector<Aggregator> Aggregators(const Plan& plan) {
  std::vector<Aggregator> out;
  for (const auto& [node, path] : plan.to_root) out.push_back({node, {}, &path});
  for (int r = 0; r < static_cast<int>(plan.workers.size()); ++r) {
    const NodeId agg = plan.workers[r].aggregator;
    if (agg == plan.job.root) continue;
    auto it = std::lower_bound(out.begin(), out.end(), agg,
                               [](const Aggregator& a, NodeId n) { return a.node < n; });
    if (it != out.end() && it->node == agg) it->members.push_back(r);
  }
  return out;
}

namespace {

absl::Status CheckPath(const Topology& topo, const Path& path, NodeId from, NodeId to,
                       const std::string& what) {
  if (path.nodes.empty() || path.nodes.front() != from || path.nodes.back() != to ||
      path.arcs.size() + 1 != path.nodes.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: the path must run from \"%s\" to \"%s\"",
                                                      what, topo.node(from).name,
                                                      topo.node(to).name));
  }
  for (size_t i = 0; i < path.arcs.size(); ++i) {
    const topology::ArcId a = path.arcs[i];
    if (a < 0 || a >= topo.num_arcs() || topo.ArcFrom(a) != path.nodes[i] ||
        topo.ArcTo(a) != path.nodes[i + 1]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: hop %d is not a link of the topology", what, i));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePlan(const Topology& topo, const Plan& plan) {
  const JobSpec& job = plan.job;
  if (job.root < 0 || job.root >= topo.num_nodes() || !topo.node(job.root).is_host()) {
    return absl::InvalidArgumentError("plan: the root is not a host of the topology");
  }
  if (plan.workers.size() != job.workers.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("plan: %d routes for %d workers", plan.workers.size(), job.workers.size()));
  }
  std::set<NodeId> used;
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    const WorkerRoute& route = plan.workers[r];
    const std::string what = absl::StrFormat("plan: rank %d", r);
    const NodeId agg = route.aggregator;
    if (agg < 0 || agg >= topo.num_nodes())
      return absl::InvalidArgumentError(what + ": no aggregator");
    if (agg != job.root) {
      const topology::Node& n = topo.node(agg);
      if (!n.is_switch() || !n.programmable) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: aggregator \"%s\" is neither the root nor a programmable switch", what, n.name));
      }
      if (!plan.to_root.count(agg)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: aggregator \"%s\" has no path to the root", what, n.name));
      }
      used.insert(agg);
    }
    if (absl::Status s = CheckPath(topo, route.up, job.workers[r], agg, what); !s.ok()) return s;
  }
  for (const auto& [sw, path] : plan.to_root) {
    const std::string what = absl::StrFormat("plan: switch \"%s\"", topo.node(sw).name);
    if (!used.count(sw)) return absl::InvalidArgumentError(what + ": aggregates no worker");
    if (absl::Status s = CheckPath(topo, path, sw, job.root, what + " to root"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

const char* ModelName(Model model) { return model == Model::kPaper ? "paper" : "links"; }

absl::StatusOr<Model> ParseModel(std::string_view name) {
  if (name == "paper") return Model::kPaper;
  if (name == "links") return Model::kLinks;
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown model \"%s\" (paper or links)", std::string(name)));
}

absl::StatusOr<Evaluation> Evaluate(const Topology& topo, const Plan& plan, Model model) {
  if (absl::Status s = ValidatePlan(topo, plan); !s.ok()) return s;
  const internal::ResourceIndex index(topo, model);
  const internal::FlowModel flows = internal::BuildFlowModel(topo, plan, index);
  Evaluation e;
  e.worker_gbps = internal::MaxMinRates(flows);
  const internal::Summary summary = internal::Summarize(e.worker_gbps);
  e.min_gbps = summary.min;
  e.mean_gbps = summary.mean;
  std::map<NodeId, double> group_rate;
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    const NodeId agg = plan.workers[r].aggregator;
    const double rate = e.worker_gbps[r];
    if (agg == plan.job.root) {
      e.ps_ingress_gbps += rate;
      continue;
    }
    e.switch_aggregation_gbps += rate;
    e.switch_load_gbps[agg] += rate;
    group_rate[agg] = std::max(group_rate[agg], rate);
  }
  for (const auto& [sw, rate] : group_rate) e.ps_ingress_gbps += rate;
  return e;
}

}  // namespace grid::planner
