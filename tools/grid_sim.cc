// grid-sim: the paper's large-scale simulations (flow-level, analytic rates
// from the plans). Runs every planner on every (workers, seed) point of an
// experiment, evaluates each plan under both models, and writes a CSV, one
// PNG per figure (gnuplot) and a markdown table.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "planner/authors.h"
#include "tools/flags.h"
#include "tools/progress.h"
#include "tools/sim_report.h"

namespace {

using namespace grid;
using tools::Experiment;
using tools::Groups;
using tools::kModels;
using tools::kPlanners;
using tools::Row;

constexpr char kUsage[] =
    "usage: grid-sim --experiment=NAME --out=DIR [--seeds=K] [--workers=N,N,...]\n"
    "                [--baselines=strict|authors]\n"
    "Experiments (as in the paper, section 'large-scale simulation'):\n"
    "  fattree-a    k=8 fat tree, 6 hosts per edge, only edge switches programmable, 40-100 "
    "workers\n"
    "  fattree-b    the same, a random 20% of all switches programmable\n"
    "  leafspine-a  30 spines, 30 leaves, 16 hosts per leaf, only leaves programmable, 100-250 "
    "workers\n"
    "  leafspine-b  the same, a random 20% of all switches programmable\n"
    "  all          the four above\n"
    "Switch capacities are uniform in [100, 3200] Gbps; links and the PS ingress are 100 Gbps.\n"
    "Baselines:\n"
    "  strict   (default) geryon, switchml and atp are planners as the paper defines them,\n"
    "           aggregating only at programmable switches, evaluated like grid's plans\n"
    "  authors  the authors' simulation formulas: closed-form rates on any switch, every\n"
    "           switch's capacity 3200 + randint(-1000, 0) Gbps (for grid too)\n"
    "Writes DIR/results.csv, DIR/results.md and DIR/<experiment>-<model>-<metric>.png.\n";

const std::vector<Experiment>& Experiments() {
  static const std::vector<Experiment> kAll = {
      {"fattree-a", "fattree:k=8,hosts=6,prog=tor,cap=uniform:100:3200", {40, 60, 80, 100}},
      {"fattree-b", "fattree:k=8,hosts=6,prog=random:0.2,cap=uniform:100:3200", {40, 60, 80, 100}},
      {"leafspine-a",
       "leafspine:spines=30,leaves=30,hosts=16,prog=tor,cap=uniform:100:3200",
       {100, 150, 200, 250}},
      {"leafspine-b",
       "leafspine:spines=30,leaves=30,hosts=16,prog=random:0.2,cap=uniform:100:3200",
       {100, 150, 200, 250}},
  };
  return kAll;
}

// The experiments --experiment names, with --workers overriding their sizes.
std::vector<Experiment> Chosen(const tools::Flags& flags, bool authors) {
  const std::string name = flags.Required("experiment");
  std::vector<Experiment> chosen;
  for (const Experiment& e : Experiments()) {
    if (name == "all" || name == e.name) chosen.push_back(e);
  }
  if (chosen.empty()) flags.Fail("unknown experiment \"" + name + "\"");
  if (auto list = flags.Get("workers")) {
    std::vector<int> workers;
    std::stringstream ss(*list);
    for (std::string item; std::getline(ss, item, ',');) {
      int w = 0;
      if (!absl::SimpleAtoi(item, &w) || w < 1) {
        flags.Fail("--workers: \"" + item + "\" is not a count");
      }
      workers.push_back(w);
    }
    for (Experiment& e : chosen) e.workers = workers;
  }
  if (authors) {
    // The authors' code draws every switch's capacity as 3200 + randint(-1000, 0).
    for (Experiment& e : chosen) {
      const size_t at = e.topology.find("cap=uniform:100:3200");
      if (at != std::string::npos) e.topology.replace(at, 20, "cap=uniform:2200:3200");
    }
  }
  return chosen;
}

// Every planner on one topology and job, under every model: one row each.
absl::Status PlanAll(const Experiment& e, const topology::Topology& topo, int workers, int seed,
                     const planner::PlannerRegistry& registry, bool authors,
                     std::vector<Row>& rows) {
  auto job = planner::MakeJob(topo, workers, std::nullopt, static_cast<uint64_t>(seed));
  if (!job.ok()) return job.status();
  const std::vector<double> capacity =
      authors ? planner::AuthorsCapacities(topo, static_cast<uint64_t>(seed))
              : std::vector<double>();
  for (const char* p : kPlanners) {
    const std::string name = p;
    if (authors && (name == "geryon" || name == "switchml" || name == "atp")) {
      auto eval = planner::AuthorsBaseline(topo, *job, name, capacity);
      if (!eval.ok()) return eval.status();
      for (planner::Model m : kModels) {
        rows.push_back({e.name, planner::ModelName(m), p, workers, seed, eval->min_gbps,
                        eval->mean_gbps, eval->switch_aggregation_gbps, eval->ps_ingress_gbps, 0});
      }
      continue;
    }
    auto planner = registry.Create(p);
    if (!planner.ok()) return planner.status();
    const auto start = std::chrono::steady_clock::now();
    auto plan = (*planner)->Plan(topo, *job);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!plan.ok()) {
      return absl::Status(plan.status().code(),
                          absl::StrFormat("%s, %d workers, seed %d, %s: %s", e.name, workers, seed,
                                          p, plan.status().message()));
    }
    for (planner::Model m : kModels) {
      auto eval = planner::Evaluate(topo, *plan, m);
      if (!eval.ok()) return eval.status();
      rows.push_back({e.name, planner::ModelName(m), p, workers, seed, eval->min_gbps,
                      eval->mean_gbps, eval->switch_aggregation_gbps, eval->ps_ingress_gbps,
                      seconds});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Row>> Run(const std::vector<Experiment>& chosen, int seeds,
                                     bool authors) {
  const planner::PlannerRegistry registry = planner::PlannerRegistry::WithBuiltins();
  std::vector<Row> rows;
  int64_t total = 0, done = 0;
  for (const Experiment& e : chosen) total += static_cast<int64_t>(seeds) * e.workers.size();
  // A line per point where nobody watches (logs); a progress line where one does.
  tools::Progress progress("grid-sim", total);
  const bool log_points = !isatty(fileno(stderr));
  for (const Experiment& e : chosen) {
    for (int seed = 1; seed <= seeds; ++seed) {
      auto topo = topology::GenerateTopology(absl::StrFormat("%s,seed=%d", e.topology, seed));
      if (!topo.ok()) return topo.status();
      for (int w : e.workers) {
        if (absl::Status s = PlanAll(e, *topo, w, seed, registry, authors, rows); !s.ok()) return s;
        progress.Update(++done);
        if (log_points) {
          std::fprintf(stderr, "grid-sim: %s seed %d, %d workers done\n", e.name.c_str(), seed, w);
        }
      }
    }
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  const tools::Flags flags("grid-sim", argc, argv,
                           {"experiment", "out", "seeds", "workers", "baselines"}, kUsage);
  const std::string baselines = flags.Get("baselines").value_or("strict");
  if (baselines != "strict" && baselines != "authors") {
    flags.Fail("--baselines: \"" + baselines + "\" is neither strict nor authors");
  }
  const bool authors = baselines == "authors";
  const std::vector<Experiment> chosen = Chosen(flags, authors);
  const std::filesystem::path out = flags.Required("out");
  const int seeds = static_cast<int>(flags.Int("seeds", 3, 1, 1000));
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) flags.Fail("cannot create " + out.string() + ": " + error.message());
  auto rows = Run(chosen, seeds, authors);
  if (!rows.ok()) flags.Error(std::string(rows.status().message()));
  WriteCsv(out / "results.csv", *rows);
  const Groups groups = Group(*rows);
  WriteMarkdown(out / "results.md", chosen, groups, seeds, authors);
  WritePlots(out, chosen, groups);
  std::printf("grid-sim: %zu rows in %s\n", rows->size(), (out / "results.csv").string().c_str());
  return 0;
}
