// The baselines GRID is measured against, as the paper defines them.
#include "absl/strings/str_format.h"
#include "planner/builtin.h"

namespace grid::planner::internal {
namespace {

absl::Status AddToRoot(Router& router, const JobSpec& job, NodeId sw, Plan* plan) {
  if (plan->to_root.count(sw)) return absl::OkStatus();
  auto path = router.ShortestPath(sw, job.root);
  if (!path.ok()) return path.status();
  plan->to_root[sw] = *std::move(path);
  return absl::OkStatus();
}

Plan NewPlan(std::string_view name, const JobSpec& job) {
  Plan plan;
  plan.planner = std::string(name);
  plan.job = job;
  plan.workers.resize(job.workers.size());
  return plan;
}

class GeryonPlanner : public Planner {
 public:
  std::string_view name() const override { return "geryon"; }
  absl::StatusOr<::grid::planner::Plan> Plan(const Topology& topo, const JobSpec& job) override {
    Router router(topo);
    auto plan = NewPlan(name(), job);
    for (size_t r = 0; r < job.workers.size(); ++r) {
      auto path = router.ShortestPath(job.workers[r], job.root);
      if (!path.ok()) return path.status();
      plan.workers[r] = {job.root, *std::move(path)};
    }
    return plan;
  }
};

class SwitchMlPlanner : public Planner {
 public:
  std::string_view name() const override { return "switchml"; }
  absl::StatusOr<::grid::planner::Plan> Plan(const Topology& topo, const JobSpec& job) override {
    Router router(topo);
    auto plan = NewPlan(name(), job);
    for (size_t r = 0; r < job.workers.size(); ++r) {
      const NodeId host = job.workers[r];
      const NodeId tor = topo.TorOf(host);
      const bool aggregate = tor != topology::kNoNode && topo.node(tor).programmable;
      const NodeId agg = aggregate ? tor : job.root;
      auto path = router.ShortestPath(host, agg);
      if (!path.ok()) return path.status();
      plan.workers[r] = {agg, *std::move(path)};
      if (aggregate) {
        if (absl::Status s = AddToRoot(router, job, tor, &plan); !s.ok()) return s;
      }
    }
    return plan;
  }
};

class AtpPlanner : public Planner {
 public:
  AtpPlanner(double demand_gbps, bool best_effort)
      : demand_gbps_(demand_gbps), best_effort_(best_effort) {}
  std::string_view name() const override { return "atp"; }
  absl::StatusOr<::grid::planner::Plan> Plan(const Topology& topo, const JobSpec& job) override {
    Router router(topo);
    auto plan = NewPlan(name(), job);
    plan.best_effort = best_effort_;
    std::vector<double> spare(topo.num_nodes(), 0);
    for (NodeId s : topo.ProgrammableSwitches()) spare[s] = topo.node(s).capacity_gbps;
    for (size_t r = 0; r < job.workers.size(); ++r) {
      const NodeId host = job.workers[r];
      const double demand =
          demand_gbps_ > 0 ? demand_gbps_ : WorkerGbps(topo, job, static_cast<int>(r));
      auto path = router.ShortestPath(host, job.root);
      if (!path.ok()) return path.status();
      // The first programmable switch on the default path that can still take
      // the worker at its full rate (any, when best effort: the switch then
      // admits per chunk); the root otherwise.
      size_t hop = path->nodes.size() - 1;
      for (size_t i = 1; i + 1 < path->nodes.size(); ++i) {
        const NodeId s = path->nodes[i];
        if (topo.node(s).programmable && (best_effort_ || spare[s] >= demand)) {
          hop = i;
          break;
        }
      }
      const NodeId agg = path->nodes[hop];
      Path up;
      up.nodes.assign(path->nodes.begin(), path->nodes.begin() + hop + 1);
      up.arcs.assign(path->arcs.begin(), path->arcs.begin() + hop);
      plan.workers[r] = {agg, std::move(up)};
      if (agg != job.root) {
        spare[agg] -= demand;
        // The rest of the worker's default path is the switch's way on.
        Path rest;
        rest.nodes.assign(path->nodes.begin() + hop, path->nodes.end());
        rest.arcs.assign(path->arcs.begin() + hop, path->arcs.end());
        plan.to_root.emplace(agg, std::move(rest));
      }
    }
    return plan;
  }

 private:
  double demand_gbps_;
  bool best_effort_;
};

}  // namespace

std::unique_ptr<Planner> MakeGeryon() { return std::make_unique<GeryonPlanner>(); }
std::unique_ptr<Planner> MakeSwitchMl() { return std::make_unique<SwitchMlPlanner>(); }
std::unique_ptr<Planner> MakeAtp(double demand_gbps, bool best_effort) {
  return std::make_unique<AtpPlanner>(demand_gbps, best_effort);
}

}  // namespace grid::planner::internal
