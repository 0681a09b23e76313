// MaxMinSolver finds each round's level with a heap and a cap order. The
// oracle here is the plain progressive filling it replaced, which scans every
// worker and resource each round: the rates must match bit for bit, because
// the planners compare plans by exact score and their plans must not change.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "planner/flow_model.h"
#include "util/random.h"

namespace grid::planner::internal {
namespace {

// Progressive filling by scanning, as flow_model.cc did before the heap.
std::vector<double> ScanningMaxMin(const FlowModel& m) {
  const size_t workers = m.worker_cap.size();
  const size_t groups = m.group_res.size();
  const size_t resources = m.capacity.size();
  std::vector<int> active(groups, 0);
  for (size_t w = 0; w < workers; ++w) {
    if (m.worker_group[w] >= 0) ++active[m.worker_group[w]];
  }
  std::vector<double> rate(workers, 0), fixed(resources, 0), slope(resources, 0);
  std::vector<char> frozen(workers, 0);
  for (size_t w = 0; w < workers; ++w) {
    for (int r : m.worker_res[w]) slope[r] += 1;
  }
  for (size_t g = 0; g < groups; ++g) {
    if (active[g] == 0) continue;
    for (int r : m.group_res[g]) slope[r] += 1;
  }
  size_t unfrozen = workers;
  double level = 0;
  while (unfrozen > 0) {
    double next = std::numeric_limits<double>::infinity();
    for (size_t w = 0; w < workers; ++w) {
      if (!frozen[w]) next = std::min(next, m.worker_cap[w]);
    }
    for (size_t r = 0; r < resources; ++r) {
      if (slope[r] > 0) next = std::min(next, (m.capacity[r] - fixed[r]) / slope[r]);
    }
    level = std::max(level, next);
    std::vector<int> freeze;
    auto mark = [&](size_t w) {
      if (frozen[w]) return;
      frozen[w] = 1;
      freeze.push_back(static_cast<int>(w));
    };
    for (size_t w = 0; w < workers; ++w) {
      if (m.worker_cap[w] <= level + 1e-9 * std::max(1.0, level)) mark(w);
    }
    for (size_t r = 0; r < resources; ++r) {
      const double cap = m.capacity[r];
      if (slope[r] <= 0 || fixed[r] + slope[r] * level < cap - 1e-9 * std::max(1.0, cap)) continue;
      for (size_t w = 0; w < workers; ++w) {
        const auto& res = m.worker_res[w];
        const int g = m.worker_group[w];
        const bool own = std::find(res.begin(), res.end(), static_cast<int>(r)) != res.end();
        const bool group = g >= 0 && std::find(m.group_res[g].begin(), m.group_res[g].end(),
                                               static_cast<int>(r)) != m.group_res[g].end();
        if (own || group) mark(w);
      }
    }
    for (int w : freeze) {
      rate[w] = std::max(0.0, level);
      for (int r : m.worker_res[w]) {
        slope[r] -= 1;
        fixed[r] += rate[w];
      }
      const int g = m.worker_group[w];
      if (g >= 0 && --active[g] == 0) {
        for (int r : m.group_res[g]) {
          slope[r] -= 1;
          fixed[r] += rate[w];
        }
      }
    }
    unfrozen -= freeze.size();
  }
  return rate;
}

// A random model: some resources unused, some shared by many flows, caps with
// ties, groups with and without members, and a few zero capacities.
FlowModel RandomModel(util::Random& rng, int workers, int groups, int resources) {
  FlowModel m;
  m.capacity.resize(resources);
  for (double& c : m.capacity) {
    const double u = rng.Uniform();
    c = u < 0.05 ? 0.0 : u < 0.3 ? 100.0 : std::round(100 + 3100 * rng.Uniform());
  }
  auto pick = [&](int count) {
    count = std::min(count, resources);
    std::vector<int> res;
    while (static_cast<int>(res.size()) < count) {
      const int r = static_cast<int>(rng.Uniform() * resources) % resources;
      if (std::find(res.begin(), res.end(), r) == res.end()) res.push_back(r);
    }
    return res;
  };
  for (int g = 0; g < groups; ++g)
    m.storage.push_back(pick(1 + static_cast<int>(rng.Uniform() * 5)));
  for (int w = 0; w < workers; ++w) {
    const double u = rng.Uniform();
    m.worker_cap.push_back(u < 0.5 ? 100.0 : u < 0.8 ? 40.0 : 1 + 99 * rng.Uniform());
    const int g = static_cast<int>(rng.Uniform() * (groups + 1)) - 1;  // -1: direct
    m.worker_group.push_back(g);
    m.storage.push_back(pick(static_cast<int>(rng.Uniform() * 8)));
  }
  for (int g = 0; g < groups; ++g) m.group_res.emplace_back(m.storage[g]);
  for (int w = 0; w < workers; ++w) m.worker_res.emplace_back(m.storage[groups + w]);
  return m;
}

TEST(MaxMinSolver, MatchesScanningProgressiveFillingBitForBit) {
  util::Random rng(20261201);
  MaxMinSolver solver;  // reused, as the planners reuse it
  int models = 0;
  for (int round = 0; round < 400; ++round) {
    const int workers = 1 + static_cast<int>(rng.Uniform() * 60);
    const int groups = static_cast<int>(rng.Uniform() * 6);
    const int resources = 1 + static_cast<int>(rng.Uniform() * 40);
    const FlowModel m = RandomModel(rng, workers, groups, resources);
    const std::vector<double> expected = ScanningMaxMin(m);
    const std::vector<double>& got = solver.Solve(m);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t w = 0; w < expected.size(); ++w) {
      ASSERT_EQ(got[w], expected[w]) << "model " << round << ", worker " << w;
    }
    ++models;
  }
  EXPECT_EQ(models, 400);
}

// The planners' pattern: one model, one worker's resources changed per
// solve, the caps the same each time (the cap order is kept between solves).
TEST(MaxMinSolver, MatchesAcrossSolvesOfOneChangingModel) {
  util::Random rng(7);
  FlowModel m = RandomModel(rng, 80, 4, 30);
  std::vector<std::vector<int>> alternatives;
  for (int i = 0; i < 20; ++i) {
    std::vector<int> res;
    for (int k = 0; k < 4; ++k) res.push_back(static_cast<int>(rng.Uniform() * 30) % 30);
    std::sort(res.begin(), res.end());
    res.erase(std::unique(res.begin(), res.end()), res.end());
    alternatives.push_back(res);
  }
  MaxMinSolver solver;
  for (int step = 0; step < 200; ++step) {
    const int w = static_cast<int>(rng.Uniform() * 80) % 80;
    m.worker_res[w] = alternatives[step % alternatives.size()];
    if (step % 50 == 49) m.worker_cap[w] = 10 + step;  // and now and then a cap
    const std::vector<double> expected = ScanningMaxMin(m);
    const std::vector<double>& got = solver.Solve(m);
    for (size_t v = 0; v < expected.size(); ++v) {
      ASSERT_EQ(got[v], expected[v]) << "step " << step << ", worker " << v;
    }
  }
}

// A hand-checked case, so the oracle itself is pinned: two workers share a
// 100 Gbps resource, a third is alone behind its cap of 30, and a group of
// two members shares the PS (capacity 50) with a direct worker.
TEST(MaxMinSolver, HandCheckedRates) {
  FlowModel m;
  m.capacity = {100, 50, 1000};
  m.storage = {{1}, {0}, {0}, {2}, {2}, {2}, {1}};
  m.group_res = {m.storage[0]};
  m.worker_cap = {100, 100, 30, 100, 100, 100};
  m.worker_group = {-1, -1, -1, 0, 0, -1};
  for (size_t w = 0; w < 6; ++w) m.worker_res.emplace_back(m.storage[1 + w]);
  // Workers 0 and 1 share resource 0: 50 each. Worker 2 stops at its cap.
  // The PS (resource 1) carries the group's flow and worker 5: 25 each, so
  // the group's members and worker 5 freeze at 25.
  const std::vector<double> expected = {50, 50, 30, 25, 25, 25};
  EXPECT_EQ(ScanningMaxMin(m), expected);
  MaxMinSolver solver;
  EXPECT_EQ(solver.Solve(m), expected);
}

}  // namespace
}  // namespace grid::planner::internal
