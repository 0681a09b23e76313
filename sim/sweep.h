// grid-ns3's seed sweep: random fault schedules against one job, each run
// judged by the protocol's promise (docs/simulation.md, "The seed sweep"):
// every rank ends with the exact sum, or with an error within twice its
// timeout; never a wrong sum, never a hang. A failing seed replays alone
// with the command the sweep prints.
#ifndef GRID_SIM_SWEEP_H_
#define GRID_SIM_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "sim/scenario.h"

namespace grid::sim {

// What a fault schedule may aim at: the plan's aggregation switches, the
// root's host and the ranks, from a run without faults, and that run's
// communication time, within which the faults fall.
struct Targets {
  std::vector<std::string> aggregators;
  std::string root;
  int ranks = 0;
  absl::Duration horizon;
};

// A schedule drawn from `seed`: loss, duplication and reordering on every
// link (each up to a few percent), and maybe a link of an aggregation
// switch or the root down for a while (or for good), an aggregation switch
// or the root restarting, a rank starting late.
FaultSchedule RandomFaultSchedule(const topology::Topology& topology, const Targets& targets,
                                  uint64_t seed);

// Empty when `out` keeps the promise; else what broke it, per rank.
std::vector<std::string> Violations(const Outcome& out, absl::Duration timeout);

// The grid-ns3 command line that runs `scenario` alone.
std::string ReplayCommand(const Scenario& scenario);

}  // namespace grid::sim

#endif  // GRID_SIM_SWEEP_H_
