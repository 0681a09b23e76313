// Loss recovery and timeouts: a periodic scan of the in-flight slots (no
// timer per packet), each judged by the LossDetector; the window's decrease
// on loss is the CongestionControl's.
#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"
#include "worker/engine.h"

namespace grid::worker {
namespace {

// "S1 (node 3)", or "node 3" where the config has no names.
std::string NodeName(const std::string& name, topology::NodeId node) {
  return name.empty() ? absl::StrFormat("node %d", node)
                      : absl::StrFormat("%s (node %d)", name, node);
}

}  // namespace

void Engine::Scan(absl::Time now) {
  if (now < next_scan_) return;
  next_scan_ = now + options_.scan_interval;
  bool lost = false;
  // A full transmit queue ends the scan; the next one takes up the rest.
  if (!ResendLost(now, lost)) return;
  Flush(now);
  // A timeout halves the window, once per RTO: on rate-limited links a drop
  // is a full queue. It does not double the shared RTO (RFC 6298 5.5):
  // whether a chunk is late because this rank's packet was lost or another
  // rank's was, no rank can tell, and doubling for every other rank's loss
  // stalls all of them at max_rto under random loss. A chunk lost again
  // backs off on its own (LossDetector::Judge).
  if (lost) {
    cc_.OnLoss(now, loss_.rto(), options_.initial_window);
    if (trace_ != nullptr) {
      trace_->Instant(now, "window cut (loss)", "loss",
                      {{"window", static_cast<int64_t>(cc_.window())}});
    }
  }
  FailExpired(now);
}

bool Engine::ResendLost(absl::Time now, bool& lost) {
  const LossDetector::ScanClock c = loss_.StartScan(now, in_flight_);
  // `why` names the resend in GRID_TRACE's timeline.
  auto resend = [&](Slot& s, const char* why) {
    if (!Queue(*s.run->op, s.index, s.pos, true, now)) return false;
    if (trace_ != nullptr) {
      const WireOp::Named named = s.run->op->At(s.index);
      trace_->Instant(now, why, "loss",
                      {{"op_seq", named.op_seq}, {"chunk", named.chunk}, {"sends", s.sends + 1}});
    }
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
    const LossDetector::Verdict v = loss_.Judge(c, s.sent, s.sends, now);
    if (v == LossDetector::Verdict::kWaiting) continue;
    const bool by_order = v == LossDetector::Verdict::kLostByOrder;
    if (by_order) ++stats_.early_retransmissions;
    if (!resend(s, by_order ? "resend (order)" : "resend (timeout)")) return false;
  }
  // A chunk behind every answered one is queued, or the stream stalled (its
  // tail was lost, a path is down, or a rank has not sent yet): the stall
  // resends its oldest chunk only, as a probe. Every rank holding the oldest
  // incomplete chunk probes it, the rank that lost it included, so a stall
  // always ends. If the stream was only waiting, the results that follow
  // restart the timer and nothing else is sent; if the tail was lost, the
  // probe's result comes back alone, and the rest goes a reordering window
  // later (LossDetector).
  if (oldest != nullptr && loss_.StallProbeDue(c, oldest->sent, oldest->sends, now)) {
    loss_.ProbeSent(oldest->pos);
    if (!resend(*oldest, "stall probe")) return false;
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
    if (trace_ != nullptr) trace_->Instant(now, "operation timed out", "error");
    const uint64_t id = w->pieces.front().op->id;
    std::string who = explain_ ? explain_(id) : "";
    if (who.empty()) who = "a rank that did not contribute, or a lost path, holds them";
    // Say so when something else was talking to this rank meanwhile: the
    // chunks may have been displaced, not lost.
    if (const uint64_t foreign = Foreign() - r.foreign_before; foreign > 0) {
      who += absl::StrFormat(
          "; %d frames from other sources than %s, or of another job, were dropped during "
          "the operation (a forged or misrouted stream)",
          foreign, NodeName(config_.aggregator_name, config_.aggregator));
    }
    const std::string lane =
        lane_.count > 1 ? absl::StrFormat(" on lane %d of %d", lane_.index, lane_.count) : "";
    FailAll(absl::DeadlineExceededError(absl::StrFormat(
                "rank %d: allreduce %d (op_seq %d) timed out: %d of %d chunks%s without a result "
                "(%s to %s), aggregated at %s, root %s; %s",
                config_.rank, id, w->op_seq, missing, w->total(), lane, describe(first),
                describe(last), NodeName(config_.aggregator_name, config_.aggregator),
                NodeName(config_.root_name, config_.root), who)),
            now);
    return;
  }
}

}  // namespace grid::worker
