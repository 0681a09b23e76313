#include "worker/congestion.h"

namespace grid::worker {

// DCTCP (RFC 8257): a marked result says a queue on its way is above the
// switch's threshold, not that it overflowed, so the window shrinks in
// proportion to how much of it was marked, once per window, instead of
// halving on every mark. A window whose every result is marked still halves.
void CongestionControl::OnFeedback(bool marked) {
  ++window_seen_;
  if (marked) ++window_marked_;
  if (window_seen_ < std::max(1.0, cwnd_)) return;
  const double fraction = static_cast<double>(window_marked_) / window_seen_;
  alpha_ = (1 - ecn_gain_) * alpha_ + ecn_gain_ * fraction;
  if (window_marked_ > 0) {
    cwnd_ = std::max(1.0, cwnd_ * (1 - alpha_ / 2));
    ssthresh_ = cwnd_;
  }
  window_seen_ = window_marked_ = 0;
}

void CongestionControl::OnLoss(absl::Time now, absl::Duration rto, double floor) {
  if (now - last_decrease_ < rto) return;
  last_decrease_ = now;
  ssthresh_ = std::max(std::min(floor, cwnd_), cwnd_ / 2);
  cwnd_ = ssthresh_;
}

}  // namespace grid::worker
