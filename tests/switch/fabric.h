// Test helpers: a job planned on a topology, its switch tables, and crafted
// GRID frames as workers and the root would send them.
#ifndef GRID_TESTS_SWITCH_FABRIC_H_
#define GRID_TESTS_SWITCH_FABRIC_H_

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "grid/control.h"
#include "grid/planner.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "grid/wire.h"

namespace grid::testing {

struct Job {
  topology::Topology topo;
  planner::Plan plan;
  planner::PathLabels labels;
  host_config::JobParams params;
  std::map<topology::NodeId, sw::SwitchConfig> configs;
  uint16_t root_fan_in = 0;  // contributors at the root: aggregating switches + direct workers

  topology::NodeId node(const std::string& name) const { return *topo.Find(name); }
  // The port of switch `s` that leads to neighbour `to`.
  uint16_t PortTo(topology::NodeId s, topology::NodeId to) const {
    const auto adj = topo.neighbors(s);
    for (size_t p = 0; p < adj.size(); ++p) {
      if (adj[p].node == to) return static_cast<uint16_t>(p);
    }
    return 0xffff;
  }
};

inline Job MakeJob(const std::string& spec, const std::string& planner_name, int workers,
                   uint64_t seed = 1, uint32_t slots = 8, uint16_t elements = 4) {
  Job j;
  j.topo = *topology::GenerateTopology(spec);
  auto spec_job = planner::MakeJob(j.topo, workers, std::nullopt, seed);
  auto p = planner::PlannerRegistry::WithBuiltins().Create(planner_name);
  j.plan = *(*p)->Plan(j.topo, *spec_job);
  j.labels = planner::LabelPaths(j.plan);
  j.params.job_id = 7;
  j.params.token = 0xc0ffee;
  j.params.slots = slots;
  j.params.elements = elements;
  j.configs = *control::BuildSwitchConfigs(j.topo, j.plan, j.params);
  // Frames are fed without a clock here, so no capacity credit accrues:
  // these switches aggregate without limit (the capacity tests set one).
  for (auto& [node, config] : j.configs) config.capacity_gbps = 0;
  j.root_fan_in = static_cast<uint16_t>(j.plan.to_root.size());
  for (const auto& w : j.plan.workers) j.root_fan_in += w.aggregator == j.plan.job.root;
  return j;
}

// A DATA frame from `rank` for chunk (op, chunk) with the given values.
inline std::vector<uint8_t> DataFrame(const Job& j, int rank, uint32_t op, uint32_t chunk,
                                      const std::vector<int32_t>& values, uint8_t extra_flags = 0) {
  const planner::WorkerRoute& route = j.plan.workers[rank];
  wire::Header h;
  h.type = wire::MessageType::kData;
  h.job_id = j.params.job_id;
  h.job_token = j.params.token;
  h.rank = static_cast<uint16_t>(rank);
  h.agg_node = static_cast<uint16_t>(route.aggregator);
  h.path = j.labels.up[rank];
  const bool direct = route.aggregator == j.plan.job.root;
  h.next_path = direct ? 0 : j.labels.to_root.at(route.aggregator);
  uint16_t fan_in = 0;
  for (const auto& w : j.plan.workers) fan_in += w.aggregator == route.aggregator;
  h.fan_in = direct ? j.root_fan_in : fan_in;
  const uint64_t stream = chunk;  // one operation stream: slot and copy from the chunk
  h.slot = static_cast<uint16_t>(stream % j.params.slots);
  h.flags =
      static_cast<uint8_t>(((stream / j.params.slots) % 2 ? wire::flags::kCopy : 0) | extra_flags);
  h.op_seq = op;
  h.chunk = chunk;
  h.exponent = 130;
  h.next_exponent = static_cast<uint8_t>(120 + rank);
  h.num_elements = static_cast<uint16_t>(values.size());
  wire::FrameAddress a;
  a.src_ip = control::NodeIp(j.plan.job.workers[rank]);
  a.dst_ip = control::NodeIp(route.aggregator);
  a.src_mac = control::NodeMac(j.plan.job.workers[rank]);
  a.dst_mac = control::NodeMac(route.up.nodes[1]);
  std::vector<uint8_t> payload(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) wire::StoreElement(payload.data(), i, values[i]);
  std::vector<uint8_t> frame(wire::FrameBytes(h.num_elements));
  (void)wire::EncodeFrame(a, h, payload, absl::MakeSpan(frame));
  return frame;
}

// A plain UDP packet (DNS's port, not GRID's) from rank `from`'s host to
// rank `to`'s: switches forward it by address.
inline std::vector<uint8_t> OtherFrame(const Job& j, int from, int to) {
  std::vector<uint8_t> f = DataFrame(j, from, 1, 0, {1, 2, 3, 4});
  wire::Ipv4Header ip;
  std::memcpy(&ip, f.data() + wire::kIpv4Offset, sizeof(ip));
  ip.dst = wire::HostToNet32(control::NodeIp(j.plan.job.workers[to]));
  ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(f.data() + wire::kIpv4Offset, &ip, sizeof(ip));
  const uint16_t dns = wire::HostToNet16(53);
  std::memcpy(f.data() + wire::kUdpOffset + 2, &dns, 2);
  return f;
}

}  // namespace grid::testing

#endif  // GRID_TESTS_SWITCH_FABRIC_H_
