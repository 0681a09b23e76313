#include "planner/gria_lp.h"

#include <algorithm>
#include <coin/ClpSimplex.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <map>

#include "absl/strings/str_format.h"

namespace grid::planner::internal {

namespace {

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

// Column 0 is lambda; then each class's r (one per option), then each
// switch's y (one per path on to the root).
struct LpColumns {
  std::vector<int> r_base, y_base;
  int cols = 1;
};

LpColumns LayOutColumns(const Candidates& c) {
  LpColumns l;
  for (const std::vector<int>& members : c.classes) {
    l.r_base.push_back(l.cols);
    l.cols += static_cast<int>(c.worker[members.front()].size());
  }
  for (int s = 0; s < c.num_switches(); ++s) {
    l.y_base.push_back(l.cols);
    l.cols += static_cast<int>(c.to_root[s].size());
  }
  return l;
}

// The constraint matrix as triplets, with each row's upper bound.
struct LpRows {
  std::vector<int> row, col;
  std::vector<double> val, ub;
  double total_cap = 0;  // sum of every worker's T, for the tie-break's scale

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
    rows.total_cap += members * c.class_cap[k];
    const int t_row = rows.NewRow(c.class_cap[k]);
    const int l_row = rows.NewRow(0);
    rows.Add(l_row, 0, 1.0);
    std::vector<int> y_row(c.num_switches(), -1);
    for (int o = 0; o < static_cast<int>(options.size()); ++o) {
      const Option& opt = options[o];
      const int col = l.r_base[k] + o;
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
        for (size_t q = 0; q < c.to_root[opt.node].size(); ++q) {
          rows.Add(y_row[opt.node], l.y_base[opt.node] + static_cast<int>(q), -1.0);
        }
      }
      rows.Add(y_row[opt.node], col, 1.0);
    }
  }
  for (int s = 0; s < c.num_switches(); ++s) {
    for (size_t q = 0; q < c.to_root[s].size(); ++q) {
      for (int res : c.to_root[s][q].res) {
        rows.Add(res_row(res), l.y_base[s] + static_cast<int>(q), 1.0);
      }
    }
  }
  return rows;
}

LpSolution ReadSolution(const Candidates& c, const LpColumns& l, const double* x) {
  LpSolution sol;
  sol.lambda = x[0];
  sol.r.resize(c.classes.size());
  for (size_t k = 0; k < c.classes.size(); ++k) {
    const size_t options = c.worker[c.classes[k].front()].size();
    sol.r[k].assign(x + l.r_base[k], x + l.r_base[k] + options);
  }
  sol.y.resize(c.num_switches());
  for (int s = 0; s < c.num_switches(); ++s) {
    sol.y[s].assign(x + l.y_base[s], x + l.y_base[s] + c.to_root[s].size());
  }
  return sol;
}

}  // namespace

absl::StatusOr<LpSolution> SolveLp(const Candidates& c, const std::vector<double>& capacity) {
  const LpColumns l = LayOutColumns(c);
  const LpRows lp_rows = BuildRows(c, capacity, l);
  const int rows = static_cast<int>(lp_rows.ub.size());
  const int cols = l.cols;
  CoinPackedMatrix matrix(true, lp_rows.row.data(), lp_rows.col.data(), lp_rows.val.data(),
                          static_cast<CoinBigIndex>(lp_rows.val.size()));
  matrix.setDimensions(rows, cols);
  std::vector<double> col_lb(cols, 0), col_ub(cols, COIN_DBL_MAX), obj(cols, 0);
  std::vector<double> row_lb(rows, -COIN_DBL_MAX);
  // Minimize -lambda - eps * sum m_c r. eps is small enough that the
  // tie-break can never trade away lambda: sum m_c r <= sum of all T.
  const double eps = 1e-6 / std::max(1.0, lp_rows.total_cap);
  obj[0] = -1.0;
  for (size_t k = 0; k < c.classes.size(); ++k) {
    const size_t options = c.worker[c.classes[k].front()].size();
    for (size_t o = 0; o < options; ++o) obj[l.r_base[k] + o] = -eps * c.classes[k].size();
  }
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(matrix, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(),
                 lp_rows.ub.data());
  lp.initialSolve();
  if (!lp.isProvenOptimal()) {
    return absl::InternalError(
        absl::StrFormat("GRIA LP (%d rows, %d columns): Clp ended with status %d, not optimal",
                        rows, cols, lp.status()));
  }
  return ReadSolution(c, l, lp.primalColumnSolution());
}

}  // namespace grid::planner::internal
