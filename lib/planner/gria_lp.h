// Internal: GRIA's candidates (every way each worker can send, and every
// path on to the root) and its LP relaxation, solved with COIN-OR Clp
// (docs/planner.md). gria.cc rounds, repairs and improves what it returns.
#ifndef GRID_LIB_PLANNER_GRIA_LP_H_
#define GRID_LIB_PLANNER_GRIA_LP_H_

#include <vector>

#include "absl/status/statusor.h"
#include "grid/planner.h"
#include "planner/flow_model.h"

namespace grid::planner::internal {

// One way a worker can send: to `node` (switch index, or the root) along `path`.
struct Option {
  int node;  // index into Candidates::nodes
  Path path;
  std::vector<int> res;  // path resources plus the node's own (switch capacity or PS)
};

struct Candidates {
  std::vector<NodeId> nodes;  // aggregating switches, then the root (last)
  int root_index() const { return static_cast<int>(nodes.size()) - 1; }
  int num_switches() const { return root_index(); }
  std::vector<std::vector<Option>> worker;   // per rank
  std::vector<std::vector<Option>> to_root;  // per switch index: paths on to the root
  // Workers that are interchangeable in the LP: the same rate cap and, when
  // links count, the same ToR (their options then differ only in their own
  // access link). Option lists of a class's members are aligned.
  std::vector<std::vector<int>> classes;
  std::vector<int> class_of;                    // per rank
  std::vector<double> class_cap;                // per class: min(T, access link) for one member
  std::vector<std::vector<int>> class_private;  // per class: the representative's own resources
};

// k: paths per (worker, node) when the index counts links.
absl::StatusOr<Candidates> BuildCandidates(const Topology& topo, const JobSpec& job,
                                           const ResourceIndex& index, int k);

struct LpSolution {
  double lambda = 0;
  std::vector<std::vector<double>> r;  // per class (the rate of each member), per option
  std::vector<std::vector<double>> y;  // per switch, per root path
};

// The GRIA relaxation with x eliminated (x = r / T is feasible whenever the
// rates are, so this is the same LP), written per class of interchangeable
// workers: averaging any optimal solution over a class's members gives an
// optimal one in which they all have the same rates, so one set of variables
// per class (weighted by its size m_c on shared resources) loses nothing.
//   max  lambda, then sum_c m_c sum_o r[c][o] (a tie-break toward higher rates)
//   sum_o r[c][o]                        <= T_c         per class
//   lambda - sum_o r[c][o]               <= 0           per class
//   sum_{o at s} r[c][o] - sum_q y[s][q] <= 0           per class, switch
//   sum_{c, o at s} m_c r[c][o]          <= C_s         per switch
//   sum_{c, o at root} m_c r + sum y     <= B           PS ingress
//   flows crossing arc a                 <= c_a         per shared arc (grid-paths)
//
// Only the first `lp_paths` paths of each (class, node) and of each switch
// on to the root are LP columns; the others keep zero rate (rounding never
// picks them; the improvement step tries them all).
//
// Solved lexicographically: the largest lambda first, then the largest
// sum m_c r with lambda held there.
absl::StatusOr<LpSolution> SolveLp(const Candidates& c, const std::vector<double>& capacity,
                                   int lp_paths);

}  // namespace grid::planner::internal

#endif  // GRID_LIB_PLANNER_GRIA_LP_H_
