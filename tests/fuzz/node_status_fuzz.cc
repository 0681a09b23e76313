// Arbitrary bytes as what a rank reads from the store about others: the
// first byte 'H' makes the rest a rank's heartbeat (api/health.h), anything
// else a switch's or the root's status (node/status.h). Whatever parses
// must format and parse back to the same value.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/health.h"
#include "node/status.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'H') {
    grid::api::Heartbeat beat;
    if (!grid::api::ParseHeartbeat(text, &beat)) return 0;
    grid::api::Heartbeat again;
    Check(grid::api::ParseHeartbeat(grid::api::FormatHeartbeat(beat), &again));
    Check(again.submitted == beat.submitted && again.unix_ms == beat.unix_ms &&
          again.ended == beat.ended);
    return 0;
  }
  grid::node::NodeStatus status;
  if (!grid::node::ParseNodeStatus(text, &status)) return 0;
  grid::node::NodeStatus again;
  Check(grid::node::ParseNodeStatus(grid::node::FormatNodeStatus(status), &again));
  Check(again == status);
  return 0;
}
