#include "planner/gria_improve.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_set.h"

namespace grid::planner::internal {

// Evaluates assignments quickly: the flow model's lists point at the
// candidates' precomputed resource lists, so a move only swaps a span.
class FastEvaluator {
 public:
  FastEvaluator(const Topology& topo, const JobSpec& job, const ResourceIndex& index,
                const Candidates& c)
      : c_(c) {
    model_.capacity = Capacities(topo, job, index);
    const size_t n = job.workers.size();
    model_.worker_cap.resize(n);
    for (size_t r = 0; r < n; ++r)
      model_.worker_cap[r] = WorkerGbps(topo, job, static_cast<int>(r));
    model_.worker_res.resize(n);
    model_.worker_group.resize(n);
    model_.group_res.resize(c.num_switches());
  }

  const std::vector<double>& Rates(const Assignment& a) {
    for (size_t r = 0; r < a.option.size(); ++r) {
      const Option& o = c_.worker[r][a.option[r]];
      model_.worker_res[r] = o.res;
      model_.worker_group[r] = o.node == c_.root_index() ? -1 : o.node;
    }
    for (int s = 0; s < c_.num_switches(); ++s) {
      model_.group_res[s] = c_.to_root[s][a.root_path[s]].res;
    }
    return solver_.Solve(model_);
  }

  Score Evaluate(const Assignment& a) {
    const Summary s = Summarize(Rates(a));
    return {s.min, s.mean};
  }

  double WorkerCap(size_t rank) const { return model_.worker_cap[rank]; }

 private:
  const Candidates& c_;
  FlowModel model_;
  MaxMinSolver solver_;
};

BatchEvaluator::BatchEvaluator(const Topology& topo, const JobSpec& job, const ResourceIndex& index,
                               const Candidates& c, int threads) {
  for (int i = 0; i < std::max(1, threads); ++i)
    evals_.push_back(std::make_unique<FastEvaluator>(topo, job, index, c));
  for (size_t i = 1; i < evals_.size(); ++i) helpers_.emplace_back([this, i] { Help(i); });
}

BatchEvaluator::~BatchEvaluator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

double BatchEvaluator::WorkerCap(size_t rank) const { return evals_[0]->WorkerCap(rank); }

Score BatchEvaluator::Evaluate(const Assignment& a) {
  work_ += static_cast<double>(a.option.size());
  return evals_[0]->Evaluate(a);
}

void BatchEvaluator::EvaluateAll(absl::Span<const Assignment> trials, std::vector<Score>& scores) {
  scores.resize(trials.size());
  for (const Assignment& a : trials) work_ += static_cast<double>(a.option.size());
  trials_ = trials;
  scores_ = &scores;
  next_.store(0);
  if (!helpers_.empty() && trials.size() > 1) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = helpers_.size();
      ++generation_;
    }
    work_cv_.notify_all();
    Drain(*evals_[0]);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return busy_ == 0; });
  } else {
    Drain(*evals_[0]);
  }
}

void BatchEvaluator::Drain(FastEvaluator& eval) {
  for (size_t i = next_.fetch_add(1); i < trials_.size(); i = next_.fetch_add(1))
    (*scores_)[i] = eval.Evaluate(trials_[i]);
}

void BatchEvaluator::Help(size_t i) {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Drain(*evals_[i]);
    std::lock_guard<std::mutex> lock(mu_);
    if (--busy_ == 0) done_cv_.notify_one();
  }
}

namespace {

// The moves of one kind, in the hill climb's fixed order. Next() builds the
// next trial from the current assignment; a position saved after a trial
// lets the climb resume right after it once it is taken.
constexpr uint64_t kNoTwin = UINT64_MAX;

// Where a visit of moves stands.
template <typename P>
class Visit {
 public:
  using Position = P;
  const P& Save() const { return at_; }
  void Resume(const P& p) { at_ = p; }

 protected:
  P at_;
};

struct SwitchTarget {  // a switch index, and a node or path index
  int s = 0, t = 0;
};

// merge: every member of one switch to another node (the plateau that single
// moves cannot cross: a switch's flow leaves the PS only when its last
// member does). After a merge is taken, the climb goes on with the next
// switch.
class MergeMoves {
 public:
  MergeMoves(const Candidates& c, const std::vector<std::vector<int>>& first_at)
      : c_(c), first_at_(first_at) {}
  struct Position {
    int s = 0, t = 0;
    std::vector<int> members;
    bool listed = false;
  };
  bool Next(const Assignment& a, Assignment& trial, uint64_t& twin) {
    twin = kNoTwin;
    for (; at_.s < c_.num_switches(); ++at_.s, at_.t = 0, at_.listed = false) {
      if (!at_.listed) {
        at_.members.clear();
        for (size_t w = 0; w < a.option.size(); ++w) {
          if (c_.worker[w][a.option[w]].node == at_.s) at_.members.push_back(static_cast<int>(w));
        }
        at_.listed = true;
      }
      if (at_.members.empty()) continue;
      if (at_.t == at_.s) ++at_.t;
      if (at_.t >= static_cast<int>(c_.nodes.size())) continue;
      trial = a;
      for (int w : at_.members) trial.option[w] = first_at_[w][at_.t];
      ++at_.t;
      return true;
    }
    return false;
  }
  const Position& Save() const { return at_; }
  void Resume(const Position& p) {
    at_ = p;
    ++at_.s;
    at_.t = 0;
    at_.listed = false;
  }

 private:
  const Candidates& c_;
  const std::vector<std::vector<int>>& first_at_;
  Position at_;
};

// move: one worker to another option, at a node in use (or the root):
// opening a new switch adds a flow at the PS, which the LP rounding and
// merges decide. Twins are workers of one class with the same cap: their
// candidate lists are aligned and differ only in their own access link, so
// moving one twin from option o to o' gives the same rates, permuted, as
// moving another from o to o'. `twin` names that move, and the climb skips
// it once rejected until something is taken.
struct WorkerOption {
  size_t w = 0;
  int o = 0;
};

class SingleMoves : public Visit<WorkerOption> {
 public:
  SingleMoves(const Candidates& c, const Assignment& a, const std::vector<int>& twins)
      : c_(c), twins_(twins), in_use_(c.nodes.size(), false) {
    in_use_[c.root_index()] = true;
    for (size_t w = 0; w < a.option.size(); ++w) in_use_[c.worker[w][a.option[w]].node] = true;
  }
  bool Next(const Assignment& a, Assignment& trial, uint64_t& twin) {
    for (; at_.w < a.option.size(); ++at_.w, at_.o = 0) {
      const std::vector<Option>& options = c_.worker[at_.w];
      for (; at_.o < static_cast<int>(options.size()); ++at_.o) {
        if (at_.o == a.option[at_.w] || !in_use_[options[at_.o].node]) continue;
        twin = (static_cast<uint64_t>(twins_[at_.w]) << 40) |
               (static_cast<uint64_t>(a.option[at_.w]) << 20) | static_cast<uint64_t>(at_.o);
        trial = a;
        trial.option[at_.w] = at_.o++;
        return true;
      }
    }
    return false;
  }

 private:
  const Candidates& c_;
  const std::vector<int>& twins_;
  std::vector<bool> in_use_;
};

// path: a switch's path on to the root (grid-paths).
class PathMoves : public Visit<SwitchTarget> {
 public:
  explicit PathMoves(const Candidates& c) : c_(c) {}
  bool Next(const Assignment& a, Assignment& trial, uint64_t& twin) {
    twin = kNoTwin;
    for (; at_.s < c_.num_switches(); ++at_.s, at_.t = 0) {
      for (; at_.t < static_cast<int>(c_.to_root[at_.s].size()); ++at_.t) {
        if (at_.t == a.root_path[at_.s]) continue;
        trial = a;
        trial.root_path[at_.s] = at_.t++;
        return true;
      }
    }
    return false;
  }

 private:
  const Candidates& c_;
};

// Tries `moves` in order and takes every one that is better than the
// assignment at that point (first improvement). Trials are scored a batch at
// a time on every thread; the first better one in the batch is taken, the
// rest are dropped, and the moves resume right after it. The outcome is
// exactly that of trying the moves one by one.
template <typename Moves>
bool Climb(Moves& moves, BatchEvaluator& eval, Assignment& a, Score& best) {
  const size_t batch = eval.threads() == 1 ? 1 : 4 * eval.threads();
  absl::flat_hash_set<uint64_t> rejected;  // twin moves, since the last one taken
  std::vector<Assignment> trials(batch);
  std::vector<uint64_t> twins(batch);
  std::vector<typename Moves::Position> after(batch);
  std::vector<Score> scores;
  bool improved = false;
  while (true) {
    size_t n = 0;
    while (n < batch && moves.Next(a, trials[n], twins[n])) {
      if (twins[n] != kNoTwin &&
          (rejected.contains(twins[n]) ||
           std::find(twins.begin(), twins.begin() + n, twins[n]) != twins.begin() + n)) {
        continue;  // the same as one rejected, or as one earlier in this batch
      }
      after[n] = moves.Save();
      ++n;
    }
    if (n == 0) return improved;
    eval.EvaluateAll(absl::MakeConstSpan(trials.data(), n), scores);
    for (size_t i = 0; i < n; ++i) {
      if (Better(scores[i], best)) {
        best = scores[i];
        a = trials[i];
        moves.Resume(after[i]);
        rejected.clear();
        improved = true;
        break;
      }
      if (twins[i] != kNoTwin) rejected.insert(twins[i]);
    }
  }
}

}  // namespace

// Twin classes (see SingleMoves): one id per (LP class, worker cap).
std::vector<int> Twins(const Candidates& c, const BatchEvaluator& eval) {
  std::vector<int> twins(c.worker.size());
  std::map<std::pair<int, double>, int> ids;
  for (size_t w = 0; w < c.worker.size(); ++w) {
    const auto key = std::make_pair(c.class_of[w], eval.WorkerCap(w));
    twins[w] = ids.emplace(key, static_cast<int>(ids.size())).first->second;
  }
  return twins;
}

int Threads(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

// Hill climbing on (min rate, mean rate), deterministic order, bounded
// passes: merges, then single moves, then paths, until a pass changes
// nothing.
Score Improve(const Candidates& c, BatchEvaluator& eval, const std::vector<int>& twins, int passes,
              Assignment& a) {
  Score best = eval.Evaluate(a);
  // First option of each worker at each node: where a merge sends it.
  std::vector<std::vector<int>> first_at(c.worker.size(), std::vector<int>(c.nodes.size(), -1));
  for (size_t w = 0; w < c.worker.size(); ++w) {
    for (size_t o = c.worker[w].size(); o-- > 0;)
      first_at[w][c.worker[w][o].node] = static_cast<int>(o);
  }
  for (int pass = 0; pass < passes; ++pass) {
    MergeMoves merges(c, first_at);
    bool improved = Climb(merges, eval, a, best);
    SingleMoves singles(c, a, twins);
    improved = Climb(singles, eval, a, best) || improved;
    PathMoves paths(c);
    improved = Climb(paths, eval, a, best) || improved;
    if (!improved) break;
  }
  return best;
}

}  // namespace grid::planner::internal
