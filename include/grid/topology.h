// The network a job runs on: hosts, switches and links, with what the routing
// planners need to know about each. docs/topology.md describes the JSON form
// and the generator specs.
#ifndef GRID_TOPOLOGY_H_
#define GRID_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grid/export.h"

GRID_API_BEGIN

namespace grid::topology {

using NodeId = int32_t;
using LinkId = int32_t;
// A direction of a link: 2 * link for a -> b, 2 * link + 1 for b -> a. Links
// are full duplex, so each direction has the link's capacity.
using ArcId = int32_t;
inline constexpr NodeId kNoNode = -1;
// Node ids travel in 16-bit wire fields (agg_node), so a topology holds at
// most this many nodes.
inline constexpr int kMaxNodes = 65535;

enum class NodeKind : uint8_t { kHost, kSwitch };
enum class HostRole : uint8_t { kIdle, kWorker, kRoot };
// Where a switch sits. kTor covers edge (fat-tree) and leaf (leaf-spine)
// switches; kCore covers spines.
enum class Tier : uint8_t { kNone, kTor, kAgg, kCore };

const char* HostRoleName(HostRole role);
const char* TierName(Tier tier);

struct Node {
  std::string name;
  NodeKind kind = NodeKind::kSwitch;
  // Hosts.
  HostRole role = HostRole::kIdle;
  // Switches.
  Tier tier = Tier::kNone;
  bool programmable = false;
  double capacity_gbps = 0;  // aggregation capacity C_s (programmable switches)
  int32_t slots = 0;         // aggregator memory, in slots

  bool is_host() const { return kind == NodeKind::kHost; }
  bool is_switch() const { return kind == NodeKind::kSwitch; }
};

struct Link {
  NodeId a = kNoNode;
  NodeId b = kNoNode;
  double gbps = 0;
  double latency_us = 0;
};

struct Adjacent {
  NodeId node;
  ArcId arc;  // the arc from the owner of the adjacency list to `node`
};

class Topology {
 public:
  Topology() = default;
  explicit Topology(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_links() const { return static_cast<int>(links_.size()); }
  int num_arcs() const { return 2 * num_links(); }
  absl::Span<const Adjacent> neighbors(NodeId id) const { return adjacency_[id]; }

  // Arc endpoints and capacity.
  NodeId ArcFrom(ArcId arc) const;
  NodeId ArcTo(ArcId arc) const;
  double ArcGbps(ArcId arc) const { return links_[arc / 2].gbps; }
  static ArcId Reverse(ArcId arc) { return arc ^ 1; }

  // Errors name the element: a duplicate name, an unknown endpoint, a
  // non-positive capacity, a host with more than one link.
  absl::StatusOr<NodeId> AddNode(Node node);
  absl::StatusOr<LinkId> AddLink(std::string_view a, std::string_view b, double gbps,
                                 double latency_us);
  absl::StatusOr<LinkId> AddLink(NodeId a, NodeId b, double gbps, double latency_us);

  std::optional<NodeId> Find(std::string_view name) const;

  // The switch a host is attached to (hosts have exactly one link).
  NodeId TorOf(NodeId host) const;
  // The capacity of a host's access link.
  double AccessGbps(NodeId host) const;

  std::vector<NodeId> Hosts() const;
  std::vector<NodeId> Switches() const;
  std::vector<NodeId> HostsWithRole(HostRole role) const;
  std::vector<NodeId> ProgrammableSwitches() const;

  // Whole-topology checks: connected, every host attached to a switch.
  absl::Status Validate() const;

 private:
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<std::vector<Adjacent>> adjacency_;
  absl::flat_hash_map<std::string, NodeId> by_name_;
};

// JSON (docs/topology.md). Errors name the element and field at fault,
// e.g. `links[3].b: unknown node "S9"`.
absl::StatusOr<Topology> ParseTopologyJson(std::string_view text);
std::string TopologyToJson(const Topology& topology);

// Generated topologies from a spec string (docs/topology.md):
//   testbed[:ps=GBPS] | rack:hosts=H | fattree:k=K,hosts=H | leafspine:spines=S,leaves=L,hosts=H
// with options prog=all|tor|none|random:P, cap=uniform:LO:HI|fixed:C,
// cap.NAME=GBPS (one switch's C_s), link=GBPS (host links), fabric=GBPS (switch-to-switch links;
// default link), slots=N, seed=N; the testbed's ps=GBPS is the root's access rate B_alpha (default
// link). The same spec gives the same topology.
absl::StatusOr<Topology> GenerateTopology(std::string_view spec);

// A spec string, or a path to a JSON file (anything containing '/' or ending
// in .json).
absl::StatusOr<Topology> LoadTopology(std::string_view spec_or_path);

// A route through the network: the nodes visited and the arcs taken.
struct Path {
  std::vector<NodeId> nodes;
  std::vector<ArcId> arcs;

  bool empty() const { return nodes.empty(); }
  int hops() const { return static_cast<int>(arcs.size()); }
  bool operator==(const Path&) const = default;
};

// Shortest paths by hop count. Hosts are never transit nodes. Among equal-cost
// next hops the choice is a deterministic hash of (src, dst), as ECMP would
// pin a flow. Distances are cached per destination.
class Router {
 public:
  explicit Router(const Topology& topology);

  // An error if dst is unreachable from src.
  absl::StatusOr<Path> ShortestPath(NodeId src, NodeId dst);
  int Distance(NodeId src, NodeId dst);  // -1 if unreachable

  // Up to k loopless paths in order of length (Yen's algorithm), the first
  // being ShortestPath. Ties are broken deterministically.
  absl::StatusOr<std::vector<Path>> KShortestPaths(NodeId src, NodeId dst, int k);

 private:
  const std::vector<int>& DistancesTo(NodeId dst);

  const Topology& topology_;
  std::vector<std::vector<int>> distances_;  // per destination, lazily
};

}  // namespace grid::topology

GRID_API_END

#endif  // GRID_TOPOLOGY_H_
