// Arbitrary text as a grid-ns3 fault schedule (sim/scenario.h): whatever
// parses must print a spec that parses back to the same schedule, value
// for value, since that is how a failing sweep seed replays
// (docs/simulation.md).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/scenario.h"

namespace {

bool Same(const grid::sim::FaultSchedule& a, const grid::sim::FaultSchedule& b) {
  if (a.links.loss != b.links.loss || a.links.duplicate != b.links.duplicate ||
      a.links.reorder != b.links.reorder || a.links.seed != b.links.seed ||
      a.events.size() != b.events.size() || a.slow != b.slow) {
    return false;
  }
  for (size_t i = 0; i < a.events.size(); ++i) {
    const auto& x = a.events[i];
    const auto& y = b.events[i];
    if (x.kind != y.kind || x.at != y.at || x.a != y.a || x.b != y.b) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto schedule = grid::sim::ParseFaultSchedule(text);
  if (!schedule.ok()) return 0;
  auto again = grid::sim::ParseFaultSchedule(schedule->ToSpec());
  if (!again.ok() || !Same(*schedule, *again)) std::abort();
  return 0;
}
