// Shortest paths with a deterministic ECMP choice, and Yen's k shortest
// loopless paths. Hosts are endpoints only, never transit nodes.
#include <algorithm>
#include <deque>
#include <set>

#include "absl/strings/str_format.h"
#include "grid/topology.h"
#include "util/random.h"

namespace grid::topology {
namespace {

// Can a path pass *through* `node` (not start or end there)?
bool Transit(const Topology& topo, NodeId node) { return topo.node(node).is_switch(); }

// BFS shortest path from src to dst avoiding banned nodes and arcs; the
// neighbor order of the adjacency lists makes it deterministic.
std::optional<Path> BfsPath(const Topology& topo, NodeId src, NodeId dst,
                            const std::vector<bool>& banned_node,
                            const std::set<ArcId>& banned_arc) {
  std::vector<ArcId> via(topo.num_nodes(), -1);
  std::vector<bool> seen(topo.num_nodes(), false);
  std::deque<NodeId> queue = {src};
  seen[src] = true;
  while (!queue.empty() && !seen[dst]) {
    const NodeId u = queue.front();
    queue.pop_front();
    if (u != src && !Transit(topo, u)) continue;
    for (const Adjacent& adj : topo.neighbors(u)) {
      if (seen[adj.node] || banned_node[adj.node] || banned_arc.count(adj.arc)) continue;
      seen[adj.node] = true;
      via[adj.node] = adj.arc;
      queue.push_back(adj.node);
    }
  }
  if (!seen[dst]) return std::nullopt;
  Path path;
  for (NodeId at = dst; at != src; at = topo.ArcFrom(via[at])) {
    path.nodes.push_back(at);
    path.arcs.push_back(via[at]);
  }
  path.nodes.push_back(src);
  std::reverse(path.nodes.begin(), path.nodes.end());
  std::reverse(path.arcs.begin(), path.arcs.end());
  return path;
}

}  // namespace

Router::Router(const Topology& topology) : topology_(topology), distances_(topology.num_nodes()) {}

const std::vector<int>& Router::DistancesTo(NodeId dst) {
  std::vector<int>& dist = distances_[dst];
  if (!dist.empty()) return dist;
  dist.assign(topology_.num_nodes(), -1);
  std::deque<NodeId> queue = {dst};
  dist[dst] = 0;
  while (!queue.empty()) {
    const NodeId u = queue.front();
    queue.pop_front();
    if (u != dst && !Transit(topology_, u)) continue;
    for (const Adjacent& adj : topology_.neighbors(u)) {
      if (dist[adj.node] >= 0) continue;
      dist[adj.node] = dist[u] + 1;
      queue.push_back(adj.node);
    }
  }
  return dist;
}

int Router::Distance(NodeId src, NodeId dst) { return DistancesTo(dst)[src]; }

absl::StatusOr<Path> Router::ShortestPath(NodeId src, NodeId dst) {
  const int n = topology_.num_nodes();
  if (src < 0 || src >= n || dst < 0 || dst >= n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("route: node id out of range (%d, %d)", src, dst));
  }
  const std::vector<int>& dist = DistancesTo(dst);
  if (dist[src] < 0) {
    return absl::NotFoundError(absl::StrFormat("no route from \"%s\" to \"%s\"",
                                               topology_.node(src).name, topology_.node(dst).name));
  }
  Path path;
  path.nodes.push_back(src);
  const uint64_t flow = util::Mix(static_cast<uint64_t>(src), static_cast<uint64_t>(dst));
  std::vector<Adjacent> next;
  for (NodeId at = src; at != dst;) {
    next.clear();
    for (const Adjacent& adj : topology_.neighbors(at)) {
      if (dist[adj.node] != dist[at] - 1) continue;
      if (adj.node != dst && !Transit(topology_, adj.node)) continue;
      next.push_back(adj);
    }
    // ECMP: the flow hash picks among equal-cost next hops, per hop.
    const Adjacent& pick = next[util::Mix(flow, static_cast<uint64_t>(at)) % next.size()];
    path.arcs.push_back(pick.arc);
    path.nodes.push_back(pick.node);
    at = pick.node;
  }
  return path;
}

absl::StatusOr<std::vector<Path>> Router::KShortestPaths(NodeId src, NodeId dst, int k) {
  std::vector<Path> found;
  if (k <= 0) return found;
  auto first = ShortestPath(src, dst);
  if (!first.ok()) return first.status();
  found.push_back(*std::move(first));
  // Candidates ordered by (length, node sequence): deterministic.
  auto shorter = [](const Path& a, const Path& b) {
    if (a.hops() != b.hops()) return a.hops() < b.hops();
    return a.nodes < b.nodes;
  };
  std::set<Path, decltype(shorter)> candidates(shorter);
  std::vector<bool> banned_node(topology_.num_nodes(), false);
  while (static_cast<int>(found.size()) < k) {
    const Path& last = found.back();
    for (int i = 0; i + 1 < static_cast<int>(last.nodes.size()); ++i) {
      // Spur from node i: the root is last.nodes[0..i]; ban the arcs that
      // every found path sharing this root takes next, and the root's nodes.
      std::set<ArcId> banned_arc;
      for (const Path& p : found) {
        if (p.nodes.size() > static_cast<size_t>(i) + 1 &&
            std::equal(p.nodes.begin(), p.nodes.begin() + i + 1, last.nodes.begin())) {
          banned_arc.insert(p.arcs[i]);
        }
      }
      std::fill(banned_node.begin(), banned_node.end(), false);
      for (int j = 0; j < i; ++j) banned_node[last.nodes[j]] = true;
      const NodeId spur = last.nodes[i];
      if (i > 0 && !Transit(topology_, spur)) continue;
      auto tail = BfsPath(topology_, spur, dst, banned_node, banned_arc);
      if (!tail) continue;
      Path p;
      p.nodes.assign(last.nodes.begin(), last.nodes.begin() + i);
      p.arcs.assign(last.arcs.begin(), last.arcs.begin() + i);
      p.nodes.insert(p.nodes.end(), tail->nodes.begin(), tail->nodes.end());
      p.arcs.insert(p.arcs.end(), tail->arcs.begin(), tail->arcs.end());
      if (std::find(found.begin(), found.end(), p) == found.end()) candidates.insert(std::move(p));
    }
    if (candidates.empty()) break;
    found.push_back(*candidates.begin());
    candidates.erase(candidates.begin());
  }
  return found;
}

}  // namespace grid::topology
