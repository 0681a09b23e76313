// The per-job counters by name, in one place for every view of them: the
// sums over lcores (Counters::Add), the JSON of SIGUSR1 and of the final
// report (CountersToJson), and the Prometheus metrics (switch/metrics.h).
#ifndef GRID_LIB_SWITCH_COUNTER_FIELDS_H_
#define GRID_LIB_SWITCH_COUNTER_FIELDS_H_

#include <array>
#include <cstdint>

#include "grid/switch.h"

namespace grid::sw {

struct JobCounterField {
  const char* name;
  uint64_t JobCounters::*member;
  const char* help;
};

inline constexpr std::array<JobCounterField, 11> kJobCounterFields = {{
    {"data", &JobCounters::data, "DATA frames aggregated here (added to a slot)"},
    {"partials", &JobCounters::partials, "partials sent on completion"},
    {"partials_resent", &JobCounters::partials_resent,
     "partials sent again for a retransmission into a complete copy"},
    {"results", &JobCounters::results, "RESULTs received for the members"},
    {"replicas", &JobCounters::replicas, "RESULT copies sent to members"},
    {"collisions", &JobCounters::collisions, "chunks that found their slot busy"},
    {"duplicates", &JobCounters::duplicates, "retransmissions into an incomplete copy"},
    {"overflows", &JobCounters::overflows, "completed chunks whose int32 sum wrapped"},
    {"passed", &JobCounters::passed, "DATA passed on toward the root (best effort)"},
    {"passed_chunks", &JobCounters::passed_chunks, "chunks this switch left to the root"},
    {"proxied", &JobCounters::proxied, "DATA aggregated here as another switch's proxy"},
}};

}  // namespace grid::sw

#endif  // GRID_LIB_SWITCH_COUNTER_FIELDS_H_
