// Internal: the baselines as the authors' simulation code computes them, for
// grid-sim --baselines=authors (docs/results.md, "Simulations").
//
// These are closed-form rates, not plans. Unlike our planners (which follow
// the paper's definitions and aggregate only at programmable switches), the
// authors' code places the baselines on any switch:
//   geryon    every worker sends to the PS at band / |N|;
//   switchml  every worker aggregates at its ToR s, at
//             max(band / |S|, C_s / count_s), |S| the ToRs in use;
//   atp       greedy in rank order: the worker's ToR if its remaining capacity
//             covers the worker's rate T, else the PS-side ToR if its does,
//             else the PS. Rates as for switchml, with the PS's direct
//             workers counted among the flows that share band (our reading:
//             the brief gives ATP's placement, not its rate).
// band is the PS ingress B; C_s comes from `capacity_gbps`.
#ifndef GRID_LIB_PLANNER_AUTHORS_H_
#define GRID_LIB_PLANNER_AUTHORS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grid/planner.h"

namespace grid::planner {

// The authors' switch capacities: 3200 + randint(-1000, 0) Gbps for every
// switch, programmable or not. A programmable switch keeps the topology's
// C_s (grid-sim generates it from the same range), so every planner sees
// one capacity per switch. Indexed by node id; 0 for hosts.
std::vector<double> AuthorsCapacities(const Topology& topology, uint64_t seed);

// The rates of baseline `planner` ("geryon", "switchml" or "atp") under the
// authors' formulas. Evaluation fields as for Evaluate: switch aggregation
// is the sum of the rates of workers aggregated in switches, PS ingress the
// direct workers' rates plus the largest member rate of each switch used.
// Errors name the planner, or the rank without a ToR.
absl::StatusOr<Evaluation> AuthorsBaseline(const Topology& topology, const JobSpec& job,
                                           std::string_view planner,
                                           const std::vector<double>& capacity_gbps);

}  // namespace grid::planner

#endif  // GRID_LIB_PLANNER_AUTHORS_H_
