// The frame width and pool size of a job that does not name them, from the
// paths' MTU, what the switches hold, and the bytes a rank keeps in flight
// (docs/worker.md, "Frame width and pool").
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "grid/control.h"

namespace grid::control {

uint32_t PoolSlots(uint16_t elements, uint64_t bdp_bytes, uint32_t max_slots) {
  elements = std::max<uint16_t>(elements, 1);
  // The pool bounds the window: at least 64 KiB of payload, as 256 slots of
  // 64 elements hold, and at least 128 slots. A float operation's probes,
  // one per slot, are header-only, so a wide frame's pool costs them little;
  // 128 wide slots beat 64 at 1 MiB on both emulated fabrics, and 256 were
  // no faster (docs/results.md, "Header-only probes, a pool of 128 ...").
  constexpr uint32_t kPoolPayloadBytes = 64 * 1024;
  const uint32_t frame_payload = uint32_t{elements} * wire::kElementBytes;
  uint64_t slots =
      std::clamp<uint32_t>((kPoolPayloadBytes + frame_payload - 1) / frame_payload, 128, 256);
  // A slot is busy for a whole round trip, so a rank sends at most a pool
  // per round trip: to reach its planned rate, the pool holds the
  // bandwidth-delay product in whole frames.
  const uint64_t frame = wire::FrameBytes(elements);
  slots = std::max<uint64_t>(slots, (bdp_bytes + frame - 1) / frame);
  // The root keeps two copies of every slot's sum, 4 bytes an element, and
  // no switch memory bounds it: whatever round trip it is given, the
  // automatic pool keeps those within kPoolRootBytes (8192 frames of 1024
  // elements). A larger pool can still be set by hand.
  constexpr uint64_t kPoolRootBytes = uint64_t{64} << 20;
  slots = std::min<uint64_t>(slots, kPoolRootBytes / (2 * uint64_t{frame_payload}));
  return static_cast<uint32_t>(std::min<uint64_t>(slots, max_slots));
}

absl::StatusOr<FrameChoice> ChooseFrames(size_t path_mtu, uint16_t switch_elements,
                                         uint64_t bdp_bytes, uint32_t max_slots) {
  // Wider frames cost less per byte: fewer headers (76 bytes each) and fewer
  // packets through every switch and host. Multiples of 32 keep the
  // quantize loops on whole vectors.
  uint16_t elements = std::min(switch_elements, wire::MaxElementsForMtu(path_mtu));
  if (elements == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MTU %d: a GRID frame needs an IP packet of at least %d bytes", path_mtu,
                        wire::FrameBytes(1) - sizeof(wire::EthernetHeader)));
  }
  if (max_slots == 0) {
    return absl::InvalidArgumentError(
        "max_slots = 0: the aggregation switches have no slots left for the job's pool");
  }
  if (elements >= 32) elements -= elements % 32;
  return FrameChoice{elements, PoolSlots(elements, bdp_bytes, max_slots)};
}

absl::StatusOr<uint64_t> PlanBdpBytes(const topology::Topology& topology, const planner::Plan& plan,
                                      absl::Duration rtt) {
  auto rates = planner::Evaluate(topology, plan, planner::Model::kLinks);
  if (!rates.ok()) return rates.status();
  auto latency_us = [&](const topology::Path& p) {
    double us = 0;
    for (topology::ArcId arc : p.arcs) us += topology.link(arc / 2).latency_us;
    return us;
  };
  double most = 0;
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    const planner::WorkerRoute& route = plan.workers[r];
    double seconds = absl::ToDoubleSeconds(rtt);
    if (rtt <= absl::ZeroDuration()) {
      // Up to the aggregator, on to the root, and the result back the same way.
      double one_way = latency_us(route.up);
      if (auto it = plan.to_root.find(route.aggregator); it != plan.to_root.end()) {
        one_way += latency_us(it->second);
      }
      seconds = 2 * one_way * 1e-6;
    }
    most = std::max(most, rates->worker_gbps[r] * 1e9 / 8 * seconds);
  }
  return static_cast<uint64_t>(std::ceil(most));
}

absl::StatusOr<uint32_t> PoolLimit(const topology::Topology& topology, const planner::Plan& plan,
                                   uint32_t slot_base) {
  if (absl::Status st = planner::ValidatePlan(topology, plan); !st.ok()) return st;
  // The pools a switch holds for the job (BuildSwitchConfigs): its own as an
  // aggregator, pool 0, and one after it for each best-effort aggregator it
  // completes chunks for (AtpProxy), whose pool numbers start at 1 whether
  // or not it aggregates.
  std::map<topology::NodeId, uint32_t> pools;
  for (const planner::Aggregator& a : planner::Aggregators(plan)) {
    pools[a.node] = std::max<uint32_t>(pools[a.node], 1);
    if (topology::NodeId proxy = AtpProxy(topology, plan, a); proxy != topology::kNoNode) {
      pools[proxy] = std::max<uint32_t>(pools[proxy], 1) + 1;
    }
  }
  uint32_t limit = wire::kMaxSlots;
  for (const auto& [node, count] : pools) {
    const topology::Node& n = topology.node(node);
    const auto memory = static_cast<uint32_t>(std::max(0, n.slots));
    const uint32_t fits = memory > slot_base ? (memory - slot_base) / count : 0;
    if (fits == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "switch \"%s\": %d slots of aggregator memory hold no pool of the job above slot_base "
          "%d (it needs %d pools there)",
          n.name, memory, slot_base, count));
    }
    limit = std::min(limit, fits);
  }
  return limit;
}

absl::StatusOr<uint32_t> P4PoolLimit(const topology::Topology& topology, const planner::Plan& plan,
                                     uint32_t slot_base) {
  // The switch tables (BuildSwitchConfigs) hold proxies' pools too, within
  // the topology's memory ...
  auto limit = PoolLimit(topology, plan, slot_base);
  if (!limit.ok()) return limit.status();
  // ... and the programs' registers one pool per aggregator: their entries
  // leave proxies out (ConfigToP4Entries). The Tofino tag orders pools of
  // up to kP4MaxPool.
  const auto registers = static_cast<uint32_t>(sw::kP4MaxSlots);
  for (const planner::Aggregator& a : planner::Aggregators(plan)) {
    if (slot_base >= registers) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "switch \"%s\": the P4 programs' %d slots hold no pool above slot_base %d",
          topology.node(a.node).name, registers, slot_base));
    }
    limit = std::min({*limit, registers - slot_base, sw::kP4MaxPool});
  }
  return limit;
}

}  // namespace grid::control
