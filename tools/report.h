// grid-report (docs/observability.md): reads a GRID_TRACE directory, sums
// up where each rank's time went, and names what limited the run with the
// change that would move it. Reading (report_read.cc), the rules
// (report_diagnose.cc) and the PNG timelines (report_plot.cc) are apart, so
// tests give the rules summaries of their own.
#ifndef GRID_TOOLS_REPORT_H_
#define GRID_TOOLS_REPORT_H_

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace grid::tools {

struct RankRun {
  std::string file;
  int rank = 0;
  int64_t slots = 0, window = 0;  // the pool and the largest window it may use
  double busy_s = 0;              // time with an operation running
  int64_t operations = 0, chunks = 0;
  std::map<std::string, double> wait_s;     // by wait slice ("window full", ...)
  std::map<std::string, int64_t> instants;  // by name ("resend (timeout)", ...)
  double srtt_us = 0, min_rtt_us = 0;       // the median sample while busy; the least
  int64_t marked = 0;                       // results marked CONGESTION
  // For the timeline: slices (wait, start, end) and samples (t, in flight,
  // window), in seconds since the first event of the run.
  struct Slice {
    std::string wait;
    double start = 0, end = 0;
  };
  struct Sample {
    double t = 0, in_flight = 0, window = 0;
  };
  std::vector<Slice> slices;
  std::vector<Sample> samples;
  std::vector<double> resent_at;  // each resend and stall probe
  int64_t resends() const;
};

struct SwitchRun {
  std::string name;
  std::map<std::string, int64_t> drops;  // by reason, over the run
  int64_t data = 0, passed = 0;
  std::map<int, int64_t> max_depth;  // by port: the deepest queue sampled
  std::map<int, double> mean_depth;  // by port: over the samples while ranks were busy
  std::map<int, std::string> hosts;  // by port: the host it faces
  std::set<std::string> roots;       // the roots of the jobs it aggregates
  double capacity_gbps = 0;
  int64_t congestion_threshold = 0, max_busy = 0;
};

struct RootRun {
  std::string ip;
  int64_t completed = 0, results_resent = 0, max_busy = 0;
};

struct Run {
  std::vector<RankRun> ranks;
  std::vector<SwitchRun> switches;
  std::vector<RootRun> roots;
  // The ranks' first and last events, Unix seconds (ReadTraceText), until
  // FromRunStart makes the ranks' times relative to t0_s.
  double t0_s = std::numeric_limits<double>::infinity();
  double t1_s = -std::numeric_limits<double>::infinity();
};

// Every *.json of `dir` written by GRID_TRACE; errors name the file.
absl::StatusOr<Run> ReadRun(const std::string& dir);
// One file's text into `run` (ranks' files before the others'); the error
// names `name`. ReadRun's step, and what the fuzzer drives.
absl::Status ReadTraceText(const std::string& name, std::string_view text, Run& run);
// The ranks' times from the run's first event, the ranks in order.
void FromRunStart(Run& run);

struct Diagnosis {
  std::string factor;    // "window", "capacity", "slow link", "loss", "none"
  std::string evidence;  // what in the traces says so
  std::string change;    // the flag or topology change that would move it
};
Diagnosis Diagnose(const Run& run);

// Where the time went, per rank, and the diagnosis, as text.
std::string FormatReport(const Run& run, const Diagnosis& d);

// DIR/rank-R.png per rank: its waits and its window over time (gnuplot).
absl::Status PlotRanks(const Run& run, const std::string& out_dir);

}  // namespace grid::tools

#endif  // GRID_TOOLS_REPORT_H_
