// What each host of a job is configured with: the job's parameters, a
// worker's config and the root's (docs/worker.md). The controller makes them
// (grid/control.h); the engines and the communicator read them, without the
// planner or the switch tables.
#ifndef GRID_HOST_CONFIG_H_
#define GRID_HOST_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grid/export.h"
#include "grid/topology.h"
#include "grid/wire.h"

GRID_API_BEGIN

namespace grid::host_config {

struct JobParams {
  uint16_t job_id = 1;
  // The job's token (docs/security.md): what keeps strays and other jobs'
  // packets out of its slots. Draw it with NewToken(); 0 is refused.
  uint32_t token = 0;
  uint32_t slots = 256;    // pool size P on every aggregating switch
  uint32_t slot_base = 0;  // where the pool starts in each switch's slot memory
  // The job's path labels are label_base + 1, label_base + 2, ...: jobs that
  // share switches take disjoint ranges, as they take disjoint pools.
  uint16_t label_base = 0;
  uint16_t elements = wire::kDefaultElements;
};

// What a worker needs to put its chunks on the wire: where its DATA goes
// (the plan's aggregation node and path), with which fan-in, and its pool.
struct WorkerConfig {
  uint16_t job_id = 0;
  uint32_t token = 0;
  uint16_t rank = 0;
  uint16_t world = 0;
  topology::NodeId node = topology::kNoNode;        // the worker's host
  topology::NodeId aggregator = topology::kNoNode;  // a switch, or the root
  topology::NodeId root = topology::kNoNode;
  uint16_t up_label = 0;   // DATA's path label
  uint16_t next_path = 0;  // the aggregator's path on to the root (0 if direct)
  uint16_t fan_in = 0;     // contributions the aggregator expects
  uint32_t slots = 0;      // pool size P
  uint16_t elements = 0;   // elements per packet
  uint32_t ip = 0;         // this host
  uint32_t aggregator_ip = 0;
  wire::MacAddress mac{};
  wire::MacAddress next_hop_mac{};  // the first hop of the uplink
  // The topology's names of the aggregator and the root ("S1", "PS"), for
  // errors; optional in the JSON (empty: errors give node ids).
  std::string aggregator_name;
  std::string root_name;
  // The nodes the job's chunks pass (the switches on its paths, then the
  // root), by name: the rank watches their status in the store
  // (docs/worker.md, "What nodes tell the ranks"). Optional in the JSON.
  std::vector<std::string> nodes;
};

// What the root needs to complete chunks: its contributors (one bit each)
// and how to send each its result.
struct RootConfig {
  struct Contributor {
    topology::NodeId node = topology::kNoNode;  // a switch, or a direct worker's host
    bool is_switch = false;
    uint16_t rank = 0;          // direct workers: the rank
    uint16_t result_label = 0;  // the path RESULT copies take to it
    uint32_t ip = 0;
    wire::MacAddress next_hop_mac{};  // the first hop of that path
    // A best-effort switch (ATP) passes some chunks on unaggregated: its
    // members, whose DATA the root then takes in its stead, each covering
    // one of the switch's members.size() shares of the chunk.
    struct Member {
      uint16_t rank = 0;
      uint32_t ip = 0;
    };
    std::vector<Member> members;  // empty: the switch never passes on
    // ATP's second level: the switch that completes, in this switch's
    // stead, the chunks it passes on (grid::control::AtpProxy), sending a partial
    // with PASSED from its own address. 0: none.
    uint32_t proxy_ip = 0;
  };
  uint16_t job_id = 0;
  uint32_t token = 0;
  uint16_t world = 0;
  topology::NodeId node = topology::kNoNode;
  uint32_t slots = 0;
  uint16_t elements = 0;
  uint32_t ip = 0;
  wire::MacAddress mac{};
  // The topology's name of the root's host: the key of its status in the
  // store (grid/node/NAME). Optional in the JSON.
  std::string name;
  std::vector<Contributor> contributors;  // index = contributor bit
};

// JSON forms, "grid-worker/1" and "grid-root/1" (docs/worker.md). Parsing
// checks every field and names the one at fault.
std::string WorkerConfigToJson(const WorkerConfig& config);
absl::StatusOr<WorkerConfig> ParseWorkerConfigJson(std::string_view text);
std::string RootConfigToJson(const RootConfig& config);
absl::StatusOr<RootConfig> ParseRootConfigJson(std::string_view text);

}  // namespace grid::host_config

GRID_API_END

#endif  // GRID_HOST_CONFIG_H_
