#include "planner/flow_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace grid::planner::internal {
namespace {

// Heap order: the resource that fills first on top.
bool Later(const MaxMinSolver::Fill& a, const MaxMinSolver::Fill& b) { return a.level > b.level; }

}  // namespace

// Progressive filling: every unfrozen flow grows at the same rate until a
// worker reaches its cap or a resource fills; the flows through it freeze
// there, and the rest go on.
const std::vector<double>& MaxMinSolver::Solve(const FlowModel& m) {
  const size_t workers = m.worker_cap.size();
  rate_.assign(workers, 0);
  frozen_.assign(workers, 0);
  IndexMembers(m);
  IndexResources(m);
  OrderByCap(m);
  size_t unfrozen = workers;
  double level = 0;
  while (unfrozen > 0) {
    level = std::max(level, NextLevel(m, level));
    to_freeze_.clear();
    FreezeSaturated(m, level);
    unfrozen -= Settle(m, level);
  }
  for (int r : used_) compact_[r] = -1;
  return rate_;
}

void MaxMinSolver::IndexMembers(const FlowModel& m) {
  const size_t workers = m.worker_cap.size();
  const size_t groups = m.group_res.size();
  active_.assign(groups, 0);
  for (size_t w = 0; w < workers; ++w) {
    if (m.worker_group[w] >= 0) ++active_[m.worker_group[w]];
  }
  // Members per group, as CSR.
  member_start_.assign(groups + 1, 0);
  for (size_t w = 0; w < workers; ++w) {
    if (m.worker_group[w] >= 0) ++member_start_[m.worker_group[w] + 1];
  }
  for (size_t g = 0; g < groups; ++g) member_start_[g + 1] += member_start_[g];
  member_.resize(member_start_[groups]);
  fill_ = member_start_;
  for (size_t w = 0; w < workers; ++w) {
    if (m.worker_group[w] >= 0) member_[fill_[m.worker_group[w]]++] = static_cast<int>(w);
  }
}

// Only resources something uses take part. Each keeps the load of frozen
// flows (fixed) and the number of flows still growing (slope), updated as
// flows freeze, and its users (workers, then groups) as CSR.
void MaxMinSolver::IndexResources(const FlowModel& m) {
  // Raw pointers in locals: the loops below store through them, and the
  // compiler would otherwise reload every vector's data pointer after each
  // store (this runs for every candidate move the planners score).
  const size_t workers = m.worker_cap.size();
  const size_t groups = m.group_res.size();
  if (compact_.size() < m.capacity.size()) compact_.resize(m.capacity.size(), -1);
  used_.clear();
  int* compact = compact_.data();
  const int* active = active_.data();
  auto touch = [&](int r) {
    if (compact[r] < 0) {
      compact[r] = static_cast<int>(used_.size());
      used_.push_back(r);
    }
  };
  for (size_t w = 0; w < workers; ++w) {
    for (int r : m.worker_res[w]) touch(r);
  }
  for (size_t g = 0; g < groups; ++g) {
    if (active[g] == 0) continue;
    for (int r : m.group_res[g]) touch(r);
  }
  const size_t resources = used_.size();
  fixed_.assign(resources, 0);
  slope_.assign(resources, 0);
  user_start_.assign(resources + 1, 0);
  int* start = user_start_.data();
  for (size_t w = 0; w < workers; ++w) {
    for (int r : m.worker_res[w]) ++start[compact[r] + 1];
  }
  for (size_t g = 0; g < groups; ++g) {
    if (active[g] == 0) continue;
    for (int r : m.group_res[g]) ++start[compact[r] + 1];
  }
  double* slope = slope_.data();
  for (size_t c = 0; c < resources; ++c) {
    slope[c] = start[c + 1];
    start[c + 1] += start[c];
  }
  user_.resize(start[resources]);
  fill_.assign(start, start + resources + 1);
  int* fill = fill_.data();
  int* user = user_.data();
  // Workers are stored as w, groups as -(g + 1).
  for (size_t w = 0; w < workers; ++w) {
    for (int r : m.worker_res[w]) user[fill[compact[r]]++] = static_cast<int>(w);
  }
  for (size_t g = 0; g < groups; ++g) {
    if (active[g] == 0) continue;
    for (int r : m.group_res[g]) user[fill[compact[r]]++] = -static_cast<int>(g) - 1;
  }
  // Every used resource's fill level, and the tolerance FreezeSaturated
  // grants a full resource (1e-9 of its capacity), doubled to cover rounding.
  version_.assign(resources, 0);
  touched_.assign(resources, 0);
  heap_.clear();
  double largest = 1.0;
  for (size_t c = 0; c < resources; ++c) {
    largest = std::max(largest, std::fabs(m.capacity[used_[c]]));
    if (slope[c] > 0) {
      heap_.push_back({m.capacity[used_[c]] / slope[c], static_cast<int>(c), 0});
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), Later);
  slack_ = 2e-9 * largest;
}

// Workers by cap, ascending. Planners solve many models with the same caps,
// so the last order is kept while the caps are the same.
void MaxMinSolver::OrderByCap(const FlowModel& m) {
  next_cap_ = 0;
  if (caps_sorted_for_ == m.worker_cap && by_cap_.size() == m.worker_cap.size()) return;
  caps_sorted_for_ = m.worker_cap;
  by_cap_.resize(m.worker_cap.size());
  for (size_t w = 0; w < by_cap_.size(); ++w) by_cap_[w] = static_cast<int>(w);
  std::stable_sort(by_cap_.begin(), by_cap_.end(),
                   [&](int a, int b) { return m.worker_cap[a] < m.worker_cap[b]; });
}

void MaxMinSolver::FileFill(const FlowModel& m, int c) {
  heap_.push_back({(m.capacity[used_[c]] - fixed_[c]) / slope_[c], c, version_[c]});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

void MaxMinSolver::DropStale() {
  while (!heap_.empty() && heap_.front().version != version_[heap_.front().c]) {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
  }
}

// The level where the next worker reaches its cap or the next resource fills.
double MaxMinSolver::NextLevel(const FlowModel& m, double level) {
  double next = std::numeric_limits<double>::infinity();
  while (next_cap_ < by_cap_.size() && frozen_[by_cap_[next_cap_]]) ++next_cap_;
  if (next_cap_ < by_cap_.size()) next = m.worker_cap[by_cap_[next_cap_]];
  DropStale();
  if (!heap_.empty()) next = std::min(next, heap_.front().level);
  return std::max(level, next);
}

void MaxMinSolver::FreezeSaturated(const FlowModel& m, double level) {
  const double at_cap = level + 1e-9 * std::max(1.0, level);
  for (size_t i = next_cap_; i < by_cap_.size() && m.worker_cap[by_cap_[i]] <= at_cap; ++i) {
    Freeze(by_cap_[i]);
  }
  // A resource full within the tolerance below fills at most slack_ above
  // the level; those are popped and checked exactly.
  const double bound = level + slack_ + 1e-9 * std::max(1.0, std::fabs(level));
  popped_.clear();
  for (DropStale(); !heap_.empty() && heap_.front().level <= bound; DropStale()) {
    popped_.push_back(heap_.front().c);
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
  }
  for (int c : popped_) {
    const double cap = m.capacity[used_[c]];
    if (slope_[c] <= 0 || fixed_[c] + slope_[c] * level < cap - 1e-9 * std::max(1.0, cap)) {
      FileFill(m, c);  // not full yet: back in the heap, unchanged
      continue;
    }
    for (int u = user_start_[c]; u < user_start_[c + 1]; ++u) {
      const int who = user_[u];
      if (who >= 0) {
        Freeze(who);
      } else {
        const int g = -who - 1;
        for (int i = member_start_[g]; i < member_start_[g + 1]; ++i) Freeze(member_[i]);
      }
    }
  }
}

// Frozen flows stop adding slope and start adding load. Returns how many.
// Every flow frozen in a round adds the same level, so the order they are
// settled in does not change any sum.
size_t MaxMinSolver::Settle(const FlowModel& m, double level) {
  changed_.clear();
  // Local pointers, as in IndexResources: touched_ is a char vector, and a
  // store through it may alias anything.
  const int* compact = compact_.data();
  double* slope = slope_.data();
  double* fixed = fixed_.data();
  char* touched = touched_.data();
  double* rate = rate_.data();
  int* active = active_.data();
  auto load = [&](int r, double value) {
    const int c = compact[r];
    slope[c] -= 1;
    fixed[c] += value;
    if (!touched[c]) {
      touched[c] = 1;
      changed_.push_back(c);
    }
  };
  for (int w : to_freeze_) {
    const double v = std::max(0.0, level);
    rate[w] = v;
    for (int r : m.worker_res[w]) load(r, v);
    const int g = m.worker_group[w];
    if (g >= 0 && --active[g] == 0) {
      // The group's flow stops growing at the level its last member froze.
      for (int r : m.group_res[g]) load(r, v);
    }
  }
  for (int c : changed_) {
    touched[c] = 0;
    ++version_[c];
    if (slope[c] > 0) FileFill(m, c);
  }
  return to_freeze_.size();
}

std::vector<double> MaxMinRates(const FlowModel& model) {
  MaxMinSolver solver;
  return solver.Solve(model);
}

ResourceIndex::ResourceIndex(const Topology& topology, Model model)
    : switch_index_(topology.num_nodes(), -1), links_(model == Model::kLinks) {
  size_ = 1;
  for (NodeId s : topology.ProgrammableSwitches()) switch_index_[s] = size_++;
  arc_base_ = size_;
  if (links_) size_ += topology.num_arcs();
}

std::vector<double> Capacities(const Topology& topology, const JobSpec& job,
                               const ResourceIndex& index) {
  std::vector<double> cap(index.size(), 0);
  cap[index.ps()] = PsIngressGbps(topology, job);
  for (NodeId s : topology.ProgrammableSwitches())
    cap[index.sw(s)] = topology.node(s).capacity_gbps;
  if (index.links()) {
    for (topology::ArcId a = 0; a < topology.num_arcs(); ++a)
      cap[index.arc(a)] = topology.ArcGbps(a);
  }
  return cap;
}

void AppendPathResources(const Path& path, const ResourceIndex& index, std::vector<int>* out) {
  if (!index.links()) return;
  for (topology::ArcId a : path.arcs) {
    out->push_back(index.arc(a));
    out->push_back(index.arc(Topology::Reverse(a)));
  }
}

FlowModel BuildFlowModel(const Topology& topology, const Plan& plan, const ResourceIndex& index) {
  FlowModel m;
  m.capacity = Capacities(topology, plan.job, index);
  const int n = static_cast<int>(plan.workers.size());
  m.worker_cap.resize(n);
  m.worker_group.assign(n, -1);
  // Lists first (groups, then workers), spans once the storage is complete.
  std::map<NodeId, int> group_of;
  for (const auto& [sw, path] : plan.to_root) {
    group_of[sw] = static_cast<int>(m.storage.size());
    std::vector<int> res = {index.ps()};
    AppendPathResources(path, index, &res);
    m.storage.push_back(std::move(res));
  }
  const size_t groups = m.storage.size();
  for (int r = 0; r < n; ++r) {
    const WorkerRoute& route = plan.workers[r];
    m.worker_cap[r] = WorkerGbps(topology, plan.job, r);
    std::vector<int> res;
    AppendPathResources(route.up, index, &res);
    if (route.aggregator == plan.job.root) {
      res.push_back(index.ps());
    } else {
      res.push_back(index.sw(route.aggregator));
      // A validated plan has a path to the root for every aggregator.
      if (auto g = group_of.find(route.aggregator); g != group_of.end()) {
        m.worker_group[r] = g->second;
      }
    }
    m.storage.push_back(std::move(res));
  }
  for (size_t g = 0; g < groups; ++g) m.group_res.emplace_back(m.storage[g]);
  for (int r = 0; r < n; ++r) m.worker_res.emplace_back(m.storage[groups + r]);
  return m;
}

Summary Summarize(const std::vector<double>& rates) {
  Summary s;
  if (rates.empty()) return s;
  s.min = *std::min_element(rates.begin(), rates.end());
  double sum = 0;
  for (double r : rates) sum += r;
  s.mean = sum / static_cast<double>(rates.size());
  return s;
}

}  // namespace grid::planner::internal
