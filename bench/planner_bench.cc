// Planning time of every planner against the job size (10 to 1000 workers)
// and the number of programmable switches, on fat trees. Each benchmark is
// reported beside geryon's time on the same instance, as the baseline: a
// planner that only computes default routes.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "absl/strings/str_format.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "ratio_reporter.h"

namespace {

using namespace grid;

// Fat trees big enough for the job: k=8 (192 hosts) up to 1000 workers with
// k=16 (16 hosts per edge = 2048 hosts). `programmable` is the fraction of
// switches that can aggregate.
const topology::Topology& Fabric(int k, int hosts, double programmable) {
  static std::map<std::string, topology::Topology> cache;
  const std::string spec = absl::StrFormat(
      "fattree:k=%d,hosts=%d,prog=random:%g,cap=uniform:100:3200,seed=1", k, hosts, programmable);
  auto it = cache.find(spec);
  if (it == cache.end()) it = cache.emplace(spec, *topology::GenerateTopology(spec)).first;
  return it->second;
}

void PlanOnce(benchmark::State& state, const char* name, const topology::Topology& topo,
              int workers) {
  auto job = planner::MakeJob(topo, workers, std::nullopt, 1);
  if (!job.ok()) {
    state.SkipWithError(std::string(job.status().message()).c_str());
    return;
  }
  auto created = planner::PlannerRegistry::WithBuiltins().Create(name);
  for (auto _ : state) {
    auto plan = (*created)->Plan(topo, *job);
    if (!plan.ok()) {
      state.SkipWithError(std::string(plan.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(plan);
  }
  state.counters["workers"] = workers;
  state.counters["programmable"] = static_cast<double>(topo.ProgrammableSwitches().size());
}

// Workers: range(0); k = 8 below 190 workers, 16 above.
void BM_PlanWorkers(benchmark::State& state, const char* name) {
  const int workers = static_cast<int>(state.range(0));
  const topology::Topology& topo = workers < 190 ? Fabric(8, 6, 0.2) : Fabric(16, 16, 0.2);
  PlanOnce(state, name, topo, workers);
}

// Programmable switches: range(0) percent of the k=8 fabric's 80, 100 workers.
void BM_PlanSwitches(benchmark::State& state, const char* name) {
  PlanOnce(state, name, Fabric(8, 6, static_cast<double>(state.range(0)) / 100), 100);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* name : {"geryon", "atp", "grid", "grid-paths"}) {
    auto* w = benchmark::RegisterBenchmark(absl::StrFormat("Workers/%s", name).c_str(),
                                           BM_PlanWorkers, name);
    for (int n : {10, 30, 100, 300, 1000}) w->Arg(n);
    w->Unit(benchmark::kMillisecond);
    auto* s = benchmark::RegisterBenchmark(absl::StrFormat("Switches/%s", name).c_str(),
                                           BM_PlanSwitches, name);
    for (int pct : {5, 10, 20, 40, 80}) s->Arg(pct);
    s->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  grid::bench::RatioReporter reporter(grid::bench::RatioReporter::Measure::kTime, {"geryon"});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return reporter.ExitCode("planner_bench");
}
