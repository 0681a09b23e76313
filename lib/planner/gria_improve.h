// Internal: the grid planners' improvement step, a hill climb on (min rate,
// mean rate) over the rounded plan (docs/planner.md, grid step 4), and the
// evaluator that scores its candidate moves on several threads.
#ifndef GRID_LIB_PLANNER_GRIA_IMPROVE_H_
#define GRID_LIB_PLANNER_GRIA_IMPROVE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/types/span.h"
#include "grid/planner.h"
#include "planner/flow_model.h"
#include "planner/gria_lp.h"

namespace grid::planner::internal {

// A plan in index form: which option each worker takes, and which path on to
// the root each switch takes.
struct Assignment {
  std::vector<int> option;     // per rank
  std::vector<int> root_path;  // per switch index
};

struct Score {
  double min = 0;
  double mean = 0;
};

// Lexicographic: the minimum rate first (the GRIA objective), then the mean.
inline bool Better(const Score& a, const Score& b) {
  const double tol_min = 1e-9 * std::max(1.0, std::fabs(b.min));
  if (a.min > b.min + tol_min) return true;
  if (a.min < b.min - tol_min) return false;
  return a.mean > b.mean + 1e-9 * std::max(1.0, std::fabs(b.mean));
}

class FastEvaluator;

// Scores batches of assignments on several threads, each with its own
// evaluator (the calling thread is one of them). Which thread scores which
// trial does not change any score, so plans do not depend on the count.
class BatchEvaluator {
 public:
  // threads <= 0: one.
  BatchEvaluator(const Topology& topo, const JobSpec& job, const ResourceIndex& index,
                 const Candidates& c, int threads);
  ~BatchEvaluator();
  BatchEvaluator(const BatchEvaluator&) = delete;
  BatchEvaluator& operator=(const BatchEvaluator&) = delete;

  size_t threads() const { return evals_.size(); }
  double WorkerCap(size_t rank) const;
  // Max-min solves so far, times the workers in each: the improvement's
  // work budget is counted in these (PlannerOptions::improve_budget).
  double work() const { return work_; }

  // On the calling thread.
  Score Evaluate(const Assignment& a);

  // Scores every trial, on every thread.
  void EvaluateAll(absl::Span<const Assignment> trials, std::vector<Score>& scores);

 private:
  void Drain(FastEvaluator& eval);
  void Help(size_t i);

  std::vector<std::unique_ptr<FastEvaluator>> evals_;
  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  uint64_t generation_ = 0;  // under mu_: one per batch
  size_t busy_ = 0;          // under mu_: helpers still on this batch
  bool stop_ = false;        // under mu_
  absl::Span<const Assignment> trials_;
  std::vector<Score>* scores_ = nullptr;
  std::atomic<size_t> next_{0};
  double work_ = 0;
};

// Twin classes (docs/planner.md): one id per (LP class, worker cap).
std::vector<int> Twins(const Candidates& c, const BatchEvaluator& eval);

// The threads to score moves on: `requested`, or one per core (at most 8).
int Threads(int requested);

// Climbs from `a` (changed in place) for at most `passes` passes; returns
// its final score. `twins` from Twins().
Score Improve(const Candidates& c, BatchEvaluator& eval, const std::vector<int>& twins, int passes,
              Assignment& a);

}  // namespace grid::planner::internal

#endif  // GRID_LIB_PLANNER_GRIA_IMPROVE_H_
