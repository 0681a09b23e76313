// GRID_TRACE for the node tools (grid-switch, grid-root), read as the
// library reads it for a rank: the directory each writes its timeline to
// when it stops, and GRID_TRACE_EVENTS, the events each thread keeps
// (docs/observability.md).
#ifndef GRID_TOOLS_TRACE_ENV_H_
#define GRID_TOOLS_TRACE_ENV_H_

#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "trace/recorder.h"

namespace grid::tools {

struct TraceEnv {
  std::string dir;    // "": off
  size_t events = 0;  // per thread; 0 when off
};

inline absl::StatusOr<TraceEnv> TraceFromEnvironment() {
  TraceEnv t;
  const char* dir = std::getenv("GRID_TRACE");
  if (dir == nullptr || *dir == '\0') return t;
  t.dir = dir;
  t.events = trace::TraceTunables::kDefaultEvents;
  if (const char* n = std::getenv("GRID_TRACE_EVENTS"); n != nullptr && *n != '\0') {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(n, &v) || v < 1 || v > (uint64_t{1} << 26)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("GRID_TRACE_EVENTS=\"%s\": an integer from 1 to 2^26", n));
    }
    t.events = static_cast<size_t>(v);
  }
  return t;
}

}  // namespace grid::tools

#endif  // GRID_TOOLS_TRACE_ENV_H_
