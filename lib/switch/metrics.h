// grid-switch's counters for Prometheus (grid-switch --metrics; docs/
// switch.md, "Metrics"): drops by reason, forwarding, each job's counters,
// each port's packets and bytes, and the drops counted against each (job,
// token) that the job's ranks also read (node/drop_ledger.h).
#ifndef GRID_LIB_SWITCH_METRICS_H_
#define GRID_LIB_SWITCH_METRICS_H_

#include <string>
#include <vector>

#include "grid/switch.h"
#include "node/drop_ledger.h"

namespace grid::sw {

// The exposition text; every sample is labelled switch="`name`".
std::string CountersToPrometheus(const std::string& name, const Counters& counters,
                                 const std::vector<node::JobDrops>& job_drops);

}  // namespace grid::sw

#endif  // GRID_LIB_SWITCH_METRICS_H_
