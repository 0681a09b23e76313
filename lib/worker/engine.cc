#include "worker/engine.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "grid/numerics.h"

namespace grid::worker {

using internal::OpState;

namespace {

uint32_t ChunksOf(size_t count, uint16_t elements) {
  return static_cast<uint32_t>((count + elements - 1) / elements);
}

// Wire operation for elements [offset, offset + count) of one operation.
std::shared_ptr<WireOp> Direct(const std::shared_ptr<OpState>& op, size_t offset, size_t count,
                               int world) {
  auto w = std::make_shared<WireOp>();
  w->pieces.push_back({op, 0, offset, count});
  w->count = count;
  w->codec = CodecFor(op->type);
  w->in = static_cast<const uint8_t*>(op->send) + offset * w->codec->element_bytes;
  w->out = static_cast<uint8_t*>(op->recv) + offset * w->codec->element_bytes;
  w->divisor = op->average ? world : 1;
  return w;
}

// A fused operation gathers its pieces' inputs into one buffer; their sums
// come back wide, and each piece is narrowed (and averaged) on its own.
void Stage(WireOp& w) {
  const size_t bytes = w.codec->element_bytes;
  w.stage_in.resize(w.count * bytes);
  w.stage_out.resize(w.count * kWideBytes);
  for (const Piece& p : w.pieces) {
    std::copy_n(static_cast<const uint8_t*>(p.op->send) + p.offset * bytes, p.count * bytes,
                w.stage_in.data() + p.at * bytes);
  }
  w.in = w.stage_in.data();
  w.out = w.stage_out.data();
}

}  // namespace

std::vector<std::shared_ptr<WireOp>> PrepareWireOps(
    const std::vector<std::shared_ptr<OpState>>& ops, uint16_t elements, uint32_t slots,
    size_t fusion_bytes, int world) {
  std::vector<std::shared_ptr<WireOp>> out;
  auto finish = [&](std::shared_ptr<WireOp> w) {
    w->chunks = ChunksOf(w->count, elements);
    w->probes = w->quantized() ? std::min(w->chunks, slots) : 0;
    auto prev = std::find_if(out.rbegin(), out.rend(), [](const auto& o) { return o->chunks > 0; });
    if (w->quantized() && prev != out.rend() && (*prev)->quantized()) {
      (*prev)->next = w;
      w->probe_base = std::min(w->probes, (*prev)->chunks);
      w->probes -= w->probe_base;
    }
    if (w->quantized()) {
      w->agreement = std::make_unique<std::atomic<int16_t>[]>(w->chunks);
      for (uint32_t j = 0; j < w->chunks; ++j) w->agreement[j].store(-1, std::memory_order_relaxed);
    }
    w->deadline = absl::InfiniteFuture();
    for (const Piece& p : w->pieces) {
      w->deadline = std::min(w->deadline, p.op->deadline);
      p.op->pending.fetch_add(1, std::memory_order_relaxed);
    }
    out.push_back(std::move(w));
  };
  // A run of small operations travels as one; alone, one goes as it is.
  std::vector<std::shared_ptr<OpState>> run;
  size_t run_count = 0;
  auto end_run = [&] {
    if (run.size() == 1) {
      finish(Direct(run[0], 0, run[0]->count, world));
    } else if (!run.empty()) {
      auto fused = std::make_shared<WireOp>();
      fused->staged = true;
      fused->codec = CodecFor(run[0]->type);
      for (const auto& op : run) {
        fused->pieces.push_back({op, fused->count, 0, op->count});
        fused->count += op->count;
      }
      Stage(*fused);
      finish(std::move(fused));
    }
    run.clear();
    run_count = 0;
  };
  for (const std::shared_ptr<OpState>& op : ops) {
    const size_t bytes = op->count * DataTypeSize(op->type);
    const bool small = fusion_bytes > 0 && bytes <= fusion_bytes && op->count > 0;
    if (!run.empty() && (!small || run[0]->type != op->type ||
                         (run_count + op->count) * DataTypeSize(op->type) > fusion_bytes ||
                         run_count + op->count > size_t{kMaxChunksPerSegment} * elements)) {
      end_run();
    }
    if (small) {
      run.push_back(op);
      run_count += op->count;
      continue;
    }
    const size_t segment = size_t{kMaxChunksPerSegment} * elements;
    size_t offset = 0;
    do {
      const size_t n = std::min(segment, op->count - offset);
      finish(Direct(op, offset, n, world));
      offset += n;
    } while (offset < op->count);
  }
  end_run();
  return out;
}

void NumberWireOps(const std::vector<std::shared_ptr<WireOp>>& wire, uint32_t& op_seq) {
  for (const auto& w : wire) {
    // Data takes the last op_seq, probes the one before. An operation takes
    // only the op_seqs it sends (none when empty), so a rank's op_seq never
    // runs ahead of its stream: between two uses of a copy, 2P positions,
    // it advances at most 2P, which the Tofino program's 11-bit op_seq in
    // its chunk tag needs (docs/switch.md, "Tofino").
    op_seq += (w->probes > 0 ? 1 : 0) + (w->chunks > 0 ? 1 : 0);
    w->op_seq = op_seq;
  }
}

namespace {

// The window is the lane's share of the pool's.
uint32_t MaxWindow(const EngineOptions& options, uint32_t own_slots, uint32_t lanes) {
  return options.window == 0 ? own_slots : std::clamp(options.window / lanes, 1u, own_slots);
}

uint32_t OwnSlots(uint32_t slots, Lane lane) {
  return (slots - lane.index + lane.count - 1) / lane.count;
}

// The communicator checks lanes against the pool; a wrong one here would
// leave this lane without slots.
Lane ClampLane(Lane lane, uint32_t slots) {
  lane.count = std::clamp<uint32_t>(lane.count, 1, std::max<uint32_t>(1, slots));
  lane.index = std::min(lane.index, lane.count - 1);
  return lane;
}

}  // namespace

Engine::Engine(const host_config::WorkerConfig& config, Transport* transport,
               const EngineOptions& options, Lane lane)
    : config_(config),
      transport_(transport),
      options_(options),
      lane_(ClampLane(lane, config.slots)),
      cc_(options.initial_window / lane_.count,
          MaxWindow(options, OwnSlots(config.slots, lane_), lane_.count), options.ecn_gain),
      loss_(options) {
  slots_.resize(OwnSlots(config.slots, lane_));
  next_pos_ = NextOwn(0);
  tx_items_.resize(std::max<size_t>(1, options.batch));
}

void Engine::Submit(std::vector<std::shared_ptr<WireOp>> ops, absl::Time now) {
  for (auto& w : ops) {
    Running r;
    r.base = stream_end_;
    stream_end_ += w->total();
    if (!failed_.ok()) {
      for (Piece& p : w->pieces) p.op->Finish(failed_, now);
      continue;
    }
    for (uint64_t pos = r.base; pos < stream_end_; ++pos) r.own += Owns(pos) ? 1 : 0;
    r.foreign_before = Foreign();
    if (trace_ != nullptr) TraceSubmit(*w, now);
    // An empty operation has no chunk to end it: lane 0 does.
    if (w->total() == 0 && lane_.index == 0) Complete(*w, now);
    r.op = std::move(w);
    ops_.push_back(std::move(r));
  }
  PopDone();
}

void Engine::PopDone() {
  while (!ops_.empty() && ops_.front().done == ops_.front().own) {
    ops_.pop_front();
    if (issuing_ > 0) --issuing_;
  }
}

bool Engine::Poll(absl::Time now) {
  bool any = Receive(now);
  any |= Issue(now);
  Scan(now);
  if (trace_ != nullptr) TraceSample(now);
  return any;
}

uint8_t Engine::LocalExponent(WireOp& op, uint32_t j) {
  const size_t begin = size_t{j} * config_.elements;
  const size_t n = std::min<size_t>(config_.elements, op.count - begin);
  auto e = op.codec->exponent(op.In(begin), n);
  if (e.ok()) return *e;
  // A NaN or Inf: the operation fails, and this rank proposes the exponent
  // that tells every rank so (numerics::kNotFiniteExponent). It still
  // contributes, so the others are not left waiting.
  op.Fail(absl::InvalidArgumentError(absl::StrFormat("allreduce %d: elements %d-%d: %s",
                                                     op.pieces.front().op->id, begin, begin + n - 1,
                                                     e.status().message())));
  return numerics::kNotFiniteExponent;
}

// Runs once per wire operation, on the lane that answered its last chunk:
// every lane's writes to the output came before (WireOp::completed). A
// direct operation's chunks were averaged and narrowed into the caller's
// buffer as they came (Codec::decode); a fused one's pieces are now.
void Engine::Complete(WireOp& op, absl::Time now) {
  if (trace_ != nullptr && op.total() > 0) trace_->AsyncEnd(now, "allreduce", "op", op.op_seq);
  const absl::Status error = [&] {
    std::lock_guard<std::mutex> lock(op.error_mu);
    return op.error;
  }();
  for (Piece& p : op.pieces) {
    if (op.staged) {
      OpState& s = *p.op;
      absl::Status narrowed = op.codec->narrow(
          op.stage_out.data() + p.at * kWideBytes, p.count, s.average ? config_.world : 1,
          static_cast<uint8_t*>(s.recv) + p.offset * op.codec->element_bytes);
      if (!narrowed.ok()) p.op->Fail(narrowed);
    }
    if (!error.ok()) p.op->Fail(error);
    if (p.op->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) Finalize(p, now);
  }
}

void Engine::Finalize(Piece& piece, absl::Time now) {
  OpState& s = *piece.op;
  absl::Status status = s.first_error();
  if (status.ok()) {
    ++stats_.operations;
    stats_.operation_time += now - s.submitted;
  }
  s.Finish(std::move(status), now);
}

void Engine::FailAll(const absl::Status& status, absl::Time now) {
  if (failed_.ok()) failed_ = status;
  for (Running& r : ops_) {
    for (Piece& p : r.op->pieces) p.op->Finish(status, now);
  }
  ops_.clear();
  issuing_ = 0;
  for (Slot& s : slots_) s.run = nullptr;
  in_flight_ = 0;
  if (trace_ != nullptr) {
    trace_->Instant(now, "operations failed", "error");
    TraceWait(nullptr, now);
  }
}

}  // namespace grid::worker
