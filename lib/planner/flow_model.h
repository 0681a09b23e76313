// Internal: the flow-level model behind Evaluate() and the planners' repair
// and improvement steps. Resources have capacities; each worker's own flow
// uses some of them; each aggregating switch's single flow (the paper's y_s,
// running at the largest rate among its members) uses others. Rates are
// max-min fair by progressive filling.
#ifndef GRID_LIB_PLANNER_FLOW_MODEL_H_
#define GRID_LIB_PLANNER_FLOW_MODEL_H_

#include <vector>

#include "absl/types/span.h"
#include "grid/planner.h"

namespace grid::planner::internal {

struct FlowModel {
  std::vector<double> capacity;                   // per resource
  std::vector<double> worker_cap;                 // per worker: T
  std::vector<absl::Span<const int>> worker_res;  // per worker: resources its own flow uses
  std::vector<int> worker_group;                  // per worker: aggregating group, or -1 (direct)
  std::vector<absl::Span<const int>> group_res;   // per group: resources the aggregated flow uses
  // Owns the lists above when the model is built from a Plan; planners point
  // the spans at lists they precomputed per candidate instead.
  std::vector<std::vector<int>> storage;

  FlowModel() = default;
  FlowModel(FlowModel&&) = default;
  FlowModel& operator=(FlowModel&&) = default;
  FlowModel(const FlowModel&) = delete;  // the spans would point into the original
  FlowModel& operator=(const FlowModel&) = delete;
};

// Max-min fair worker rates. Each round raises every unfrozen worker's rate
// together until a resource saturates or a worker reaches its cap, then
// freezes the workers behind it. A group's flow grows while any member does.
std::vector<double> MaxMinRates(const FlowModel& model);

// The same, reusing its buffers across calls (planners evaluate thousands of
// candidate plans). Each round finds the next level from a heap of resource
// fill levels and a list of workers by cap, so a round costs what changed in
// it, not a scan of every flow and resource. The result is the same, bit for
// bit, as scanning everything each round (tests/planner/max_min_test.cc).
class MaxMinSolver {
 public:
  const std::vector<double>& Solve(const FlowModel& model);

  struct Fill {  // a resource's level when it fills, as of `version`
    double level;
    int c;
    unsigned version;
  };

 private:
  void IndexMembers(const FlowModel& m);     // member_start_, member_ (groups' workers)
  void IndexResources(const FlowModel& m);   // used_, compact_, user_start_, user_, slope_
  void OrderByCap(const FlowModel& m);       // by_cap_
  void FileFill(const FlowModel& m, int c);  // pushes c's current fill level
  void DropStale();
  double NextLevel(const FlowModel& m, double level);
  void FreezeSaturated(const FlowModel& m, double level);  // into to_freeze_
  size_t Settle(const FlowModel& m, double level);         // frozen flows become load
  void Freeze(int w) {
    if (frozen_[w]) return;
    frozen_[w] = 1;
    to_freeze_.push_back(w);
  }

  std::vector<double> rate_, fixed_, slope_, caps_sorted_for_;
  std::vector<char> frozen_, touched_;
  std::vector<int> active_, member_start_, member_, fill_, compact_, used_, user_start_, user_,
      to_freeze_, by_cap_, changed_, popped_;
  std::vector<Fill> heap_;  // min-heap on level; entries whose version is old are stale
  std::vector<unsigned> version_;
  size_t next_cap_ = 0;  // by_cap_[next_cap_..] holds every unfrozen worker
  double slack_ = 0;     // how far above the level a resource that fills can sit
};

// Resource layout used by BuildFlowModel: 0 is the PS ingress, then one per
// programmable switch (in Topology::ProgrammableSwitches() order), then, in
// the links model, one per arc.
class ResourceIndex {
 public:
  ResourceIndex(const Topology& topology, Model model);
  int ps() const { return 0; }
  int sw(NodeId node) const { return switch_index_[node]; }  // -1 if not programmable
  int arc(topology::ArcId arc) const { return arc_base_ + arc; }
  int size() const { return size_; }
  bool links() const { return links_; }

 private:
  std::vector<int> switch_index_;
  int arc_base_ = 0;
  int size_ = 0;
  bool links_ = false;
};

// The resource capacities of a topology and job.
std::vector<double> Capacities(const Topology& topology, const JobSpec& job,
                               const ResourceIndex& index);

// Appends to `out` the resources a flow along `path` uses: its arcs, and in
// the opposite direction the arcs the results come back on.
void AppendPathResources(const Path& path, const ResourceIndex& index, std::vector<int>* out);

// The model of a plan: what Evaluate() runs.
FlowModel BuildFlowModel(const Topology& topology, const Plan& plan, const ResourceIndex& index);

struct Summary {
  double min = 0;
  double mean = 0;
};
Summary Summarize(const std::vector<double>& rates);

}  // namespace grid::planner::internal

#endif  // GRID_LIB_PLANNER_FLOW_MODEL_H_
