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
    "                 [--format=text|json] [--k-paths=K] [--lp-paths=K] [--samples=N]\n"
    "                 [--improve=true|false] [--improve-samples=N] [--threads=N]\n"
    "                 [--atp-demand=GBPS]\n"
    "Plans a job of N workers and prints the rates the flow-level evaluator predicts.\n"
    "Planners: geryon, switchml, atp, grid, grid-paths. docs/planner.md explains them.\n";

// What was planned, for printing.
struct Planned {
  std::string planner;
  int workers = 0;
  grid::topology::Topology topo;
  grid::planner::JobSpec job;
  grid::planner::Plan plan;
  grid::planner::Model model;
  grid::planner::Evaluation eval;
  double seconds = 0;
};

grid::planner::PlannerOptions OptionsFrom(const grid::tools::Flags& flags) {
  grid::planner::PlannerOptions options;
  options.k_paths = static_cast<int>(flags.Int("k-paths", options.k_paths, 1, 64));
  options.lp_paths = static_cast<int>(flags.Int("lp-paths", options.lp_paths, 1, 64));
  options.rounding_samples =
      static_cast<int>(flags.Int("samples", options.rounding_samples, 1, 100000));
  if (flags.Get("improve")) options.improve = flags.Bool("improve");
  options.improve_samples =
      static_cast<int>(flags.Int("improve-samples", options.improve_samples, 1, 100000));
  options.threads = static_cast<int>(flags.Int("threads", options.threads, 0, 1024));
  options.atp_demand_gbps = static_cast<double>(flags.Int("atp-demand", 0, 0, 1000000));
  return options;
}

// Plans the job the flags describe and evaluates the plan; exits on errors.
Planned PlanFromFlags(const grid::tools::Flags& flags) {
  using namespace grid;
  const int workers = static_cast<int>(flags.Int("workers", 0, 1, 100000));
  if (!flags.Get("workers")) flags.Fail("--workers is required");
  const std::string planner_name = flags.Required("planner");
  const uint64_t seed = static_cast<uint64_t>(flags.Int("seed", 1, 0, 1ll << 40));
  auto model = planner::ParseModel(flags.String("model", "links"));
  if (!model.ok()) flags.Exit(model.status());
  auto topo = topology::LoadTopology(flags.Required("topology"));
  if (!topo.ok()) flags.Exit(topo.status());
  auto job = planner::MakeJob(*topo, workers, flags.Get("root"), seed);
  if (!job.ok()) flags.Exit(job.status());
  auto created = planner::PlannerRegistry::WithBuiltins().Create(planner_name, OptionsFrom(flags));
  if (!created.ok()) flags.Exit(created.status());
  const auto start = std::chrono::steady_clock::now();
  auto plan = (*created)->Plan(*topo, *job);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!plan.ok()) flags.Error(std::string(plan.status().message()));
  auto eval = planner::Evaluate(*topo, *plan, *model);
  if (!eval.ok()) flags.Error(std::string(eval.status().message()));
  return Planned{planner_name,     workers, *std::move(topo), *job,
                 *std::move(plan), *model,  *std::move(eval), seconds};
}

void PrintJson(const Planned& p) {
  nlohmann::ordered_json j;
  j["planner"] = p.planner;
  j["model"] = grid::planner::ModelName(p.model);
  j["workers"] = p.workers;
  j["min_rate_gbps"] = p.eval.min_gbps;
  j["mean_rate_gbps"] = p.eval.mean_gbps;
  j["switch_aggregation_gbps"] = p.eval.switch_aggregation_gbps;
  j["ps_ingress_gbps"] = p.eval.ps_ingress_gbps;
  j["max_capacity_violation"] = p.plan.diagnostics.max_capacity_violation;
  j["solve_seconds"] = p.seconds;
  std::printf("%s\n", j.dump().c_str());
}

void PrintText(const Planned& p) {
  const auto& d = p.plan.diagnostics;
  std::printf("planner                  %s\n", p.planner.c_str());
  std::printf("topology                 %s (%d nodes, %d links)\n", p.topo.name().c_str(),
              p.topo.num_nodes(), p.topo.num_links());
  std::printf("workers                  %d, root %s\n", p.workers,
              p.topo.node(p.job.root).name.c_str());
  std::printf("model                    %s\n", grid::planner::ModelName(p.model));
  std::printf("min rate                 %.3f Gbps\n", p.eval.min_gbps);
  std::printf("mean rate                %.3f Gbps\n", p.eval.mean_gbps);
  std::printf("switch aggregation       %.3f Gbps\n", p.eval.switch_aggregation_gbps);
  std::printf("PS ingress               %.3f Gbps\n", p.eval.ps_ingress_gbps);
  std::printf("aggregating switches     %zu\n", p.plan.to_root.size());
  if (d.rounding_samples > 0) {
    std::printf("lambda LP / rounded      %.3f / %.3f Gbps\n", d.lambda_lp, d.lambda_rounded);
    std::printf("lambda repaired/improved %.3f / %.3f Gbps (planner's own model)\n",
                d.lambda_repaired, d.lambda_improved);
    std::printf("max capacity violation   %.3f (before repair)\n", d.max_capacity_violation);
    std::printf("improvement starts       %d of %d roundings\n", d.improve_starts,
                d.rounding_samples);
  }
  std::printf("solve time               %.3f s\n", p.seconds);
}

}  // namespace

int main(int argc, char** argv) {
  const grid::tools::Flags flags(
      "grid-plan", argc, argv,
      {"topology", "workers", "root", "planner", "model", "seed", "out", "format", "k-paths",
       "lp-paths", "samples", "improve", "improve-samples", "threads", "atp-demand"},
      kUsage);
  const std::string format = flags.String("format", "text");
  if (format != "text" && format != "json") flags.Fail("--format must be text or json");
  const Planned p = PlanFromFlags(flags);
  if (auto out = flags.Get("out")) {
    std::ofstream file(*out);
    file << grid::planner::PlanToJson(p.topo, p.plan, &p.eval, p.model);
    if (!file) flags.Error("cannot write " + *out);
  }
  if (format == "json") {
    PrintJson(p);
  } else {
    PrintText(p);
  }
  return 0;
}
