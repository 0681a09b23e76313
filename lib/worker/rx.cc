// Results and signals coming back.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "grid/numerics.h"
#include "worker/engine.h"

namespace grid::worker {

bool Engine::Receive(absl::Time now) {
  const bool any = transport_->Receive(options_.batch,
                                       [&](absl::Span<const uint8_t> f) { OnFrame(f, now); }) > 0;
  stats_.foreign = Foreign();
  return any;
}

bool Engine::FromAggregator(const wire::FrameView& v) const {
  // Results and signals come from the aggregation node (its address), through
  // this host's first hop (its MAC, on transports of whole frames; a kernel
  // socket reports the sender's address itself). docs/security.md.
  if (v.address.src_ip != config_.aggregator_ip) return false;
  return transport_->datagrams() || v.address.src_mac == config_.next_hop_mac;
}

void Engine::OnFrame(absl::Span<const uint8_t> frame, absl::Time now) {
  ++stats_.packets_received;
  stats_.bytes_received += frame.size();
  wire::FrameView v;
  if (wire::ParseFrame(frame, &v) != wire::WireError::kOk) {
    ++stats_.malformed;
    return;
  }
  const wire::Header& h = v.header;
  if (h.job_id != config_.job_id || h.job_token != config_.token || !FromAggregator(v) ||
      (h.type != wire::MessageType::kResult && h.type != wire::MessageType::kSignal)) {
    ++foreign_;
    stats_.foreign = Foreign();
    return;
  }
  const bool marked = (h.flags & wire::flags::kCongestion) != 0;
  if (marked) ++stats_.congestion_signals;
  cc_.OnFeedback(marked);
  if (h.type == wire::MessageType::kResult) {
    OnResult(v, now);
  } else if (h.flags & wire::flags::kCollision) {
    ++stats_.collisions;
    cc_.OnLoss(now, loss_.rto());
    if (trace_ != nullptr) {
      trace_->Instant(now, "collision signal", "loss",
                      {{"slot", h.slot}, {"window", static_cast<int64_t>(cc_.window())}});
    }
  }
}

// An exponent above what the operation's type can hold came from no rank:
// the operation fails, naming the chunk, instead of returning garbage.
bool Engine::ExponentPossible(WireOp& op, uint32_t chunk, uint8_t exponent) {
  if (exponent <= op.codec->max_exponent) return true;
  if (exponent == numerics::kNotFiniteExponent) {
    // A rank's block is not finite: every rank fails the operation, as the
    // rank that had it does, rather than return the others a saturated
    // sum. The chunk still goes out and comes back, so no rank waits.
    const size_t begin = size_t{chunk} * config_.elements;
    const size_t n = std::min<size_t>(config_.elements, op.count - begin);
    op.Fail(absl::InvalidArgumentError(absl::StrFormat(
        "allreduce %d: elements %d-%d: a rank's input there is NaN, Inf or not below 2^127 (that "
        "rank's error names the element)",
        op.pieces.front().op->id, begin, begin + n - 1)));
    return true;
  }
  op.Fail(absl::DataLossError(absl::StrFormat(
      "allreduce %d: chunk %d: exponent %d is above what %s data can have (%d); the result "
      "was forged or corrupted on the way",
      op.pieces.front().op->id, chunk, exponent, DataTypeName(op.pieces.front().op->type),
      op.codec->max_exponent)));
  return false;
}

// A data chunk's result into the operation's output, and the exponent it
// brings for the chunk a pool ahead (in this operation or the chained
// next). False if it has the wrong length.
bool Engine::TakeData(const wire::FrameView& v, WireOp& op, uint32_t chunk) {
  const wire::Header& h = v.header;
  const size_t begin = size_t{chunk} * config_.elements;
  const size_t n = std::min<size_t>(config_.elements, op.count - begin);
  if (h.num_elements != config_.elements) return false;
  // Straight into the caller's buffer, averaged and narrowed (Codec), or
  // for a fused operation wide into its staging.
  absl::Status st = op.staged
                        ? op.codec->decode_wide(v.payload, n, h.exponent, config_.world,
                                                op.out + begin * kWideBytes)
                        : op.codec->decode(v.payload, n, h.exponent, config_.world, op.divisor,
                                           op.out + begin * op.codec->element_bytes);
  if (!op.quantized()) return true;
  if (st.ok() && h.exponent != op.Exponent(chunk)) {
    st = absl::InternalError(
        absl::StrFormat("result exponent %d, agreed %d: a rank quantized with another exponent",
                        h.exponent, op.Exponent(chunk)));
  }
  if (!st.ok()) {
    op.Fail(absl::Status(
        st.code(), absl::StrFormat("allreduce %d: elements %d-%d: %s", op.pieces.front().op->id,
                                   begin, begin + n - 1, st.message())));
  }
  const WireOp::Ahead ahead = op.AheadOf(chunk, config_.slots);
  if (ahead.op != nullptr) {
    ExponentPossible(*ahead.op, ahead.chunk, h.next_exponent);
    ahead.op->Agree(ahead.chunk, h.next_exponent);
  }
  return true;
}

// What a result tells the loss rules (the LossDetector): the round trip, the
// order of the stream, a stall's probe.
void Engine::Answered(const Slot& s, uint8_t flags, absl::Time now) {
  loss_.OnAnswered(s.pos, s.sent, s.sends, (flags & wire::flags::kRetransmit) != 0, now);
  stats_.min_rtt = loss_.min_rtt();
}

void Engine::OnResult(const wire::FrameView& v, absl::Time now) {
  const wire::Header& h = v.header;
  // A slot of another lane is one the transport should have steered
  // elsewhere (or a forgery): as malformed as one outside the pool.
  if (h.slot >= config_.slots || h.slot % lane_.count != lane_.index) {
    ++stats_.malformed;
    return;
  }
  Slot& s = SlotOf(h.slot);
  if (s.run == nullptr) {
    ++stats_.duplicate_results;
    return;
  }
  Running& run = *s.run;
  WireOp& op = *run.op;
  const auto [probe, op_seq, chunk] = op.At(s.index);
  if (h.op_seq != op_seq || h.chunk != chunk) {
    ++stats_.duplicate_results;  // an old chunk's result, already used
    return;
  }
  if (probe) {
    ExponentPossible(op, op.probe_base + chunk, h.next_exponent);
    op.Agree(op.probe_base + chunk, h.next_exponent);
  } else if (!TakeData(v, op, chunk)) {
    ++stats_.malformed;
    return;
  }
  Answered(s, h.flags, now);
  s.run = nullptr;
  --in_flight_;
  cc_.OnResult((h.flags & wire::flags::kCongestion) != 0);
  ++run.done;
  ++results_;
  // The lane that answers the operation's last chunk ends it; acq_rel, so
  // it sees every lane's results in the output.
  if (op.completed.fetch_add(1, std::memory_order_acq_rel) + 1 == op.total()) Complete(op, now);
  PopDone();
}

}  // namespace grid::worker
