// Routing planners: for every worker of a job, which node aggregates its
// gradient (a programmable switch or the root) and the paths there and on to
// the root. docs/planner.md describes the algorithms, docs/plan.md the plan
// format.
#ifndef GRID_PLANNER_H_
#define GRID_PLANNER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grid/export.h"
#include "grid/topology.h"

GRID_API_BEGIN

namespace grid::planner {

using topology::NodeId;
using topology::Path;
using topology::Topology;

// One training job: rank r runs on host workers[r].
struct JobSpec {
  std::vector<NodeId> workers;
  NodeId root = topology::kNoNode;
  double worker_gbps = 0;      // T, a worker's maximum sending rate; 0: its access link
  double ps_ingress_gbps = 0;  // B, the root's ingress bandwidth; 0: its access link
  uint64_t seed = 1;           // for planners that randomize
};

// Picks the job's hosts. Workers: the topology's hosts with role "worker", in
// order, when it declares at least `num_workers`; otherwise a seeded random
// choice among the other hosts. Root: `root_name`, else the declared root,
// else a seeded random host that is not a worker.
absl::StatusOr<JobSpec> MakeJob(const Topology& topology, int num_workers,
                                std::optional<std::string> root_name, uint64_t seed);

// The T and B a job means on a topology (resolving the zero defaults).
double WorkerGbps(const Topology& topology, const JobSpec& job, int rank);
double PsIngressGbps(const Topology& topology, const JobSpec& job);

struct WorkerRoute {
  NodeId aggregator = topology::kNoNode;  // a programmable switch, or job.root
  Path up;                                // worker host -> aggregator
};

// What a planner reports about how it got its plan (zero where it does not apply).
struct PlanDiagnostics {
  double lambda_lp = 0;               // LP relaxation optimum (Gbps)
  double lambda_rounded = 0;          // min worker rate right after rounding
  double lambda_repaired = 0;         // min worker rate after repair
  double lambda_improved = 0;         // after local improvement
  double max_capacity_violation = 0;  // largest (load - capacity) / capacity before repair
  int rounding_samples = 0;
  int improve_starts = 0;  // roundings improved (PlannerOptions::improve_samples, improve_budget)
};

struct Plan {
  std::string planner;
  JobSpec job;
  std::vector<WorkerRoute> workers;  // per rank
  std::map<NodeId, Path> to_root;    // per aggregating switch: switch -> root
  PlanDiagnostics diagnostics;
  // ATP run as ATP behaves: each aggregating switch admits chunks while it
  // has the capacity and passes the others on to the root, which completes
  // them (docs/switch.md, "Best effort"). The flow model still evaluates the
  // plan as if every member aggregated where the plan says.
  bool best_effort = false;
};

struct Aggregator {
  NodeId node;
  std::vector<int> members;  // ranks, ascending
  const Path* to_root;
};
// The switches that aggregate, by node id, with their members.
std::vector<Aggregator> Aggregators(const Plan& plan);

// Structural checks: one route per rank, every route starts at the rank's
// host and ends at its aggregator, aggregators are programmable switches or
// the root, every aggregating switch has a path to the root.
absl::Status ValidatePlan(const Topology& topology, const Plan& plan);

// ---- Evaluation -------------------------------------------------------------

enum class Model {
  kPaper,  // only the PS ingress and switch aggregation capacities bind
  kLinks,  // those, plus every link along the plan's paths, both directions
};
const char* ModelName(Model model);
absl::StatusOr<Model> ParseModel(std::string_view name);

struct Evaluation {
  std::vector<double> worker_gbps;  // max-min fair sending rate per rank
  double min_gbps = 0;
  double mean_gbps = 0;
  double switch_aggregation_gbps = 0;  // sum of the rates of workers aggregated in switches
  double ps_ingress_gbps = 0;          // direct workers plus one flow per aggregating switch
  std::map<NodeId, double> switch_load_gbps;
};

// Max-min fair rates of the plan's workers under `model`. A switch's
// aggregated flow runs at the largest rate of its members (the paper's y_s).
absl::StatusOr<Evaluation> Evaluate(const Topology& topology, const Plan& plan, Model model);

// ---- Planners ---------------------------------------------------------------

struct PlannerOptions {
  int k_paths = 4;  // candidate paths per (worker, node) for path-aware planners
  // grid-paths: of those, the paths per (worker, node) that are LP columns
  // (the shortest first). The improvement step tries all k_paths. 1 is as
  // good as 4 on the fat-tree (b) jobs and makes the LP 3x faster at 1000
  // workers (docs/results.md, "Planning time").
  int lp_paths = 1;
  int rounding_samples = 32;  // randomized roundings tried; the best after repair is kept
  bool improve = true;        // local improvement after repair (grid, grid-paths)
  int improve_passes = 8;     // bound on improvement passes (deterministic, not timed)
  // How many roundings are improved, best repaired first; the best result is
  // kept. 1 improves only the best repaired plan. More costs one improvement
  // each and is never worse (docs/planner.md).
  int improve_samples = 32;
  // Starts after the first are made only while the improvement's work so
  // far is below this many worker-rate computations (max-min solves times
  // the workers in each; 3e7 is about 4 s of one core here). A count, not a
  // time, so plans stay deterministic: a 100-worker job gets every start,
  // a 1000-worker one only the first.
  double improve_budget = 3e7;
  // Threads that score the improvement's candidate moves (0: one per core,
  // at most 8). Plans do not depend on it.
  int threads = 0;
  // atp: the rate a worker is assumed to need when a switch admits it
  // (0: the worker's maximum rate T).
  double atp_demand_gbps = 0;
  // atp: run it as ATP does in a network, per packet: every worker
  // aggregates at the first programmable switch on its default path, no
  // capacity is reserved, and the switches pass on what they have no
  // capacity for (Plan::best_effort). Off, the plan is ATP's steady state:
  // a worker takes a switch only if its rate still fits there.
  bool atp_best_effort = false;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string_view name() const = 0;
  virtual absl::StatusOr<::grid::planner::Plan> Plan(const Topology& topology,
                                                     const JobSpec& job) = 0;
};

using PlannerFactory = std::function<std::unique_ptr<Planner>(const PlannerOptions&)>;

// Planners by name. A registry is an ordinary object: make one with the
// built-in planners, add your own, look planners up by name.
class PlannerRegistry {
 public:
  // geryon, switchml, atp, grid, grid-paths.
  static PlannerRegistry WithBuiltins();

  absl::Status Register(std::string name, PlannerFactory factory);
  absl::StatusOr<std::unique_ptr<Planner>> Create(std::string_view name,
                                                  const PlannerOptions& options = {}) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PlannerFactory, std::less<>> factories_;
};

// ---- Path labels and plan files (docs/plan.md) -------------------------------

// Every distinct route of a plan gets a label, 1, 2, ... in order of first
// use: ranks in order (uplink, then result path), then aggregating switches
// in order (to the root, then from it). Switches forward by label.
struct PathLabels {
  std::vector<Path> paths;                        // label l is paths[l - 1]
  std::vector<uint16_t> up, result;               // per rank
  std::map<NodeId, uint16_t> to_root, from_root;  // per aggregating switch
  // The labels of an aggregating switch's paths to and from the root; 0 (no
  // label) for a node that aggregates nothing in the plan.
  uint16_t ToRoot(NodeId node) const { return Find(to_root, node); }
  uint16_t FromRoot(NodeId node) const { return Find(from_root, node); }

 private:
  static uint16_t Find(const std::map<NodeId, uint16_t>& m, NodeId node) {
    auto it = m.find(node);
    return it == m.end() ? 0 : it->second;
  }
};
PathLabels LabelPaths(const Plan& plan);
Path ReversePath(const Path& path);

// `evaluation` (optional) is written as the plan's predicted rates.
std::string PlanToJson(const Topology& topology, const Plan& plan,
                       const Evaluation* evaluation = nullptr, Model model = Model::kLinks);
absl::StatusOr<Plan> ParsePlanJson(const Topology& topology, std::string_view text);

}  // namespace grid::planner

GRID_API_END

#endif  // GRID_PLANNER_H_
