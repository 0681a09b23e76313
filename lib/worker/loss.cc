// Loss recovery and timeouts: a periodic scan of the in-flight slots (no
// timer per packet), exponential backoff per chunk, and the window's
// multiplicative decrease.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "worker/engine.h"

namespace grid::worker {

void Engine::Scan(absl::Time now) {
  if (now < next_scan_) return;
  next_scan_ = now + options_.scan_interval;
  MeasureResultRate(now);
  bool lost = false;
  // A full transmit queue ends the scan; the next one takes up the rest.
  if (!ResendLost(now, lost)) return;
  Flush();
  // A timeout halves the window, once per RTO (Backoff): on rate-limited
  // links a drop is a full queue. It does not double the shared RTO (RFC 6298
  // 5.5): whether a chunk is late because this rank's packet was lost or
  // another rank's was, no rank can tell, and doubling for every other rank's
  // loss stalls all of them at max_rto under random loss. A chunk lost again
  // backs off on its own (`sends` in ResendLost).
  if (lost) Backoff(now, options_.initial_window);
  FailExpired(now);
}

// The queue ahead of a chunk: the rate results come back at, measured over
// intervals with results, and how many chunks are ahead.
void Engine::MeasureResultRate(absl::Time now) {
  if (rate_since_ == absl::InfinitePast() || in_flight_ == 0) {
    rate_since_ = now;
    results_counted_ = 0;
  } else if (const absl::Duration dt = now - rate_since_;
             dt >= 4 * options_.scan_interval && results_counted_ > 0) {
    const double sample = static_cast<double>(results_counted_) / absl::ToDoubleSeconds(dt);
    result_rate_ = result_rate_ == 0 ? sample : 0.75 * result_rate_ + 0.25 * sample;
    rate_since_ = now;
    results_counted_ = 0;
  }
}

Engine::LossClock Engine::LossClockAt(absl::Time now) {
  LossClock c;
  // A chunk sent again waits twice as long each time, up to kMaxBackoff
  // doublings while results are still coming (it is most likely waiting for
  // another rank's loss to be repaired, and must not sleep through its own
  // being lost again), and up to max_rto once nothing has come back for
  // twice that long (the path is down).
  c.max_shift = now - last_result_ > 2 * options_.max_rto ? kMaxSilentBackoff : kMaxBackoff;
  // Two timeouts. A stall's (nothing answered since the chunk was sent or
  // since the last result): the chunks in flight drain at the rate results
  // come back, so it waits for that, unbounded. A chunk overtaken (the last
  // result was for a chunk sent after it) times out from its own send, as
  // before: loss slows results too while the chunks it holds back stay in
  // flight, and unbounded that estimate fed on itself, so three clean round
  // trips bound it once there are any.
  c.stall_base = c.overtaken_base = rto_;
  if (result_rate_ > 0) {
    const absl::Duration queue = absl::Seconds(1.5 * in_flight_ / result_rate_);
    c.stall_base = std::max(c.stall_base, queue);
    c.overtaken_base = std::max(c.overtaken_base,
                                srtt_ > absl::ZeroDuration() ? std::min(queue, 3 * srtt_) : queue);
  }
  // Loss by order (RACK): a chunk sent before the latest one answered, out
  // for longer than that one's round trip plus a reordering window, is
  // lost. The window covers the jitter of the scan and of results that
  // arrive in one batch: a quarter of a round trip and one scan interval.
  c.reorder = options_.scan_interval + std::max(srtt_, rack_rtt_) / 4;
  // A stall probe was answered and nothing sent before it since (F-RTO,
  // RFC 5682): what was sent before it is lost.
  c.probe_says_lost =
      probe_answered_ != absl::InfinitePast() &&
      now - probe_answered_ >=
          options_.scan_interval + std::max(srtt_, probe_answered_ - probe_sent_) / 4;
  if (c.probe_says_lost) probe_answered_ = absl::InfinitePast();
  return c;
}

bool Engine::ResendLost(absl::Time now, bool& lost) {
  const LossClock c = LossClockAt(now);
  auto backoff_of = [&](const Slot& s) {
    return std::ldexp(1.0, std::min(s.sends - 1, c.max_shift));
  };
  auto resend = [&](Slot& s) {
    if (!Queue(*s.run->op, s.index, s.pos, true)) return false;
    s.sent = now;
    ++s.sends;
    ++stats_.retransmissions;
    lost = true;
    return true;
  };
  Slot* oldest = nullptr;  // in flight; the one a stall probes
  for (Slot& s : slots_) {
    if (s.run == nullptr) continue;
    if (oldest == nullptr || s.pos < oldest->pos) oldest = &s;
    // A chunk found lost by order before backs off like a timed-out one:
    // it is most likely waiting for another rank's repair.
    const double backoff = backoff_of(s);
    if ((s.sent < rack_sent_ && now - s.sent >= (rack_rtt_ + c.reorder) * backoff) ||
        (c.probe_says_lost && s.sent < probe_sent_)) {
      ++stats_.early_retransmissions;
      if (!resend(s)) return false;
      continue;
    }
    if (s.sent < last_result_sent_ &&
        now - s.sent >= std::min(options_.max_rto, c.overtaken_base * backoff)) {
      if (!resend(s)) return false;
    }
  }
  // A chunk behind every answered one is queued, or the stream stalled
  // (its tail was lost, a path is down, or a rank has not sent yet). Its
  // timer restarts with every result, so only a stall times out, and the
  // stall resends its oldest chunk only, as a probe. Every rank holding the
  // oldest incomplete chunk probes it, the rank that lost it included, so a
  // stall always ends. If the stream was only waiting, the results that
  // follow restart the timer and nothing else is sent; if the tail was lost,
  // the probe's result comes back alone, and the rest goes a reordering
  // window later (rx.cc).
  if (oldest != nullptr) {
    const absl::Duration rto = std::min(options_.max_rto, c.stall_base * backoff_of(*oldest));
    if (oldest->sent >= last_result_sent_ && now - std::max(oldest->sent, last_result_) >= rto) {
      probe_pos_ = oldest->pos;
      probe_answered_ = absl::InfinitePast();
      if (!resend(*oldest)) return false;
    }
  }
  return true;
}

// The first operation past its deadline fails every operation, with a
// message naming the chunks that never came back.
void Engine::FailExpired(absl::Time now) {
  for (const Running& r : ops_) {
    const WireOp* w = r.op.get();
    // Operations that ended out of order wait here for the ones before them.
    if (r.done == r.own || now <= w->deadline) continue;
    uint32_t first = w->total(), last = 0, missing = 0;
    for (const Slot& s : slots_) {
      if (s.run != &r) continue;
      ++missing;
      first = std::min(first, s.index);
      last = std::max(last, s.index);
    }
    missing += r.own - r.issued;
    if (r.issued < r.own) {
      last = w->total() - 1;
      if (first == w->total()) first = static_cast<uint32_t>(next_pos_ - r.base);
    }
    auto describe = [&](uint32_t index) {
      const WireOp::Named named = w->At(index);
      return named.probe ? absl::StrFormat("probe %d (for chunk %d)", named.chunk,
                                           w->probe_base + named.chunk)
                         : absl::StrFormat("chunk %d", named.chunk);
    };
    ++stats_.timeouts;
    const uint64_t id = w->pieces.front().op->id;
    std::string who = explain_ ? explain_(id) : "";
    if (who.empty()) who = "a rank that did not contribute, or a lost path, holds them";
    // Say so when something else was talking to this rank meanwhile: the
    // chunks may have been displaced, not lost.
    if (const uint64_t foreign = Foreign() - r.foreign_before; foreign > 0) {
      who += absl::StrFormat(
          "; %d frames from other sources than node %d, or of another job, were dropped during "
          "the operation (a forged or misrouted stream)",
          foreign, config_.aggregator);
    }
    const std::string lane =
        lane_.count > 1 ? absl::StrFormat(" on lane %d of %d", lane_.index, lane_.count) : "";
    FailAll(absl::DeadlineExceededError(absl::StrFormat(
                "rank %d: allreduce %d (op_seq %d) timed out: %d of %d chunks%s without a result "
                "(%s to %s), aggregated at node %d; %s",
                config_.rank, id, w->op_seq, missing, w->total(), lane, describe(first),
                describe(last), config_.aggregator, who)),
            now);
    return;
  }
}

// RFC 6298: srtt + 4 rttvar, from clean samples only (rx.cc: answered on
// the first send, and no rank's contribution to the chunk sent again), so
// queues are followed and other ranks' losses are not.
void Engine::SampleRtt(absl::Duration rtt) {
  if (stats_.min_rtt == absl::ZeroDuration() || rtt < stats_.min_rtt) stats_.min_rtt = rtt;
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

// DCTCP (RFC 8257): a marked result says a queue on its way is above the
// switch's threshold, not that it overflowed, so the window shrinks in
// proportion to how much of it was marked, once per window, instead of
// halving on every mark. A window whose every result is marked still halves.
void Engine::OnMark(bool marked) {
  ++window_seen_;
  if (marked) ++window_marked_;
  if (window_seen_ < std::max(1.0, cwnd_)) return;
  const double fraction = static_cast<double>(window_marked_) / window_seen_;
  alpha_ = (1 - options_.ecn_gain) * alpha_ + options_.ecn_gain * fraction;
  if (window_marked_ > 0) {
    cwnd_ = std::max(1.0, cwnd_ * (1 - alpha_ / 2));
    ssthresh_ = cwnd_;
  }
  window_seen_ = window_marked_ = 0;
}

void Engine::Backoff(absl::Time now, double floor) {
  // At most one decrease per RTO: one loss event, one halving.
  if (now - last_decrease_ < rto_) return;
  last_decrease_ = now;
  ssthresh_ = std::max(std::min(floor, cwnd_), cwnd_ / 2);
  cwnd_ = ssthresh_;
}

}  // namespace grid::worker
