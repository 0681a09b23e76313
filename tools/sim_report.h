// grid-sim's results (tools/grid_sim.cc): the rows of a run, and the CSV,
// markdown table and gnuplot figures made from them.
#ifndef GRID_TOOLS_SIM_REPORT_H_
#define GRID_TOOLS_SIM_REPORT_H_

#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "grid/planner.h"

namespace grid::tools {

struct Experiment {
  std::string name;
  std::string topology;  // spec without seed
  std::vector<int> workers;
};

inline constexpr const char* kPlanners[] = {"geryon", "switchml", "atp", "grid", "grid-paths"};
inline constexpr planner::Model kModels[] = {planner::Model::kPaper, planner::Model::kLinks};

struct Row {
  std::string experiment, model, planner;
  int workers;
  int seed;
  double min_rate, mean_rate, switch_aggregation, ps_ingress, solve_seconds;
};

// (experiment, model, planner, workers) -> the rows of every seed.
using Groups =
    std::map<std::tuple<std::string, std::string, std::string, int>, std::vector<const Row*>>;
Groups Group(const std::vector<Row>& rows);

void WriteCsv(const std::filesystem::path& path, const std::vector<Row>& rows);
void WriteMarkdown(const std::filesystem::path& path, const std::vector<Experiment>& experiments,
                   const Groups& groups, int seeds, bool authors);
void WritePlots(const std::filesystem::path& dir, const std::vector<Experiment>& experiments,
                const Groups& groups);

}  // namespace grid::tools

#endif  // GRID_TOOLS_SIM_REPORT_H_
