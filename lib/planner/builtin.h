// Internal: constructors of the built-in planners, for the registry.
#ifndef GRID_LIB_PLANNER_BUILTIN_H_
#define GRID_LIB_PLANNER_BUILTIN_H_

#include <memory>

#include "grid/planner.h"

namespace grid::planner::internal {

using topology::Router;

std::unique_ptr<Planner> MakeGeryon();
std::unique_ptr<Planner> MakeSwitchMl();
// demand_gbps: what admission assumes a worker needs (0: its T).
std::unique_ptr<Planner> MakeAtp(double demand_gbps, bool best_effort);
// grid (the published GRIA model) and grid-paths (path-aware, link capacities).
std::unique_ptr<Planner> MakeGrid(const PlannerOptions& options, bool path_aware);

// The optimum (lambda) of the GRIA LP relaxation the grid planners solve, for
// tests against hand-computed instances.
absl::StatusOr<double> GriaLpOptimum(const Topology& topology, const JobSpec& job, bool path_aware,
                                     int k_paths);

}  // namespace grid::planner::internal

#endif  // GRID_LIB_PLANNER_BUILTIN_H_
