// GRID_TRACE at a switch (docs/observability.md): a sample of one pipeline
// and its ports as counter events, taken by the runtime's transmit round
// every TraceTunables::kCounterInterval: the slot pool's occupancy, the
// egress queues' depths, what was aggregated and passed on, and the drops
// by reason (cumulative, so a rate is a slope).
#ifndef GRID_LIB_SWITCH_TRACE_SAMPLE_H_
#define GRID_LIB_SWITCH_TRACE_SAMPLE_H_

#include <cstdint>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grid/switch.h"
#include "trace/recorder.h"

namespace grid::sw {

// `depths[p]`: port p's queue; `impaired`, `queue`: the ports' drops before
// the wire (PortDrops).
void SampleSwitch(trace::Recorder& trace, absl::Time now, const Pipeline& pipeline,
                  absl::Span<const uint32_t> depths, uint64_t impaired, uint64_t queue);

// "port 0" ... "port 255" as strings that live as long as the process (a
// trace's argument names must).
const char* PortArgName(uint16_t port);

}  // namespace grid::sw

#endif  // GRID_LIB_SWITCH_TRACE_SAMPLE_H_
