#include <algorithm>

#include "absl/strings/str_format.h"
#include "grid/control.h"

namespace grid::control {
namespace {

using topology::NodeId;
using topology::Topology;

// The port of `from` that leads to its neighbour `to`.
int PortTo(const Topology& topo, NodeId from, NodeId to) {
  const auto adj = topo.neighbors(from);
  for (size_t p = 0; p < adj.size(); ++p) {
    if (adj[p].node == to) return static_cast<int>(p);
  }
  return -1;
}

// The next hop after `node` on `path`, as an endpoint towards `destination`.
sw::Endpoint Toward(const Topology& topo, const topology::Path& path, size_t at,
                    NodeId destination) {
  const NodeId next = path.nodes[at + 1];
  return {static_cast<uint16_t>(PortTo(topo, path.nodes[at], next)), NodeIp(destination),
          NodeMac(next)};
}

}  // namespace

uint32_t NodeIp(NodeId node) { return 0x0a000000u | static_cast<uint32_t>(node + 1); }

wire::MacAddress NodeMac(NodeId node) {
  const auto n = static_cast<uint32_t>(node + 1);
  return {0x02, 0x00, 0x00, 0x00, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)};
}

namespace {

// A switch's identity, its host ports, an IPv4 route to every host, and the
// job's token.
absl::StatusOr<sw::SwitchConfig> BaseConfig(const Topology& topo, NodeId s,
                                            topology::Router& router,
                                            const std::vector<NodeId>& hosts,
                                            const host_config::JobParams& job) {
  const topology::Node& n = topo.node(s);
  sw::SwitchConfig c;
  c.name = n.name;
  c.node_id = static_cast<uint16_t>(s);
  c.ip = NodeIp(s);
  c.mac = NodeMac(s);
  c.num_ports = static_cast<uint16_t>(topo.neighbors(s).size());
  c.slot_memory = static_cast<uint32_t>(n.slots);
  // C_s: what the switch can aggregate (only a programmable switch does).
  c.capacity_gbps = n.programmable ? n.capacity_gbps : 0;
  const auto adjacent = topo.neighbors(s);
  for (size_t p = 0; p < adjacent.size(); ++p) {
    if (!topo.node(adjacent[p].node).is_switch()) {
      c.hosts[static_cast<uint16_t>(p)] = NodeIp(adjacent[p].node);
    }
  }
  for (NodeId h : hosts) {
    auto path = router.ShortestPath(s, h);
    if (!path.ok()) return path.status();
    c.ip_routes[NodeIp(h)] = Toward(topo, *path, 0, h);
  }
  sw::JobEntry entry;
  entry.job_id = job.job_id;
  entry.token = job.token;
  c.jobs[job.job_id] = entry;
  return c;
}

// What an aggregating switch does for the job: its pool, members, and the
// way on to the root.
absl::StatusOr<sw::JobEntry::Aggregate> AggregateEntry(
    const Topology& topo, const planner::Plan& plan, const planner::PathLabels& labels,
    const planner::Aggregator& a, const host_config::JobParams& job, const sw::SwitchConfig& c,
    uint16_t root_fan_in) {
  auto label = [&](uint16_t plan_label) {
    return static_cast<uint16_t>(job.label_base + plan_label);
  };
  const std::string where = absl::StrFormat("job %d, switch \"%s\"", job.job_id, c.name);
  if (a.members.size() > static_cast<size_t>(sw::kMaxMembers)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %d members; the switch takes at most %d",
                                                      where, a.members.size(), sw::kMaxMembers));
  }
  if (job.slot_base + job.slots > c.slot_memory) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: a pool of %d slots at %d does not fit its %d slots", where, job.slots,
                        job.slot_base, c.slot_memory));
  }
  sw::JobEntry::Aggregate agg;
  agg.fan_in = static_cast<uint16_t>(a.members.size());
  agg.elements = job.elements;
  agg.slot_base = job.slot_base;
  agg.slots = job.slots;
  agg.root = Toward(topo, *a.to_root, 0, plan.job.root);
  agg.root_node = static_cast<uint16_t>(plan.job.root);
  agg.root_fan_in = root_fan_in;
  agg.to_root_label = label(labels.ToRoot(a.node));
  agg.best_effort = plan.best_effort;
  for (size_t i = 0; i < a.members.size(); ++i) {
    const int rank = a.members[i];
    const topology::Path result = planner::ReversePath(plan.workers[rank].up);
    agg.members.push_back({static_cast<uint16_t>(rank), static_cast<uint8_t>(i),
                           Toward(topo, result, 0, plan.job.workers[rank]),
                           label(labels.result[rank])});
  }
  return agg;
}

// The proxy at `proxy` for best-effort aggregator `a` (AtpProxy): an
// aggregate of a's members, whose passed DATA arrive from the previous hop
// on a's way to the root, in pool number `pool` after the job's own; its
// partial stands for a's.
absl::StatusOr<sw::JobEntry::Aggregate> ProxyEntry(const Topology& topo,
                                                   const planner::PathLabels& labels,
                                                   const planner::Plan& plan,
                                                   const planner::Aggregator& a, NodeId proxy,
                                                   int pool, const host_config::JobParams& job,
                                                   const sw::SwitchConfig& c) {
  const std::string where = absl::StrFormat("job %d, switch \"%s\", proxy for \"%s\"", job.job_id,
                                            c.name, topo.node(a.node).name);
  const topology::Path& up = *a.to_root;
  const size_t at =
      static_cast<size_t>(std::find(up.nodes.begin(), up.nodes.end(), proxy) - up.nodes.begin());
  const uint64_t base = job.slot_base + uint64_t{job.slots} * pool;
  if (base + job.slots > c.slot_memory) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: its pool of %d slots at %d does not fit the switch's %d slots (a best-effort job "
        "takes a pool per switch it completes chunks for)",
        where, job.slots, base, c.slot_memory));
  }
  const auto from_port = static_cast<uint16_t>(PortTo(topo, proxy, up.nodes[at - 1]));
  sw::JobEntry::Aggregate agg;
  agg.fan_in = static_cast<uint16_t>(a.members.size());
  agg.elements = job.elements;
  agg.slot_base = static_cast<uint32_t>(base);
  agg.slots = job.slots;
  agg.root = Toward(topo, up, at, plan.job.root);
  agg.root_node = static_cast<uint16_t>(a.node);
  agg.root_fan_in = agg.fan_in;
  agg.to_root_label = static_cast<uint16_t>(job.label_base + labels.ToRoot(a.node));
  agg.best_effort = true;
  for (size_t i = 0; i < a.members.size(); ++i) {
    const int rank = a.members[i];
    agg.members.push_back({static_cast<uint16_t>(rank),
                           static_cast<uint8_t>(i),
                           {from_port, NodeIp(plan.job.workers[rank]), NodeMac(up.nodes[at - 1])},
                           static_cast<uint16_t>(job.label_base + labels.result[rank])});
  }
  return agg;
}

}  // namespace

NodeId AtpProxy(const Topology& topo, const planner::Plan& plan,
                const planner::Aggregator& aggregator) {
  if (!plan.best_effort || aggregator.to_root == nullptr) return topology::kNoNode;
  const NodeId tor = topo.TorOf(plan.job.root);
  if (tor == topology::kNoNode || tor == aggregator.node || !topo.node(tor).programmable) {
    return topology::kNoNode;
  }
  const auto& nodes = aggregator.to_root->nodes;
  return std::find(nodes.begin(), nodes.end(), tor) != nodes.end() ? tor : topology::kNoNode;
}

absl::StatusOr<std::map<NodeId, sw::SwitchConfig>> BuildSwitchConfigs(const Topology& topo,
                                                                      const planner::Plan& plan,
                                                                      const host_config::JobParams& job) {
  if (absl::Status s = planner::ValidatePlan(topo, plan); !s.ok()) return s;
  if (absl::Status s = ValidateJobParams(job); !s.ok()) return s;
  const planner::PathLabels labels = planner::LabelPaths(plan);
  if (labels.paths.size() + job.label_base > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("job %d: %d distinct paths from label_base %d; path labels are 16 bits",
                        job.job_id, labels.paths.size(), job.label_base));
  }
  std::map<NodeId, sw::SwitchConfig> configs;
  topology::Router router(topo);
  const std::vector<NodeId> hosts = topo.Hosts();
  for (NodeId s : topo.Switches()) {
    auto c = BaseConfig(topo, s, router, hosts, job);
    if (!c.ok()) return c.status();
    configs[s] = *std::move(c);
  }
  // Label routes: every switch on a labelled path forwards it one hop on.
  for (size_t l = 0; l < labels.paths.size(); ++l) {
    const topology::Path& path = labels.paths[l];
    for (size_t i = 0; i + 1 < path.nodes.size(); ++i) {
      const NodeId at = path.nodes[i];
      if (!topo.node(at).is_switch()) continue;
      configs[at].label_routes[static_cast<uint16_t>(job.label_base + l + 1)] =
          Toward(topo, path, i, path.nodes.back());
    }
  }
  const auto aggregators = planner::Aggregators(plan);
  const auto root_fan_in = static_cast<uint16_t>(
      aggregators.size() +
      std::count_if(plan.workers.begin(), plan.workers.end(),
                    [&](const auto& w) { return w.aggregator == plan.job.root; }));
  for (const planner::Aggregator& a : aggregators) {
    sw::SwitchConfig& c = configs[a.node];
    auto agg = AggregateEntry(topo, plan, labels, a, job, c, root_fan_in);
    if (!agg.ok()) return agg.status();
    c.jobs[job.job_id].aggregate = *std::move(agg);
  }
  // ATP's second level: pools after the job's own, one per switch proxied.
  std::map<NodeId, int> pools;
  for (const planner::Aggregator& a : aggregators) {
    const NodeId proxy = AtpProxy(topo, plan, a);
    if (proxy == topology::kNoNode) continue;
    sw::SwitchConfig& c = configs[proxy];
    auto entry = ProxyEntry(topo, labels, plan, a, proxy, ++pools[proxy], job, c);
    if (!entry.ok()) return entry.status();
    c.jobs[job.job_id].proxies[static_cast<uint16_t>(a.node)] = *std::move(entry);
  }
  for (const auto& [node, c] : configs) {
    if (absl::Status s = sw::ValidateConfig(c); !s.ok()) return s;
  }
  return configs;
}

absl::Status MergeSwitchConfigs(const std::map<NodeId, sw::SwitchConfig>& more,
                                std::map<NodeId, sw::SwitchConfig>& into) {
  std::map<NodeId, sw::SwitchConfig> merged = into;  // `into` changes only if all merge
  for (const auto& [node, add] : more) {
    auto it = merged.find(node);
    if (it == merged.end()) {
      merged.emplace(node, add);
      continue;
    }
    sw::SwitchConfig& c = it->second;
    auto clash = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrFormat("switch \"%s\": %s", c.name, what));
    };
    if (c.node_id != add.node_id || c.ip != add.ip || c.mac != add.mac ||
        c.num_ports != add.num_ports) {
      return clash("the two tables describe different switches");
    }
    auto same = [](const sw::Endpoint& a, const sw::Endpoint& b) {
      return a.port == b.port && a.ip == b.ip && a.mac == b.mac;
    };
    for (const auto& [l, e] : add.label_routes) {
      auto [at, fresh] = c.label_routes.emplace(l, e);
      if (!fresh && !same(at->second, e)) {
        return clash(absl::StrFormat("label %d is routed two ways (disjoint label_base)", l));
      }
    }
    for (const auto& [ip, e] : add.ip_routes) {
      auto [at, fresh] = c.ip_routes.emplace(ip, e);
      if (!fresh && !same(at->second, e)) return clash("a host is routed two ways");
    }
    for (const auto& [port, ip] : add.hosts) c.hosts.emplace(port, ip);
    for (const auto& [id, job] : add.jobs) {
      if (!c.jobs.emplace(id, job).second) return clash(absl::StrFormat("job %d twice", id));
    }
    if (absl::Status s = sw::ValidateConfig(c); !s.ok()) return s;
  }
  into = std::move(merged);
  return absl::OkStatus();
}

}  // namespace grid::control
