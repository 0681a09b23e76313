// Writes recorders (recorder.h) as a Chrome trace-event JSON file, the
// format chrome://tracing and Perfetto open: one process, a thread (track)
// per recorder. What a full ring dropped is said twice: an instant event at
// the start of each track that lost events, and `otherData.dropped_events`.
// A slice whose start was dropped is left out and one still open at the end
// is closed there, so every B has its E and every b its e in the file.
#ifndef GRID_LIB_TRACE_CHROME_H_
#define GRID_LIB_TRACE_CHROME_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "trace/recorder.h"

namespace grid::trace {

struct Track {
  std::string name;  // "lane 0", "pipeline 1"
  const Recorder* recorder = nullptr;
};

struct TraceProcess {
  std::string name;  // "rank 3 (job 7)", "switch S2", "root (job 7)"
  std::string role;  // "rank", "switch" or "root": what grid-report reads it as
  int pid = 0;       // the process's id, so traces of one host load side by side
  std::vector<Track> tracks;
  // More members of otherData, as JSON text ("\"slots\":64,..."): what
  // grid-report needs to know of the process (its window, its ports).
  std::string other_json;
};

std::string ChromeTraceJson(const TraceProcess& process);

// `text` as a JSON string, quoted and escaped (for other_json).
std::string JsonQuote(const std::string& text);

// Writes `dir`/`file` (the directory is created if missing). The error names
// the path and the reason.
absl::Status WriteChromeTrace(const std::string& dir, const std::string& file,
                              const TraceProcess& process);

// The file name of a trace in GRID_TRACE's directory: "rank-3-job7.json",
// "switch-S2.json", "root-job7.json" (characters other than [A-Za-z0-9._-]
// of a name become '_').
std::string TraceFileName(const std::string& role, const std::string& name);

}  // namespace grid::trace

#endif  // GRID_LIB_TRACE_CHROME_H_
