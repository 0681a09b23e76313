// One grid-ns3 run: a job planned on a topology (control::PlanJob, as
// grid-controller plans it), its switches, root and ranks on an ns-3
// fabric, one allreduce on every rank, and what came of it. A run is a pure
// function of its Scenario: the same one gives the same digest
// (docs/simulation.md, "Determinism").
#ifndef GRID_SIM_SCENARIO_H_
#define GRID_SIM_SCENARIO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/options.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "grid/types.h"
#include "root/engine.h"
#include "sim/fabric.h"
#include "transport/faults.h"

namespace grid::sim {

// Faults on a schedule, part of a run's input. Times count from the start
// of the allreduce.
struct FaultEvent {
  enum class Kind { kLinkDown, kLinkUp, kSwitchRestart, kRootRestart };
  Kind kind = Kind::kLinkDown;
  absl::Duration at;
  std::string a, b;  // a link's ends, or the switch (a)
};
struct FaultSchedule {
  transport::LinkFaults links;  // every link direction (its own seed each)
  std::vector<FaultEvent> events;
  // Ranks that start late, by how much: a slow rank.
  std::vector<std::pair<int, absl::Duration>> slow;
  // The spec ParseFaultSchedule reads back.
  std::string ToSpec() const;
};
// "loss=P,dup=P,reorder=P;down=A-B@T;up=A-B@T;restart=S@T;root@T;slow=R@T"
// (times as absl durations: "2ms", "150us"). Errors name the part at fault.
absl::StatusOr<FaultSchedule> ParseFaultSchedule(std::string_view spec);

struct Scenario {
  std::string topology = "testbed";  // a generator spec or a JSON file
  std::string planner = "grid";
  // ATP best effort, as grid-controller plans it by default (--atp).
  planner::PlannerOptions planner_options = [] {
    planner::PlannerOptions o;
    o.atp_best_effort = true;
    return o;
  }();
  int workers = 8;
  uint64_t seed = 1;        // the job's hosts, its token and the ranks' data
  size_t elements = 65536;  // per rank
  DataType type = DataType::kInt32;
  // The job's frame width and pool; 0: chosen as grid-controller chooses
  // them by default (--elements=auto --slots=auto).
  uint16_t frame_elements = 0;
  uint32_t slots = 0;
  // The switches' CONGESTION mark threshold, in queued frames; 0: the
  // tables' default (sw::SwitchConfig::congestion_threshold).
  uint32_t congestion_threshold = 0;
  EngineOptions engine;
  FaultSchedule faults;
};

struct RankOutcome {
  bool ended = false;   // false: it hung (the run stopped at twice its timeout)
  absl::Status status;  // Unavailable "never ended" when it hung
  absl::Duration elapsed;
  bool exact = false;                     // int32: every element; float32: within numerics' bound
  double gbps = 0;                        // bytes it sent over its time
  double links_gbps = 0, paper_gbps = 0;  // the flow model's rate for it
  CommunicatorStats stats;
};

struct Outcome {
  std::vector<RankOutcome> ranks;
  std::vector<std::string> aggregators;  // the plan's aggregation switches, by name
  std::string root_host;                 // the root's host, by name
  std::vector<topology::NodeId> hosts;   // rank r's host
  uint32_t slots = 0;                    // the job's pool
  uint16_t elements = 0;                 // and frame width, as PlanJob chose them
  absl::Duration comm_time;              // until the last rank ended
  uint64_t digest = 0;
  FabricStats fabric;
  root::RootStats root;
  uint64_t switch_drops = 0;  // the pipelines' drops, every reason
  std::vector<std::pair<std::string, uint64_t>> drops_by_reason;
  double max_link_utilization = 0;  // the busiest link direction's bytes over comm_time
  // Every link direction that carried a frame: its ends, rate, and the
  // bytes it carried over comm_time as a fraction of its rate.
  struct LinkLoad {
    std::string from, to;
    double gbps = 0;
    uint64_t bytes = 0;
    double utilization = 0;
  };
  std::vector<LinkLoad> links;
  uint64_t events = 0;
  double wall_seconds = 0;
  bool all_exact() const;
  uint64_t resends() const;  // the ranks' retransmissions, summed
  // The longest time a rank spent in its allreduce, from its own start: what
  // a testbed that times each rank's AllReduce call reports (with late
  // starts, it is less than comm_time).
  absl::Duration slowest_rank() const;
  double bytes_per_rank() const;  // the ranks' bytes sent, resends included, averaged
};

// Runs `scenario` in ns-3. The error names what could not be set up (the
// topology, the plan, a host); how each rank ended is in the outcome.
absl::StatusOr<Outcome> RunScenario(const Scenario& scenario);

}  // namespace grid::sim

#endif  // GRID_SIM_SCENARIO_H_
