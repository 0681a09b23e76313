// The GRID planners: the GRIA LP relaxation solved with COIN-OR Clp, R-GRIA
// randomized rounding, a repair step that makes every capacity hold, and a
// local improvement. `grid` is the published model (aggregation node only,
// default routes, links never bind); `grid-paths` also chooses paths among
// k shortest and respects every link's capacity. docs/planner.md has the
// formulation.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "planner/builtin.h"
#include "planner/flow_model.h"
#include "planner/gria_improve.h"
#include "planner/gria_lp.h"
#include "util/random.h"

namespace grid::planner::internal {
namespace {

int SampleIndex(const std::vector<double>& weights, util::Random& rng) {
  double total = 0;
  for (double v : weights) total += std::max(0.0, v);
  if (!(total > 1e-12)) return -1;
  double u = rng.Uniform() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    u -= std::max(0.0, weights[i]);
    if (u < 0) return static_cast<int>(i);
  }
  // Rounding left u at zero: the last positive weight.
  for (size_t i = weights.size(); i-- > 0;) {
    if (weights[i] > 0) return static_cast<int>(i);
  }
  return -1;
}

// R-GRIA: each worker picks an option with probability proportional to its
// LP rate; each switch picks a path on proportional to its LP flow.
Assignment Round(const Candidates& c, const LpSolution& lp, util::Random& rng) {
  Assignment a;
  a.option.resize(c.worker.size());
  for (size_t w = 0; w < c.worker.size(); ++w) {
    int pick = SampleIndex(lp.r[c.class_of[w]], rng);
    if (pick < 0) {  // no LP rate at all: send to the root
      for (size_t o = 0; o < c.worker[w].size(); ++o) {
        if (c.worker[w][o].node == c.root_index()) {
          pick = static_cast<int>(o);
          break;
        }
      }
    }
    a.option[w] = pick;
  }
  a.root_path.resize(c.num_switches());
  for (int s = 0; s < c.num_switches(); ++s)
    a.root_path[s] = std::max(0, SampleIndex(lp.y[s], rng));
  return a;
}

// The loads the rounded plan would put on each resource if every worker kept
// its LP rate (as R-GRIA prescribes): the largest relative excess.
double Violation(const Candidates& c, const LpSolution& lp, const Assignment& a,
                 const std::vector<double>& capacity, double* lambda_rounded) {
  std::vector<double> load(capacity.size(), 0);
  std::vector<double> group_rate(c.num_switches(), 0);
  double min_rate = std::numeric_limits<double>::infinity();
  for (size_t w = 0; w < c.worker.size(); ++w) {
    double rate = 0;
    for (double v : lp.r[c.class_of[w]]) rate += v;
    min_rate = std::min(min_rate, rate);
    const Option& o = c.worker[w][a.option[w]];
    for (int res : o.res) load[res] += rate;
    if (o.node != c.root_index()) group_rate[o.node] = std::max(group_rate[o.node], rate);
  }
  for (int s = 0; s < c.num_switches(); ++s) {
    if (group_rate[s] == 0) continue;
    for (int res : c.to_root[s][a.root_path[s]].res) load[res] += group_rate[s];
  }
  double worst = 0;
  for (size_t r = 0; r < capacity.size(); ++r) {
    if (capacity[r] > 0) worst = std::max(worst, (load[r] - capacity[r]) / capacity[r]);
  }
  *lambda_rounded = c.worker.empty() ? 0 : min_rate;
  return worst;
}

// A repaired rounding and its score.
struct Repaired {
  Score score;
  Assignment assignment;
};

class GridPlanner : public Planner {
 public:
  GridPlanner(const PlannerOptions& options, bool path_aware)
      : options_(options), path_aware_(path_aware) {}

  std::string_view name() const override { return path_aware_ ? "grid-paths" : "grid"; }

  absl::StatusOr<::grid::planner::Plan> Plan(const Topology& topo, const JobSpec& job) override {
    if (job.workers.empty()) return absl::InvalidArgumentError("job has no workers");
    // grid plans in the published model (it does not see links); grid-paths
    // sees every link.
    const Model model = path_aware_ ? Model::kLinks : Model::kPaper;
    const ResourceIndex index(topo, model);
    auto cands = BuildCandidates(topo, job, index, path_aware_ ? options_.k_paths : 1);
    if (!cands.ok()) return cands.status();
    const Candidates& c = *cands;
    BatchEvaluator eval(topo, job, index, c, Threads(options_.threads));
    const std::vector<double> capacity = Capacities(topo, job, index);
    auto lp = SolveLp(c, capacity, path_aware_ ? options_.lp_paths : 1);
    if (!lp.ok()) return lp.status();

    PlanDiagnostics diag;
    diag.lambda_lp = lp->lambda;
    diag.rounding_samples = std::max(1, options_.rounding_samples);
    std::vector<Repaired> repaired;  // every sample, in sample order
    size_t best_sample = 0;
    for (int sample = 0; sample < diag.rounding_samples; ++sample) {
      util::Random rng(job.seed * 0x9e3779b97f4a7c15ull + 1000003ull * (sample + 1));
      Assignment a = Round(c, *lp, rng);
      double lambda_rounded = 0;
      const double violation = Violation(c, *lp, a, capacity, &lambda_rounded);
      // Repair: max-min fair rates under every capacity, i.e. the rates
      // scaled back until nothing is exceeded.
      const Score s = eval.Evaluate(a);
      if (sample == 0 || Better(s, repaired[best_sample].score)) {
        best_sample = repaired.size();
        diag.lambda_rounded = lambda_rounded;
        diag.max_capacity_violation = violation;
        diag.lambda_repaired = s.min;
      }
      repaired.push_back({s, std::move(a)});
    }
    Assignment best = std::move(repaired[best_sample].assignment);
    diag.lambda_improved = diag.lambda_repaired;
    if (options_.improve) {
      diag.lambda_improved = ImproveStarts(c, eval, repaired, best_sample, best, diag).min;
    }

    ::grid::planner::Plan plan;
    plan.planner = std::string(name());
    plan.job = job;
    plan.diagnostics = diag;
    plan.workers.resize(job.workers.size());
    for (size_t r = 0; r < job.workers.size(); ++r) {
      const Option& o = c.worker[r][best.option[r]];
      plan.workers[r] = {c.nodes[o.node], o.path};
      if (o.node != c.root_index() && !plan.to_root.count(c.nodes[o.node])) {
        plan.to_root[c.nodes[o.node]] = c.to_root[o.node][best.root_path[o.node]].path;
      }
    }
    return plan;
  }

 private:
  // The hill climb ends where its start leads, and the best repaired start
  // is not always the best finish: improve the best few. `best` goes first,
  // so one start is exactly the single improvement; the rest follow by
  // (min, mean), then sample order (an exact order, for sort). Returns the
  // best finish's score and leaves that plan in `best`.
  Score ImproveStarts(const Candidates& c, BatchEvaluator& eval, std::vector<Repaired>& repaired,
                      size_t best_sample, Assignment& best, PlanDiagnostics& diag) const {
    std::vector<size_t> order;
    for (size_t i = 0; i < repaired.size(); ++i) {
      if (i != best_sample) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      const Score& a = repaired[x].score;
      const Score& b = repaired[y].score;
      return a.min != b.min ? a.min > b.min : a.mean > b.mean;
    });
    const size_t others =
        std::min(order.size(), static_cast<size_t>(std::max(0, options_.improve_samples - 1)));
    const std::vector<int> twins = Twins(c, eval);
    const double start_work = eval.work();
    Score best_improved = Improve(c, eval, twins, options_.improve_passes, best);
    diag.improve_starts = 1;
    for (size_t i = 0; i < others; ++i) {
      // Starts after the first run while the work so far fits the budget
      // (a count, not a time, so plans stay deterministic).
      if (eval.work() - start_work >= options_.improve_budget) break;
      Assignment a = std::move(repaired[order[i]].assignment);
      const Score s = Improve(c, eval, twins, options_.improve_passes, a);
      ++diag.improve_starts;
      if (Better(s, best_improved)) {
        best_improved = s;
        best = std::move(a);
      }
    }
    return best_improved;
  }

  PlannerOptions options_;
  bool path_aware_;
};

}  // namespace

absl::StatusOr<double> GriaLpOptimum(const Topology& topo, const JobSpec& job, bool path_aware,
                                     int k_paths) {
  const ResourceIndex index(topo, path_aware ? Model::kLinks : Model::kPaper);
  auto c = BuildCandidates(topo, job, index, path_aware ? k_paths : 1);
  if (!c.ok()) return c.status();
  auto lp = SolveLp(*c, Capacities(topo, job, index), path_aware ? k_paths : 1);
  if (!lp.ok()) return lp.status();
  return lp->lambda;
}

std::unique_ptr<Planner> MakeGrid(const PlannerOptions& options, bool path_aware) {
  return std::make_unique<GridPlanner>(options, path_aware);
}

}  // namespace grid::planner::internal
