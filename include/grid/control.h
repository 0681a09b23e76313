// Control plane glue: turns a plan into what each component is configured
// with: the switch table entries (docs/switch.md), and the worker and root
// configs the engines run with (docs/worker.md).
#ifndef GRID_CONTROL_H_
#define GRID_CONTROL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/export.h"
#include "grid/host_config.h"
#include "grid/planner.h"
#include "grid/switch.h"

GRID_API_BEGIN

namespace grid {
class Store;
}

namespace grid::control {

// Addresses the controller gives nodes: 10.0.0.0/16 by node id (id + 1),
// and a locally administered MAC with the same number.
uint32_t NodeIp(topology::NodeId node);
wire::MacAddress NodeMac(topology::NodeId node);

// A job token from the operating system's random source (getrandom), never 0.
absl::StatusOr<uint32_t> NewToken();

// Checks a job's parameters: a token, a pool and a packet size in range.
// Errors name the job and the field.
absl::Status ValidateJobParams(const host_config::JobParams& job);

// The frame width and pool size of a job that does not name them
// (docs/worker.md, "Frame width and pool").
struct FrameChoice {
  uint16_t elements = 0;
  uint32_t slots = 0;
};
// `path_mtu`: the smallest MTU (IP bytes) on the job's paths.
// `switch_elements`: the widest frame every aggregation switch sums
// (wire::kMaxElements for grid-switch, wire::kDefaultElements for the P4
// programs).
// `bdp_bytes`: the bytes a rank keeps in flight at its planned rate
// (PlanBdpBytes); the pool holds that many bytes in whole frames. 0: unknown.
// `max_slots`: the most slots the aggregation switches give the job
// (PoolLimit); the pool never exceeds it.
// The error names the MTU when not one element fits.
absl::StatusOr<FrameChoice> ChooseFrames(size_t path_mtu, uint16_t switch_elements,
                                         uint64_t bdp_bytes = 0,
                                         uint32_t max_slots = wire::kMaxSlots);
// The pool ChooseFrames gives frames of `elements` (also for a width the
// job names itself): at least 64 KiB of payload, from 128 to 256 slots, or
// the bandwidth-delay product in frames if that is more, and at most
// `max_slots` and what keeps the root's two copies of the sums within
// 64 MiB (8192 frames of 1024 elements).
uint32_t PoolSlots(uint16_t elements, uint64_t bdp_bytes, uint32_t max_slots = wire::kMaxSlots);

// The largest bandwidth-delay product of the plan's ranks: the rate the
// flow model gives each (links regime) times its round trip to the root and
// back. The round trip is `rtt` when it is given (measured, say with ping),
// else twice the sum of the topology's link latencies on the rank's path.
absl::StatusOr<uint64_t> PlanBdpBytes(const topology::Topology& topology, const planner::Plan& plan,
                                      absl::Duration rtt = absl::ZeroDuration());

// The most slots a job's pool may have on the plan's switches: their
// aggregator memory above `slot_base`, shared by the pools the job takes at
// each (one as an aggregator, and one per best-effort aggregator it
// completes chunks for). An error names a switch that has no room for one.
absl::StatusOr<uint32_t> PoolLimit(const topology::Topology& topology, const planner::Plan& plan,
                                   uint32_t slot_base);
// The same for switches that run the P4 programs (sw::ConfigToP4Entries):
// their registers hold sw::kP4MaxSlots whatever the topology says, with no
// pools for proxies, and a pool is at most sw::kP4MaxPool.
absl::StatusOr<uint32_t> P4PoolLimit(const topology::Topology& topology, const planner::Plan& plan,
                                     uint32_t slot_base);

// ---- Planning a job -----------------------------------------------------------

// What the aggregation switches run: grid-switch (frames up to
// wire::kMaxElements, its slot memory from the topology: PoolLimit) or the
// P4 programs (wire::kDefaultElements, sw::kP4MaxSlots registers and pools
// of at most sw::kP4MaxPool: P4PoolLimit).
enum class SwitchKind { kGrid, kP4 };

// A job to plan: who takes part, which planner, and what the fabric
// carries. grid-controller and rank 0 as the controller both plan through
// PlanJob, so a job planned either way is the same job.
struct JobRequest {
  int workers = 0;
  std::string root;  // the root's host name; empty: the topology's or a seeded choice
  uint64_t seed = 1;  // planner::MakeJob's choice of hosts
  std::string planner = "grid";
  planner::PlannerOptions planner_options;
  // Where `planner` is looked up; null: the built-in planners.
  const planner::PlannerRegistry* planners = nullptr;
  // Elements or slots 0: chosen (ChooseFrames, PoolSlots); token 0: drawn
  // (NewToken).
  host_config::JobParams params;
  size_t path_mtu = 1500;  // the smallest MTU (IP bytes) on the job's paths
  SwitchKind switches = SwitchKind::kGrid;
  // The round trip a pool must cover: measured (CommunicatorStats::min_rtt,
  // ping); zero: from the topology's link latencies (PlanBdpBytes).
  absl::Duration rtt = absl::ZeroDuration();
};

struct PlannedJob {
  planner::Plan plan;
  host_config::JobParams params;        // every field chosen
  uint64_t bdp_bytes = 0;  // the pool's bandwidth-delay product (PlanBdpBytes)
};

// Plans `request` on `topology`: the hosts, the planner's plan, the frame
// width, the pool (within the switches' limits) and the token. Errors name
// the field or host at fault.
absl::StatusOr<PlannedJob> PlanJob(const topology::Topology& topology, const JobRequest& request);

// Adds the tables of another job to `into`, switch by switch: for jobs that
// share switches. Errors name the switch and what clashes: the same job id, a
// label routed two ways (give the jobs disjoint label_base ranges), an
// overlapping pool (disjoint slot_base ranges), different identities.
absl::Status MergeSwitchConfigs(const std::map<topology::NodeId, sw::SwitchConfig>& more,
                                std::map<topology::NodeId, sw::SwitchConfig>& into);

// One SwitchConfig per switch of the topology. Port p of a switch is its p-th
// link in topology order (Topology::neighbors). Every switch gets:
// - the job's token;
// - a label route for each labelled path through it;
// - an IPv4 route to every host (for non-GRID traffic);
// - for the aggregating switches, the members, their result paths and the
//   way to the root.
absl::StatusOr<std::map<topology::NodeId, sw::SwitchConfig>> BuildSwitchConfigs(
    const topology::Topology& topology, const planner::Plan& plan, const host_config::JobParams& job);

// ATP's second level (docs/switch.md, "Best effort"): the switch that
// completes the chunks best-effort aggregator `aggregator` passes on. That is
// the root's ToR when it is programmable, on the aggregator's way to the
// root, and not the aggregator itself; kNoNode otherwise (passed chunks then
// go to the root).
topology::NodeId AtpProxy(const topology::Topology& topology, const planner::Plan& plan,
                          const planner::Aggregator& aggregator);

// Publishes a planned job into a rendezvous store: grid/plan,
// grid/switch/<name>, grid/root and grid/worker/<rank> (docs/worker.md).
absl::Status PublishJob(const topology::Topology& topology, const planner::Plan& plan,
                        const host_config::JobParams& job, Store& store);

absl::StatusOr<std::vector<host_config::WorkerConfig>> BuildWorkerConfigs(const topology::Topology& topology,
                                                             const planner::Plan& plan,
                                                             const host_config::JobParams& job);
absl::StatusOr<host_config::RootConfig> BuildRootConfig(const topology::Topology& topology,
                                           const planner::Plan& plan, const host_config::JobParams& job);

}  // namespace grid::control

GRID_API_END

#endif  // GRID_CONTROL_H_
