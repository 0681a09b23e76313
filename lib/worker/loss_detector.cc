#include "worker/loss_detector.h"

#include <algorithm>
#include <cmath>

#include "worker/tunables.h"

namespace grid::worker {

void LossDetector::OnAnswered(uint64_t pos, absl::Time sent, int sends, bool retransmitted,
                              absl::Time now) {
  last_result_ = now;
  last_result_sent_ = sent;
  ++results_counted_;
  // Karn's rule, for a whole chunk: a round trip in which any rank's
  // contribution was sent again measures loss recovery, not the network.
  if (sends == 1 && !retransmitted) SampleRtt(now - sent);
  // Only a first send's result orders the stream: a resent chunk's result
  // may answer either send.
  if (sends == 1 && sent >= rack_sent_) {
    rack_sent_ = sent;
    rack_rtt_ = now - sent;
  }
  if (pos == probe_pos_) {
    // A stall's probe answered: what was sent before it and does not
    // follow within a reordering window is lost.
    probe_pos_ = UINT64_MAX;
    probe_answered_ = now;
    probe_sent_ = sent;
  } else if (sent < probe_sent_) {
    probe_answered_ = absl::InfinitePast();  // the rest is coming: a wait, not a loss
  }
}

// RFC 6298: srtt + 4 rttvar, from clean samples only, so queues are
// followed and other ranks' losses are not.
void LossDetector::SampleRtt(absl::Duration rtt) {
  if (min_rtt_ == absl::ZeroDuration() || rtt < min_rtt_) min_rtt_ = rtt;
  // RFC 6298's gains (1/8, 1/4) in integer nanoseconds: absl::Duration's
  // multiply by a double is a slow path, and this runs once per result.
  const int64_t r = absl::ToInt64Nanoseconds(rtt);
  int64_t srtt = absl::ToInt64Nanoseconds(srtt_), var = absl::ToInt64Nanoseconds(rttvar_);
  if (srtt == 0) {
    srtt = r;
    var = r / 2;
  } else {
    const int64_t err = r > srtt ? r - srtt : srtt - r;
    var += (err - var) / 4;
    srtt += (r - srtt) / 8;
  }
  srtt_ = absl::Nanoseconds(srtt);
  rttvar_ = absl::Nanoseconds(var);
  rto_ = std::clamp(absl::Nanoseconds(srtt + 4 * var), options_.min_rto, options_.max_rto);
}

// The queue ahead of a chunk: the rate results come back at, measured over
// intervals with results.
void LossDetector::MeasureResultRate(absl::Time now, uint32_t in_flight) {
  if (rate_since_ == absl::InfinitePast() || in_flight == 0) {
    rate_since_ = now;
    results_counted_ = 0;
  } else if (const absl::Duration dt = now - rate_since_;
             dt >= Tunables::kRateScans * options_.scan_interval && results_counted_ > 0) {
    const double sample = static_cast<double>(results_counted_) / absl::ToDoubleSeconds(dt);
    result_rate_ = result_rate_ == 0
                       ? sample
                       : (1 - Tunables::kRateGain) * result_rate_ + Tunables::kRateGain * sample;
    rate_since_ = now;
    results_counted_ = 0;
  }
}

LossDetector::ScanClock LossDetector::StartScan(absl::Time now, uint32_t in_flight) {
  MeasureResultRate(now, in_flight);
  ScanClock c;
  c.max_shift = now - last_result_ > 2 * options_.max_rto ? Tunables::kMaxSilentBackoff
                                                          : Tunables::kMaxBackoff;
  // Two timeouts. A stall's (nothing answered since the chunk was sent or
  // since the last result): the chunks in flight drain at the rate results
  // come back, so it waits for that, unbounded. A chunk overtaken (the last
  // result was for a chunk sent after it) times out from its own send,
  // bounded by a few clean round trips once there are any.
  c.stall_base = c.overtaken_base = rto_;
  if (result_rate_ > 0) {
    const absl::Duration queue =
        absl::Seconds(Tunables::kQueueWaitFactor * in_flight / result_rate_);
    c.stall_base = std::max(c.stall_base, queue);
    c.overtaken_base =
        std::max(c.overtaken_base, srtt_ > absl::ZeroDuration()
                                       ? std::min(queue, Tunables::kOvertakenRtts * srtt_)
                                       : queue);
  }
  c.reorder = options_.scan_interval + std::max(srtt_, rack_rtt_) * Tunables::kReorderFraction;
  // A stall probe was answered and nothing sent before it since: what was
  // sent before it is lost.
  c.probe_says_lost = probe_answered_ != absl::InfinitePast() &&
                      now - probe_answered_ >= options_.scan_interval +
                                                   std::max(srtt_, probe_answered_ - probe_sent_) *
                                                       Tunables::kReorderFraction;
  if (c.probe_says_lost) probe_answered_ = absl::InfinitePast();
  return c;
}

double LossDetector::Backoff(const ScanClock& c, int sends) const {
  return std::ldexp(1.0, std::min(sends - 1, c.max_shift));
}

LossDetector::Verdict LossDetector::Judge(const ScanClock& c, absl::Time sent, int sends,
                                          absl::Time now) const {
  // A chunk found lost by order before backs off like a timed-out one: it
  // is most likely waiting for another rank's repair.
  const double backoff = Backoff(c, sends);
  if ((sent < rack_sent_ && now - sent >= (rack_rtt_ + c.reorder) * backoff) ||
      (c.probe_says_lost && sent < probe_sent_)) {
    return Verdict::kLostByOrder;
  }
  if (sent < last_result_sent_ &&
      now - sent >= std::min(options_.max_rto, c.overtaken_base * backoff)) {
    return Verdict::kTimedOut;
  }
  return Verdict::kWaiting;
}

bool LossDetector::StallProbeDue(const ScanClock& c, absl::Time sent, int sends,
                                 absl::Time now) const {
  const absl::Duration rto = std::min(options_.max_rto, c.stall_base * Backoff(c, sends));
  return sent >= last_result_sent_ && now - std::max(sent, last_result_) >= rto;
}

void LossDetector::ProbeSent(uint64_t pos) {
  probe_pos_ = pos;
  probe_answered_ = absl::InfinitePast();
}

}  // namespace grid::worker
