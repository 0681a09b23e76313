// Adding a routing planner without touching the library: implement
// grid::planner::Planner, register it in a PlannerRegistry next to the
// built-in ones, and compare it with them through the same evaluator. A job
// then runs on it when rank 0 plans with that registry:
//   options.control.planners = &registry;  options.control.planner = "biggest";
//
// The planner here, "biggest", aggregates every worker at the programmable
// switch with the largest capacity (ties: the lowest node id), on default
// routes. It is one flow at the parameter server, so it shines when links
// and that switch's capacity allow, and fails when they do not.
//
//   custom_planner [TOPOLOGY_SPEC] [WORKERS]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "grid/planner.h"
#include "grid/topology.h"

namespace {

using namespace grid::planner;
using grid::topology::Router;

class BiggestSwitchPlanner : public Planner {
 public:
  std::string_view name() const override { return "biggest"; }

  absl::StatusOr<::grid::planner::Plan> Plan(const Topology& topo, const JobSpec& job) override {
    NodeId best = grid::topology::kNoNode;
    for (NodeId s : topo.ProgrammableSwitches()) {
      if (best == grid::topology::kNoNode ||
          topo.node(s).capacity_gbps > topo.node(best).capacity_gbps) {
        best = s;
      }
    }
    if (best == grid::topology::kNoNode) {
      return absl::FailedPreconditionError("biggest: the topology has no programmable switch");
    }
    Router router(topo);
    ::grid::planner::Plan plan;
    plan.planner = std::string(name());
    plan.job = job;
    for (NodeId host : job.workers) {
      auto up = router.ShortestPath(host, best);
      if (!up.ok()) return up.status();
      plan.workers.push_back({best, *std::move(up)});
    }
    auto on = router.ShortestPath(best, job.root);
    if (!on.ok()) return on.status();
    plan.to_root[best] = *std::move(on);
    return plan;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string spec =
      argc > 1 ? argv[1] : "fattree:k=8,hosts=6,prog=random:0.2,cap=uniform:100:3200,seed=1";
  const int workers = argc > 2 ? std::atoi(argv[2]) : 100;

  PlannerRegistry registry = PlannerRegistry::WithBuiltins();
  absl::Status registered = registry.Register(
      "biggest", [](const PlannerOptions&) { return std::make_unique<BiggestSwitchPlanner>(); });
  if (!registered.ok()) {
    std::fprintf(stderr, "%s\n", registered.ToString().c_str());
    return 1;
  }

  auto topo = grid::topology::LoadTopology(spec);
  if (!topo.ok()) {
    std::fprintf(stderr, "%s\n", topo.status().ToString().c_str());
    return 2;
  }
  auto job = MakeJob(*topo, workers, std::nullopt, /*seed=*/1);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 2;
  }
  std::printf(
      "%s, %d workers\n\n| planner | paper: mean / min Gbps | links: mean / min Gbps |\n"
      "|---|---|---|\n",
      topo->name().c_str(), workers);
  for (const std::string& name : registry.Names()) {
    auto planner = registry.Create(name);
    auto plan = (*planner)->Plan(*topo, *job);
    if (!plan.ok()) {
      std::printf("| %s | %s | |\n", name.c_str(), std::string(plan.status().message()).c_str());
      continue;
    }
    auto paper = Evaluate(*topo, *plan, Model::kPaper);
    auto links = Evaluate(*topo, *plan, Model::kLinks);
    if (!paper.ok() || !links.ok()) return 1;
    std::printf("| %s | %.2f / %.2f | %.2f / %.2f |\n", name.c_str(), paper->mean_gbps,
                paper->min_gbps, links->mean_gbps, links->min_gbps);
  }
  return 0;
}
