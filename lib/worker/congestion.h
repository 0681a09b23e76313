// Internal: a worker lane's congestion control, the window of chunks it
// keeps in flight (docs/worker.md, "The window"): slow start, then one more
// per window; DCTCP's decrease in proportion to the results marked
// CONGESTION (RFC 8257); a halving on loss, once per RTO. Pure: events and
// the time come in as arguments.
#ifndef GRID_LIB_WORKER_CONGESTION_H_
#define GRID_LIB_WORKER_CONGESTION_H_

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace grid::worker {

class CongestionControl {
 public:
  // The window starts at `initial` and stays within [1, max_window].
  // `ecn_gain`: the weight of a window's marked fraction in DCTCP's alpha.
  CongestionControl(double initial, uint32_t max_window, double ecn_gain)
      : cwnd_(std::clamp<double>(initial, 1, std::max<uint32_t>(max_window, 1))),
        ssthresh_(max_window),
        max_window_(std::max<uint32_t>(max_window, 1)),
        ecn_gain_(ecn_gain) {}

  // Every result or signal that comes back, marked CONGESTION or not
  // (DCTCP's input, counted per window).
  void OnFeedback(bool marked);
  // A chunk answered; an unmarked result grows the window: by one per
  // result in slow start (below ssthresh), by one per window above it.
  void OnResult(bool marked) {
    if (marked) return;
    cwnd_ = std::min<double>(max_window_, cwnd_ + (cwnd_ < ssthresh_ ? 1.0 : 1.0 / cwnd_));
  }
  // A loss (a timeout, a collision): the window halves, no lower than
  // `floor`, at most once per `rto` (one loss event, one halving).
  void OnLoss(absl::Time now, absl::Duration rto, double floor = 1);

  uint32_t window() const { return static_cast<uint32_t>(cwnd_); }
  double marked_fraction() const { return alpha_; }
  uint32_t max_window() const { return max_window_; }

 private:
  double cwnd_;
  double ssthresh_;  // slow start below it, +1 per window above it
  uint32_t max_window_;
  double ecn_gain_;
  absl::Time last_decrease_ = absl::InfinitePast();
  // DCTCP: alpha_ follows the fraction of results and signals marked
  // CONGESTION, updated once per window of them. It starts at 1, so the
  // first marked window halves, as TCP would.
  double alpha_ = 1;
  uint32_t window_seen_ = 0, window_marked_ = 0;
};

}  // namespace grid::worker

#endif  // GRID_LIB_WORKER_CONGESTION_H_
