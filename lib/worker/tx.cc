// Issuing chunks: stream order, the slot rule and the window.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "grid/numerics.h"
#include "worker/engine.h"

namespace grid::worker {

bool Engine::Issue(absl::Time now) {
  bool any = false;
  // What stops the lane from sending (GRID_TRACE's wait slices): the names
  // grid-report reads.
  const char* wait = nullptr;
  while (issuing_ < ops_.size()) {
    Running& r = ops_[issuing_];
    WireOp& op = *r.op;
    // Operations are contiguous in the stream: past this one's last
    // position, the next position is the next operation's.
    if (next_pos_ >= r.base + op.total()) {
      ++issuing_;
      continue;
    }
    if (in_flight_ >= cc_.window()) {
      wait = "window full";
      break;
    }
    // The chunk P positions back shares this slot's other copy's partner:
    // its result must be in before the slot is used again.
    Slot& slot = SlotOf(next_pos_);
    if (slot.run != nullptr) {
      wait = "slot busy";
      break;
    }
    const auto index = static_cast<uint32_t>(next_pos_ - r.base);
    if (index >= op.probes && op.quantized() && !op.Agreed(index - op.probes)) {
      wait = "exponent wait";
      break;
    }
    if (!Queue(op, index, next_pos_, false, now)) return any;
    slot.run = &r;
    slot.index = index;
    slot.pos = next_pos_;
    slot.sent = now;
    slot.sends = 1;
    next_pos_ = NextOwn(next_pos_ + 1);
    ++r.issued;
    ++in_flight_;
    any = true;
  }
  Flush(now);
  if (trace_ != nullptr) {
    if (wait == nullptr && in_flight_ > 0) wait = "results wait";
    TraceWait(wait, now);
  }
  return any;
}

bool Engine::Queue(WireOp& op, uint32_t index, uint64_t pos, bool retransmit, absl::Time now) {
  const size_t bytes = wire::FrameBytes(index < op.probes ? 0 : config_.elements);
  if ((tx_count_ == tx_items_.size() || (tx_count_ > 0 && bytes != tx_bytes_)) && !Flush(now)) {
    return false;
  }
  tx_bytes_ = bytes;
  tx_items_[tx_count_++] = TxItem{&op, index, pos, retransmit};
  return true;
}

void Engine::BuildChunk(const TxItem& item, absl::Span<uint8_t> frame) {
  WireOp& op = *item.op;
  const uint32_t index = item.index;
  const uint64_t pos = item.pos;
  const bool retransmit = item.retransmit;
  const uint32_t pool = config_.slots;
  wire::Header h;
  h.type = wire::MessageType::kData;
  h.flags = static_cast<uint8_t>(((pos / pool) % 2 ? wire::flags::kCopy : 0) |
                                 (retransmit ? wire::flags::kRetransmit : 0));
  h.job_id = config_.job_id;
  h.job_token = config_.token;
  h.rank = config_.rank;
  h.agg_node = static_cast<uint16_t>(config_.aggregator);
  h.path = config_.up_label;
  h.next_path = config_.next_path;
  h.fan_in = config_.fan_in;
  h.slot = static_cast<uint16_t>(pos % pool);
  size_t begin = 0, n = 0;  // the elements of the operation this chunk carries
  const WireOp::Named named = op.At(index);
  const bool probe = named.probe;
  h.op_seq = named.op_seq;
  h.chunk = named.chunk;
  if (probe) {
    h.exponent = 0;
    h.next_exponent = LocalExponent(op, op.probe_base + named.chunk);
  } else {
    const uint32_t j = named.chunk;
    begin = size_t{j} * config_.elements;
    n = std::min<size_t>(config_.elements, op.count - begin);
    if (op.quantized()) {
      h.exponent = op.Exponent(j);
      const WireOp::Ahead ahead = op.AheadOf(j, pool);
      h.next_exponent = ahead.op != nullptr ? LocalExponent(*ahead.op, ahead.chunk) : 0;
    }
  }
  // A data chunk carries the job's full element count (the last one of an
  // operation is padded with zeros, which add nothing); a probe none.
  h.num_elements = probe ? 0 : config_.elements;
  wire::FrameAddress a;
  a.src_mac = config_.mac;
  a.dst_mac = config_.next_hop_mac;
  a.src_ip = config_.ip;
  a.dst_ip = config_.aggregator_ip;
  auto size = wire::WriteFrameHeaders(a, h, frame);
  if (!size.ok()) {
    // Only a config Communicator::Create would have refused gets here (the
    // engine builds valid headers). The frame is already the transport's:
    // it goes out zeroed, which every switch drops as malformed, and Flush
    // then fails every operation.
    if (build_error_.ok()) {
      build_error_ = absl::InternalError(
          absl::StrFormat("rank %d: chunk header: %s", config_.rank, size.status().message()));
    }
    std::fill(frame.begin(), frame.end(), 0);
    return;
  }
  if (probe) return;  // only its exponent proposal counts
  uint8_t* payload = frame.data() + wire::kPayloadOffset;
  std::fill(payload + n * wire::kElementBytes, frame.data() + frame.size(), 0);
  absl::Status s = op.codec->encode(op.In(begin), n, h.exponent, config_.world, payload);
  if (!s.ok()) {
    op.Fail(absl::InvalidArgumentError(absl::StrFormat("allreduce %d: elements %d-%d: %s",
                                                       op.pieces.front().op->id, begin,
                                                       begin + n - 1, s.message())));
  }
}

bool Engine::Flush(absl::Time now) {
  if (tx_count_ == 0) return true;
  const size_t bytes = tx_bytes_;
  // What the transport does not take is lost to it; the scan resends it.
  const size_t taken = transport_->SendBuilt(
      tx_count_, bytes,
      [&](size_t i, absl::Span<uint8_t> frame) { BuildChunk(tx_items_[i], frame); });
  stats_.bytes_sent += taken * bytes;
  stats_.packets_sent += taken;
  tx_count_ = 0;
  if (build_error_.ok()) return true;
  FailAll(build_error_, now);
  return false;
}

}  // namespace grid::worker
