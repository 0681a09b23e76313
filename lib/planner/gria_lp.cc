#include "planner/gria_lp.h"

#include <algorithm>
#include <coin/ClpSimplex.hpp>
#include <coin/ClpSolve.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <map>

#include "absl/strings/str_format.h"

namespace grid::planner::internal {

namespace {

// Passes of Clp's idiot crash before primal simplex takes over: 50 was
// fastest on the 1000-worker k=16 fat-tree LP (15 passes: 2.5x slower; 150:
// no faster).
constexpr int kIdiotPasses = 50;

// Path-aware candidates run from the worker's ToR (every member of a class
// gets the same list, its own access link in front); otherwise the default
// route from the host, ECMP-hashed per worker.
class CandidatePaths {
 public:
  CandidatePaths(const Topology& topo, const ResourceIndex& index, int k)
      : topo_(topo), index_(index), router_(topo), k_(k) {}

  absl::StatusOr<std::vector<Path>> Between(NodeId from, NodeId to) {
    if (!index_.links()) {
      auto p = router_.ShortestPath(from, to);
      if (!p.ok()) return p.status();
      return std::vector<Path>{*std::move(p)};
    }
    const NodeId tor = topo_.node(from).is_host() ? topo_.TorOf(from) : from;
    // Workers behind one ToR share its paths: Yen runs once per (ToR, node).
    auto [cached, inserted] = from_tor_.try_emplace({tor, to});
    if (inserted) {
      if (tor == to) {
        cached->second.emplace_back();
        cached->second.back().nodes = {tor};
      } else {
        auto ps = router_.KShortestPaths(tor, to, k_);
        if (!ps.ok()) {
          from_tor_.erase(cached);
          return ps.status();
        }
        cached->second = *std::move(ps);
      }
    }
    std::vector<Path> out = cached->second;
    if (tor != from) {
      const topology::ArcId access = topo_.neighbors(from).front().arc;
      for (Path& p : out) {
        p.nodes.insert(p.nodes.begin(), from);
        p.arcs.insert(p.arcs.begin(), access);
      }
    }
    return out;
  }

 private:
  const Topology& topo_;
  const ResourceIndex& index_;
  topology::Router router_;
  const int k_;
  std::map<std::pair<NodeId, NodeId>, std::vector<Path>> from_tor_;
};

}  // namespace

absl::StatusOr<Candidates> BuildCandidates(const Topology& topo, const JobSpec& job,
                                           const ResourceIndex& index, int k) {
  Candidates c;
  for (NodeId s : topo.ProgrammableSwitches()) {
    if (topo.node(s).capacity_gbps > 0) c.nodes.push_back(s);
  }
  c.nodes.push_back(job.root);
  CandidatePaths paths(topo, index, k);
  const size_t n = job.workers.size();
  c.worker.resize(n);
  c.class_of.resize(n);
  std::map<std::pair<double, NodeId>, int> class_key;
  for (size_t r = 0; r < n; ++r) {
    const NodeId host = job.workers[r];
    const double cap =
        index.links() ? std::min(WorkerGbps(topo, job, static_cast<int>(r)), topo.AccessGbps(host))
                      : WorkerGbps(topo, job, static_cast<int>(r));
    const auto key = std::make_pair(cap, index.links() ? topo.TorOf(host) : topology::kNoNode);
    auto [it, inserted] = class_key.emplace(key, static_cast<int>(c.classes.size()));
    if (inserted) {
      c.classes.emplace_back();
      c.class_cap.push_back(cap);
      std::vector<int> own;
      if (index.links()) {
        const topology::ArcId access = topo.neighbors(host).front().arc;
        own = {index.arc(access), index.arc(Topology::Reverse(access))};
      }
      c.class_private.push_back(std::move(own));
    }
    c.class_of[r] = it->second;
    c.classes[it->second].push_back(static_cast<int>(r));
    for (int node = 0; node < static_cast<int>(c.nodes.size()); ++node) {
      auto ps = paths.Between(host, c.nodes[node]);
      if (!ps.ok()) return ps.status();
      for (Path& p : *ps) {
        Option o{node, std::move(p), {}};
        AppendPathResources(o.path, index, &o.res);
        o.res.push_back(node == c.root_index() ? index.ps() : index.sw(c.nodes[node]));
        c.worker[r].push_back(std::move(o));
      }
    }
  }
  c.to_root.resize(c.num_switches());
  for (int s = 0; s < c.num_switches(); ++s) {
    auto ps = paths.Between(c.nodes[s], job.root);
    if (!ps.ok()) return ps.status();
    for (Path& p : *ps) {
      Option o{c.root_index(), std::move(p), {index.ps()}};
      AppendPathResources(o.path, index, &o.res);
      c.to_root[s].push_back(std::move(o));
    }
  }
  return c;
}

namespace {

// Column 0 is lambda; then each class's r (one per option in the LP), then
// each switch's y (one per path on to the root in the LP). -1: not in the LP.
struct LpColumns {
  std::vector<std::vector<int>> r, y;
  int cols = 1;
};

LpColumns LayOutColumns(const Candidates& c, int lp_paths) {
  LpColumns l;
  for (const std::vector<int>& members : c.classes) {
    const std::vector<Option>& options = c.worker[members.front()];
    l.r.emplace_back(options.size(), -1);
    int rank = 0;  // among the options at this node; they are listed together
    for (size_t o = 0; o < options.size(); ++o) {
      rank = o > 0 && options[o].node == options[o - 1].node ? rank + 1 : 0;
      if (rank < lp_paths) l.r.back()[o] = l.cols++;
    }
  }
  for (int s = 0; s < c.num_switches(); ++s) {
    l.y.emplace_back(c.to_root[s].size(), -1);
    for (size_t q = 0; q < c.to_root[s].size() && static_cast<int>(q) < lp_paths; ++q)
      l.y.back()[q] = l.cols++;
  }
  return l;
}

// The constraint matrix as triplets, with each row's upper bound.
struct LpRows {
  std::vector<int> row, col;
  std::vector<double> val, ub;

  void Add(int r, int c, double v) {
    row.push_back(r);
    col.push_back(c);
    val.push_back(v);
  }
  int NewRow(double bound) {
    ub.push_back(bound);
    return static_cast<int>(ub.size()) - 1;
  }
};

LpRows BuildRows(const Candidates& c, const std::vector<double>& capacity, const LpColumns& l) {
  LpRows rows;
  // Shared resource rows (PS, switch capacities, arcs), created on first use.
  std::vector<int> resource_row(capacity.size(), -1);
  auto res_row = [&](int res) {
    if (resource_row[res] < 0) resource_row[res] = rows.NewRow(capacity[res]);
    return resource_row[res];
  };
  for (size_t k = 0; k < c.classes.size(); ++k) {
    const std::vector<Option>& options = c.worker[c.classes[k].front()];
    const double members = static_cast<double>(c.classes[k].size());
    const std::vector<int>& own = c.class_private[k];
    const int t_row = rows.NewRow(c.class_cap[k]);
    const int l_row = rows.NewRow(0);
    rows.Add(l_row, 0, 1.0);
    std::vector<int> y_row(c.num_switches(), -1);
    for (int o = 0; o < static_cast<int>(options.size()); ++o) {
      const Option& opt = options[o];
      const int col = l.r[k][o];
      if (col < 0) continue;
      rows.Add(t_row, col, 1.0);
      rows.Add(l_row, col, -1.0);
      for (int res : opt.res) {
        // A member's own access link is already its T_c row.
        if (std::find(own.begin(), own.end(), res) == own.end()) {
          rows.Add(res_row(res), col, members);
        }
      }
      if (opt.node == c.root_index()) continue;
      if (y_row[opt.node] < 0) {
        y_row[opt.node] = rows.NewRow(0);
        for (int col_y : l.y[opt.node]) {
          if (col_y >= 0) rows.Add(y_row[opt.node], col_y, -1.0);
        }
      }
      rows.Add(y_row[opt.node], col, 1.0);
    }
  }
  for (int s = 0; s < c.num_switches(); ++s) {
    for (size_t q = 0; q < c.to_root[s].size(); ++q) {
      if (l.y[s][q] < 0) continue;
      for (int res : c.to_root[s][q].res) rows.Add(res_row(res), l.y[s][q], 1.0);
    }
  }
  return rows;
}

LpSolution ReadSolution(const Candidates& c, const LpColumns& l, const double* x) {
  LpSolution sol;
  sol.lambda = x[0];
  auto read = [x](const std::vector<int>& cols) {
    std::vector<double> v(cols.size(), 0);
    for (size_t i = 0; i < cols.size(); ++i) {
      if (cols[i] >= 0) v[i] = x[cols[i]];
    }
    return v;
  };
  for (size_t k = 0; k < c.classes.size(); ++k) sol.r.push_back(read(l.r[k]));
  for (int s = 0; s < c.num_switches(); ++s) sol.y.push_back(read(l.y[s]));
  return sol;
}

}  // namespace

absl::StatusOr<LpSolution> SolveLp(const Candidates& c, const std::vector<double>& capacity,
                                   int lp_paths) {
  const LpColumns l = LayOutColumns(c, std::max(1, lp_paths));
  const LpRows lp_rows = BuildRows(c, capacity, l);
  const int rows = static_cast<int>(lp_rows.ub.size());
  const int cols = l.cols;
  CoinPackedMatrix matrix(true, lp_rows.row.data(), lp_rows.col.data(), lp_rows.val.data(),
                          static_cast<CoinBigIndex>(lp_rows.val.size()));
  matrix.setDimensions(rows, cols);
  std::vector<double> col_lb(cols, 0), col_ub(cols, COIN_DBL_MAX), obj(cols, 0);
  std::vector<double> row_lb(rows, -COIN_DBL_MAX);
  auto not_optimal = [&](const ClpSimplex& lp, const char* phase) {
    return absl::InternalError(
        absl::StrFormat("GRIA LP (%d rows, %d columns), %s: Clp ended with status %d, not optimal",
                        rows, cols, phase, lp.status()));
  };
  // The objective is lexicographic: the largest lambda, then among those
  // the largest total rate sum m_c r (a tie-break toward higher rates).
  // Phase 1 maximizes lambda alone. Clp's "idiot" crash (an approximate
  // penalty method that primal simplex then finishes) solves this LP several
  // times faster than dual or primal simplex from a slack basis
  // (docs/planner.md, "Cost"); a tie-break folded into the objective with a
  // tiny weight cost another factor of 3 and sat below Clp's tolerances.
  obj[0] = -1.0;
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(matrix, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(),
                 lp_rows.ub.data());
  ClpSolve crash;
  crash.setSolveType(ClpSolve::usePrimalorSprint);
  crash.setSpecialOption(1, 2, kIdiotPasses);
  lp.initialSolve(crash);
  if (!lp.isProvenOptimal()) return not_optimal(lp, "lambda");
  // Phase 2: lambda held at its optimum (less a relative 1e-9, so that the
  // warm start stays feasible), maximize sum m_c r from phase 1's basis.
  const double lambda = lp.primalColumnSolution()[0];
  lp.setColumnLower(0, lambda * (1 - 1e-9));
  lp.setObjectiveCoefficient(0, 0);
  double largest = 1;
  for (const std::vector<int>& members : c.classes)
    largest = std::max(largest, static_cast<double>(members.size()));
  for (size_t k = 0; k < c.classes.size(); ++k) {
    for (int col : l.r[k]) {
      if (col >= 0)
        lp.setObjectiveCoefficient(col, -static_cast<double>(c.classes[k].size()) / largest);
    }
  }
  lp.primal(1);
  if (!lp.isProvenOptimal()) return not_optimal(lp, "total rate at the best lambda");
  return ReadSolution(c, l, lp.primalColumnSolution());
}

}  // namespace grid::planner::internal
