// grid-plan: plans one job on one topology and prints the predicted rates.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "grid/planner.h"
#include "grid/topology.h"
#include "tools/flags.h"

namespace {

constexpr char kUsage[] =
    "usage: grid-plan --topology=SPEC|FILE --workers=N --planner=NAME\n"
    "                 [--root=HOST] [--model=paper|links] [--seed=S] [--out=plan.json]\n"
    "                 [--format=text|json] [--k-paths=K] [--samples=N] [--improve=true|false]\n"
    "                 [--atp-demand=GBPS]\n"
    "Plans a job of N workers and prints the rates the flow-level evaluator predicts.\n"
    "Planners: geryon, switchml, atp, grid, grid-paths. docs/planner.md explains them.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const tools::Flags flags("grid-plan", argc, argv,
                           {"topology", "workers", "root", "planner", "model", "seed", "out",
                            "format", "k-paths", "samples", "improve", "atp-demand"},
                           kUsage);
  const std::string spec = flags.Required("topology");
  const int workers = static_cast<int>(flags.Int("workers", 0, 1, 100000));
  if (!flags.Get("workers")) flags.Fail("--workers is required");
  const std::string planner_name = flags.Required("planner");
  const uint64_t seed = static_cast<uint64_t>(flags.Int("seed", 1, 0, 1ll << 40));
  const std::string format = flags.String("format", "text");
  if (format != "text" && format != "json") flags.Fail("--format must be text or json");
  auto model = planner::ParseModel(flags.String("model", "links"));
  if (!model.ok()) flags.Fail(std::string(model.status().message()));

  planner::PlannerOptions options;
  options.k_paths = static_cast<int>(flags.Int("k-paths", options.k_paths, 1, 64));
  options.rounding_samples =
      static_cast<int>(flags.Int("samples", options.rounding_samples, 1, 100000));
  if (flags.Get("improve")) options.improve = flags.Bool("improve");
  options.atp_demand_gbps = static_cast<double>(flags.Int("atp-demand", 0, 0, 1000000));

  auto topo = topology::LoadTopology(spec);
  if (!topo.ok()) flags.Fail(std::string(topo.status().message()));
  auto job = planner::MakeJob(*topo, workers, flags.Get("root"), seed);
  if (!job.ok()) flags.Fail(std::string(job.status().message()));
  auto created = planner::PlannerRegistry::WithBuiltins().Create(planner_name, options);
  if (!created.ok()) flags.Fail(std::string(created.status().message()));

  const auto start = std::chrono::steady_clock::now();
  auto plan = (*created)->Plan(*topo, *job);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!plan.ok()) {
    std::fprintf(stderr, "grid-plan: %s\n", std::string(plan.status().message()).c_str());
    return 1;
  }
  auto eval = planner::Evaluate(*topo, *plan, *model);
  if (!eval.ok()) {
    std::fprintf(stderr, "grid-plan: %s\n", std::string(eval.status().message()).c_str());
    return 1;
  }
  if (auto out = flags.Get("out")) {
    std::ofstream file(*out);
    file << planner::PlanToJson(*topo, *plan, &*eval, *model);
    if (!file) {
      std::fprintf(stderr, "grid-plan: cannot write %s\n", out->c_str());
      return 1;
    }
  }
  const double violation = plan->diagnostics.max_capacity_violation;
  if (format == "json") {
    nlohmann::ordered_json j;
    j["planner"] = planner_name;
    j["model"] = planner::ModelName(*model);
    j["workers"] = workers;
    j["min_rate_gbps"] = eval->min_gbps;
    j["mean_rate_gbps"] = eval->mean_gbps;
    j["switch_aggregation_gbps"] = eval->switch_aggregation_gbps;
    j["ps_ingress_gbps"] = eval->ps_ingress_gbps;
    j["max_capacity_violation"] = violation;
    j["solve_seconds"] = seconds;
    std::printf("%s\n", j.dump().c_str());
  } else {
    const auto& d = plan->diagnostics;
    std::printf("planner                  %s\n", planner_name.c_str());
    std::printf("topology                 %s (%d nodes, %d links)\n", topo->name().c_str(),
                topo->num_nodes(), topo->num_links());
    std::printf("workers                  %d, root %s\n", workers,
                topo->node(job->root).name.c_str());
    std::printf("model                    %s\n", planner::ModelName(*model));
    std::printf("min rate                 %.3f Gbps\n", eval->min_gbps);
    std::printf("mean rate                %.3f Gbps\n", eval->mean_gbps);
    std::printf("switch aggregation       %.3f Gbps\n", eval->switch_aggregation_gbps);
    std::printf("PS ingress               %.3f Gbps\n", eval->ps_ingress_gbps);
    std::printf("aggregating switches     %zu\n", plan->to_root.size());
    if (d.rounding_samples > 0) {
      std::printf("lambda LP / rounded      %.3f / %.3f Gbps\n", d.lambda_lp, d.lambda_rounded);
      std::printf("lambda repaired/improved %.3f / %.3f Gbps (planner's own model)\n",
                  d.lambda_repaired, d.lambda_improved);
      std::printf("max capacity violation   %.3f (before repair)\n", violation);
    }
    std::printf("solve time               %.3f s\n", seconds);
  }
  return 0;
}
