// Control plane glue: turns a plan into what each component is configured
// with. For now, the switch table entries (docs/switch.md); worker configs come
// with the worker library.
#ifndef GRID_CONTROL_H_
#define GRID_CONTROL_H_

#include <cstdint>
#include <map>

#include "absl/status/statusor.h"
#include "grid/planner.h"
#include "grid/switch.h"

namespace grid::control {

// Addresses the controller gives nodes: 10.0.0.0/16 by node id (id + 1),
// and a locally administered MAC with the same number.
uint32_t NodeIp(topology::NodeId node);
wire::MacAddress NodeMac(topology::NodeId node);

struct JobParams {
  uint16_t job_id = 1;
  uint32_t token = 0;
  uint32_t slots = 256;    // pool size P on every aggregating switch
  uint32_t slot_base = 0;  // where the pool starts in each switch's slot memory
  uint16_t elements = wire::kDefaultElements;
};

// One SwitchConfig per switch of the topology. Port p of a switch is its p-th
// link in topology order (Topology::neighbors). Every switch gets:
// - the job's token;
// - a label route for each labelled path through it;
// - an IPv4 route to every host (for non-GRID traffic);
// - for the aggregating switches, the members, their result paths and the
//   way to the root.
absl::StatusOr<std::map<topology::NodeId, sw::SwitchConfig>> BuildSwitchConfigs(
    const topology::Topology& topology, const planner::Plan& plan, const JobParams& job);

}  // namespace grid::control

#endif  // GRID_CONTROL_H_
