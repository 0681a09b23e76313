// Worker and root configs from a plan: the host side of the tables that
// switch_tables.cc builds for the switches. Both files derive fan-ins and
// labels the same way (planner::Aggregators, planner::LabelPaths), so a
// worker's DATA always matches its aggregator's job entry.
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "grid/control.h"

namespace grid::control {
namespace {

using topology::NodeId;

uint16_t RootFanIn(const planner::Plan& plan, size_t aggregators) {
  return static_cast<uint16_t>(
      aggregators + std::count_if(plan.workers.begin(), plan.workers.end(),
                                  [&](const auto& w) { return w.aggregator == plan.job.root; }));
}

absl::Status CheckJob(const topology::Topology& topo, const planner::Plan& plan,
                      const host_config::JobParams& job) {
  if (absl::Status s = planner::ValidatePlan(topo, plan); !s.ok()) return s;
  if (plan.workers.size() > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("job %d: %d workers; ranks are 16 bits", job.job_id, plan.workers.size()));
  }
  return ValidateJobParams(job);
}

}  // namespace

absl::StatusOr<uint32_t> NewToken() {
  uint32_t token = 0;
  while (token == 0) {
    const ssize_t n = ::getrandom(&token, sizeof(token), 0);
    if (n != static_cast<ssize_t>(sizeof(token))) {
      if (n < 0 && errno == EINTR) continue;
      return absl::UnavailableError(
          absl::StrFormat("job token: getrandom failed: %s", std::strerror(errno)));
    }
  }
  return token;
}

absl::Status ValidateJobParams(const host_config::JobParams& job) {
  if (job.token == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "job %d: token 0 is refused; every job needs its own (control::NewToken)", job.job_id));
  }
  if (job.slots == 0 || job.slots > wire::kMaxSlots) {
    return absl::InvalidArgumentError(absl::StrFormat("job %d: slots = %d; the pool takes 1 to %d",
                                                      job.job_id, job.slots, wire::kMaxSlots));
  }
  if (job.elements == 0 || job.elements > wire::kMaxElements) {
    return absl::InvalidArgumentError(
        absl::StrFormat("job %d: elements = %d; a packet takes 1 to %d", job.job_id, job.elements,
                        wire::kMaxElements));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<host_config::WorkerConfig>> BuildWorkerConfigs(
    const topology::Topology& topo, const planner::Plan& plan, const host_config::JobParams& job) {
  if (absl::Status s = CheckJob(topo, plan, job); !s.ok()) return s;
  const planner::PathLabels labels = planner::LabelPaths(plan);
  const auto aggregators = planner::Aggregators(plan);
  const uint16_t root_fan_in = RootFanIn(plan, aggregators.size());
  std::map<NodeId, uint16_t> members;
  for (const planner::Aggregator& a : aggregators) {
    members[a.node] = static_cast<uint16_t>(a.members.size());
  }
  // The switches the job's chunks pass, in path order, then the root.
  std::vector<std::string> nodes;
  for (const topology::Path& path : labels.paths) {
    for (NodeId n : path.nodes) {
      const std::string& name = topo.node(n).name;
      if (topo.node(n).is_switch() && std::find(nodes.begin(), nodes.end(), name) == nodes.end()) {
        nodes.push_back(name);
      }
    }
  }
  nodes.push_back(topo.node(plan.job.root).name);
  std::vector<host_config::WorkerConfig> out;
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    const planner::WorkerRoute& route = plan.workers[r];
    host_config::WorkerConfig w;
    w.job_id = job.job_id;
    w.token = job.token;
    w.rank = static_cast<uint16_t>(r);
    w.world = static_cast<uint16_t>(plan.workers.size());
    w.node = plan.job.workers[r];
    w.aggregator = route.aggregator;
    w.root = plan.job.root;
    w.up_label = static_cast<uint16_t>(job.label_base + labels.up[r]);
    const bool direct = route.aggregator == plan.job.root;
    w.next_path =
        direct ? 0 : static_cast<uint16_t>(job.label_base + labels.ToRoot(route.aggregator));
    // `members` holds every aggregator of the plan.
    const auto fan_in = members.find(route.aggregator);
    w.fan_in = direct ? root_fan_in : fan_in == members.end() ? 0 : fan_in->second;
    w.slots = job.slots;
    w.elements = job.elements;
    w.ip = NodeIp(w.node);
    w.aggregator_ip = NodeIp(route.aggregator);
    w.mac = NodeMac(w.node);
    if (route.up.nodes.size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrFormat("job %d rank %d: the uplink has no hop", job.job_id, r));
    }
    w.next_hop_mac = NodeMac(route.up.nodes[1]);
    w.aggregator_name = topo.node(route.aggregator).name;
    w.root_name = topo.node(plan.job.root).name;
    w.nodes = nodes;
    out.push_back(w);
  }
  return out;
}

absl::StatusOr<host_config::RootConfig> BuildRootConfig(const topology::Topology& topo,
                                                        const planner::Plan& plan,
                                                        const host_config::JobParams& job) {
  if (absl::Status s = CheckJob(topo, plan, job); !s.ok()) return s;
  const planner::PathLabels labels = planner::LabelPaths(plan);
  host_config::RootConfig root;
  root.job_id = job.job_id;
  root.token = job.token;
  root.world = static_cast<uint16_t>(plan.workers.size());
  root.node = plan.job.root;
  root.slots = job.slots;
  root.elements = job.elements;
  root.ip = NodeIp(root.node);
  root.mac = NodeMac(root.node);
  root.name = topo.node(root.node).name;
  // Every labelled path has at least two nodes (ValidatePlan).
  auto first_hop = [&](uint16_t label) {
    const topology::Path& path = labels.paths[label - 1];
    return NodeMac(path.nodes.size() > 1 ? path.nodes[1] : topology::kNoNode);
  };
  auto job_label = [&](uint16_t label) { return static_cast<uint16_t>(job.label_base + label); };
  for (const planner::Aggregator& a : planner::Aggregators(plan)) {
    host_config::RootConfig::Contributor c;
    c.node = a.node;
    c.is_switch = true;
    c.result_label = job_label(labels.FromRoot(a.node));
    c.ip = NodeIp(a.node);
    c.next_hop_mac = first_hop(labels.FromRoot(a.node));
    // A best-effort switch may pass its members' chunks on to the root.
    if (plan.best_effort) {
      for (int r : a.members)
        c.members.push_back({static_cast<uint16_t>(r), NodeIp(plan.job.workers[r])});
      if (const NodeId proxy = AtpProxy(topo, plan, a); proxy != topology::kNoNode) {
        c.proxy_ip = NodeIp(proxy);
      }
    }
    root.contributors.push_back(c);
  }
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    if (plan.workers[r].aggregator != plan.job.root) continue;
    host_config::RootConfig::Contributor c;
    c.node = plan.job.workers[r];
    c.rank = static_cast<uint16_t>(r);
    c.result_label = job_label(labels.result[r]);
    c.ip = NodeIp(c.node);
    c.next_hop_mac = first_hop(labels.result[r]);
    root.contributors.push_back(c);
  }
  return root;
}

}  // namespace grid::control
