// GRID_TRACE's file of a rank (docs/observability.md): its lanes' recorders,
// written once the lanes are joined.
#include <unistd.h>

#include "absl/strings/str_format.h"
#include "api/progress.h"
#include "trace/chrome.h"

namespace grid::api {

absl::Status ProgressLoop::WriteTrace() const {
  if (options_.trace_dir.empty()) return absl::OkStatus();
  trace::TraceProcess p;
  p.name = absl::StrFormat("rank %d (job %d)", config_.rank, config_.job_id);
  p.role = "rank";
  p.pid = static_cast<int>(::getpid());
  uint32_t window = 0;  // over the lanes: the rank's
  for (size_t k = 0; k < lanes_.size(); ++k) {
    p.tracks.push_back({absl::StrFormat("lane %d", k), lanes_[k]->trace.get()});
    window += lanes_[k]->engine->max_window();
  }
  p.other_json = absl::StrFormat(
      R"("rank":%d,"job":%d,"slots":%d,"elements":%d,"window":%d,"aggregator":%s,"root":%s)",
      config_.rank, config_.job_id, config_.slots, config_.elements, window,
      trace::JsonQuote(config_.aggregator_name), trace::JsonQuote(config_.root_name));
  const std::string file =
      trace::TraceFileName("rank", absl::StrFormat("%d-job%d", config_.rank, config_.job_id));
  absl::Status s = trace::WriteChromeTrace(options_.trace_dir, file, p);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrFormat("rank %d: %s", config_.rank, s.message()));
}

}  // namespace grid::api
