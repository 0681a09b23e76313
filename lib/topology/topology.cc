#include "grid/topology.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_format.h"

namespace grid::topology {

const char* HostRoleName(HostRole role) {
  switch (role) {
    case HostRole::kIdle:
      return "idle";
    case HostRole::kWorker:
      return "worker";
    case HostRole::kRoot:
      return "root";
  }
  return "unknown";
}

const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kNone:
      return "none";
    case Tier::kTor:
      return "tor";
    case Tier::kAgg:
      return "agg";
    case Tier::kCore:
      return "core";
  }
  return "unknown";
}

NodeId Topology::ArcFrom(ArcId arc) const {
  const Link& l = links_[arc / 2];
  return arc % 2 == 0 ? l.a : l.b;
}

NodeId Topology::ArcTo(ArcId arc) const {
  const Link& l = links_[arc / 2];
  return arc % 2 == 0 ? l.b : l.a;
}

absl::StatusOr<NodeId> Topology::AddNode(Node node) {
  if (node.name.empty()) return absl::InvalidArgumentError("node name is empty");
  if (num_nodes() >= kMaxNodes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "node \"%s\": a topology holds at most %d nodes (16-bit node ids)", node.name, kMaxNodes));
  }
  if (Find(node.name)) {
    return absl::InvalidArgumentError(absl::StrFormat("duplicate node name \"%s\"", node.name));
  }
  if (node.is_switch()) {
    if (node.programmable && !(node.capacity_gbps > 0)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("switch \"%s\": a programmable switch needs capacity_gbps > 0 (got %g)",
                          node.name, node.capacity_gbps));
    }
    if (node.slots < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("switch \"%s\": slots must be >= 0 (got %d)", node.name, node.slots));
    }
  }
  const auto id = static_cast<NodeId>(nodes_.size());
  by_name_[node.name] = id;
  nodes_.push_back(std::move(node));
  adjacency_.emplace_back();
  return id;
}

absl::StatusOr<LinkId> Topology::AddLink(std::string_view a, std::string_view b, double gbps,
                                         double latency_us) {
  const auto na = Find(a);
  if (!na) return absl::InvalidArgumentError(absl::StrFormat("link: unknown node \"%s\"", a));
  const auto nb = Find(b);
  if (!nb) return absl::InvalidArgumentError(absl::StrFormat("link: unknown node \"%s\"", b));
  return AddLink(*na, *nb, gbps, latency_us);
}

absl::StatusOr<LinkId> Topology::AddLink(NodeId a, NodeId b, double gbps, double latency_us) {
  if (a < 0 || a >= num_nodes() || b < 0 || b >= num_nodes()) {
    return absl::InvalidArgumentError(absl::StrFormat("link: node id out of range (%d, %d)", a, b));
  }
  const std::string where = absl::StrFormat("link %s-%s", nodes_[a].name, nodes_[b].name);
  if (a == b) return absl::InvalidArgumentError(where + ": a link needs two different nodes");
  if (!(gbps > 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: gbps must be > 0 (got %g)", where, gbps));
  }
  if (!(latency_us >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: latency_us must be >= 0 (got %g)", where, latency_us));
  }
  for (NodeId end : {a, b}) {
    if (nodes_[end].is_host() && !adjacency_[end].empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: host \"%s\" already has a link (hosts attach to one switch)", where,
                          nodes_[end].name));
    }
  }
  for (const Adjacent& adj : adjacency_[a]) {
    if (adj.node == b) return absl::InvalidArgumentError(where + ": duplicate link");
  }
  if (nodes_[a].is_host() && nodes_[b].is_host()) {
    return absl::InvalidArgumentError(where + ": hosts must attach to a switch, not to a host");
  }
  const auto id = static_cast<LinkId>(links_.size());
  links_.push_back({a, b, gbps, latency_us});
  adjacency_[a].push_back({b, 2 * id});
  adjacency_[b].push_back({a, 2 * id + 1});
  return id;
}

std::optional<NodeId> Topology::Find(std::string_view name) const {
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

NodeId Topology::TorOf(NodeId host) const {
  return adjacency_[host].empty() ? kNoNode : adjacency_[host].front().node;
}

double Topology::AccessGbps(NodeId host) const {
  return adjacency_[host].empty() ? 0 : ArcGbps(adjacency_[host].front().arc);
}

std::vector<NodeId> Topology::Hosts() const {
  std::vector<NodeId> out;
  for (NodeId i = 0; i < num_nodes(); ++i) {
    if (nodes_[i].is_host()) out.push_back(i);
  }
  return out;
}

std::vector<NodeId> Topology::Switches() const {
  std::vector<NodeId> out;
  for (NodeId i = 0; i < num_nodes(); ++i) {
    if (nodes_[i].is_switch()) out.push_back(i);
  }
  return out;
}

std::vector<NodeId> Topology::HostsWithRole(HostRole role) const {
  std::vector<NodeId> out;
  for (NodeId i = 0; i < num_nodes(); ++i) {
    if (nodes_[i].is_host() && nodes_[i].role == role) out.push_back(i);
  }
  return out;
}

std::vector<NodeId> Topology::ProgrammableSwitches() const {
  std::vector<NodeId> out;
  for (NodeId i = 0; i < num_nodes(); ++i) {
    if (nodes_[i].is_switch() && nodes_[i].programmable) out.push_back(i);
  }
  return out;
}

absl::Status Topology::Validate() const {
  if (nodes_.empty()) return absl::InvalidArgumentError("topology has no nodes");
  for (NodeId i = 0; i < num_nodes(); ++i) {
    if (nodes_[i].is_host() && adjacency_[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("host \"%s\" is not attached to any switch", nodes_[i].name));
    }
  }
  if (HostsWithRole(HostRole::kRoot).size() > 1) {
    return absl::InvalidArgumentError("more than one host has role \"root\"");
  }
  std::vector<bool> seen(nodes_.size(), false);
  std::deque<NodeId> queue = {0};
  seen[0] = true;
  while (!queue.empty()) {
    const NodeId u = queue.front();
    queue.pop_front();
    for (const Adjacent& adj : adjacency_[u]) {
      if (!seen[adj.node]) {
        seen[adj.node] = true;
        queue.push_back(adj.node);
      }
    }
  }
  for (NodeId i = 0; i < num_nodes(); ++i) {
    if (!seen[i]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "topology is not connected: \"%s\" cannot reach \"%s\"", nodes_[0].name, nodes_[i].name));
    }
  }
  return absl::OkStatus();
}

}  // namespace grid::topology
