// A progress line for tools a person waits on (grid-sim's experiments,
// grid-ns3's seed sweep): "what: k/N (p%), elapsed, about T left" on
// stderr, rewritten in place at most every 200 ms, and erased when done.
// Off when stderr is not a terminal (logs, CI, pipes) or GRID_PROGRESS=0,
// so it never lands in a file.
#ifndef GRID_TOOLS_PROGRESS_H_
#define GRID_TOOLS_PROGRESS_H_

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace grid::tools {

class Progress {
 public:
  Progress(std::string what, int64_t total)
      : what_(std::move(what)), total_(total), start_(absl::Now()), shown_(absl::InfinitePast()) {
    const char* env = std::getenv("GRID_PROGRESS");
    on_ = total > 0 && isatty(fileno(stderr)) && !(env != nullptr && std::string(env) == "0");
  }
  ~Progress() { Done(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of the total are finished.
  void Update(int64_t done) {
    if (!on_) return;
    const absl::Time now = absl::Now();
    if (now - shown_ < absl::Milliseconds(200) && done < total_) return;
    shown_ = now;
    const double elapsed = absl::ToDoubleSeconds(now - start_);
    std::string line = absl::StrFormat("%s: %d/%d (%.0f%%), %.0f s", what_, done, total_,
                                       100.0 * done / total_, elapsed);
    if (done > 0 && done < total_) {
      absl::StrAppendFormat(&line, ", about %.0f s left", elapsed / done * (total_ - done));
    }
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  // Erases the line, so what follows starts on a clean one.
  void Done() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  const std::string what_;
  const int64_t total_;
  const absl::Time start_;
  absl::Time shown_;
  bool on_ = false;
  bool drawn_ = false;
};

}  // namespace grid::tools

#endif  // GRID_TOOLS_PROGRESS_H_
