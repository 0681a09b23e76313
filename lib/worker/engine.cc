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
std::shared_ptr<WireOp> Direct(const std::shared_ptr<OpState>& op, size_t offset, size_t count) {
  auto w = std::make_shared<WireOp>();
  w->pieces.push_back({op, 0, offset, count});
  w->count = count;
  switch (op->type) {
    case DataType::kFloat32:
      w->quantized = true;
      w->in_f = static_cast<const float*>(op->send) + offset;
      w->out_f = static_cast<float*>(op->recv) + offset;
      break;
    case DataType::kInt32:
      w->in_i = static_cast<const int32_t*>(op->send) + offset;
      w->out_i = static_cast<int32_t*>(op->recv) + offset;
      break;
    case DataType::kBFloat16:
    case DataType::kFloat16:
      w->quantized = true;
      w->in_f = op->wide_in.data() + offset;
      w->out_f = op->wide_out.data() + offset;
      break;
  }
  return w;
}

// A fused operation gathers its pieces' inputs into one buffer.
void Stage(WireOp& w) {
  if (w.quantized) {
    w.stage_f_in.resize(w.count);
    w.stage_f_out.resize(w.count);
    for (const Piece& p : w.pieces) {
      const float* src = p.op->type == DataType::kFloat32 ? static_cast<const float*>(p.op->send)
                                                          : p.op->wide_in.data();
      std::copy_n(src, p.count, w.stage_f_in.data() + p.at);
    }
    w.in_f = w.stage_f_in.data();
    w.out_f = w.stage_f_out.data();
  } else {
    w.stage_i_in.resize(w.count);
    w.stage_i_out.resize(w.count);
    for (const Piece& p : w.pieces) {
      std::copy_n(static_cast<const int32_t*>(p.op->send), p.count, w.stage_i_in.data() + p.at);
    }
    w.in_i = w.stage_i_in.data();
    w.out_i = w.stage_i_out.data();
  }
}

}  // namespace

std::vector<std::shared_ptr<WireOp>> PrepareWireOps(
    const std::vector<std::shared_ptr<OpState>>& ops, uint16_t elements, uint32_t slots,
    size_t fusion_bytes, uint32_t& op_seq) {
  std::vector<std::shared_ptr<WireOp>> out;
  auto finish = [&](std::shared_ptr<WireOp> w) {
    w->chunks = ChunksOf(w->count, elements);
    w->probes = w->quantized ? std::min(w->chunks, slots) : 0;
    // Chained: the one before proposes for this one's first chunks, as many
    // as it has data chunks without a chunk a pool ahead, so those
    // exponents are agreed while its data is on the wire, and probes cover
    // only the rest of the first pool (WireOp::next).
    // An empty operation in between has no chunks to propose with: the
    // chain passes over it.
    auto prev = std::find_if(out.rbegin(), out.rend(), [](const auto& o) { return o->chunks > 0; });
    if (w->quantized && prev != out.rend() && (*prev)->quantized) {
      (*prev)->next = w;
      w->probe_base = std::min(w->probes, (*prev)->chunks);
      w->probes -= w->probe_base;
    }
    w->max_exponent = numerics::MaxBlockExponent(w->pieces.front().op->type);
    if (w->quantized) {
      w->agreement = std::make_unique<std::atomic<int16_t>[]>(w->chunks);
      for (uint32_t j = 0; j < w->chunks; ++j) w->agreement[j].store(-1, std::memory_order_relaxed);
    }
    // Data takes the last op_seq, probes the one before. An operation takes
    // only the op_seqs it sends (none when empty), so a rank's op_seq never
    // runs ahead of its stream: between two uses of a copy, 2P positions,
    // it advances at most 2P, which the Tofino program's 11-bit op_seq in
    // its chunk tag needs (docs/switch.md, "Tofino").
    op_seq += (w->probes > 0 ? 1 : 0) + (w->chunks > 0 ? 1 : 0);
    w->op_seq = op_seq;
    w->deadline = absl::InfiniteFuture();
    for (const Piece& p : w->pieces) {
      w->deadline = std::min(w->deadline, p.op->deadline);
      p.op->pending.fetch_add(1, std::memory_order_relaxed);
    }
    out.push_back(std::move(w));
  };
  std::shared_ptr<WireOp> fused;
  for (const std::shared_ptr<OpState>& op : ops) {
    if (op->type == DataType::kBFloat16 || op->type == DataType::kFloat16) {
      op->wide_in.resize(op->count);
      op->wide_out.resize(op->count);
      // The type was checked at submission; widening cannot fail.
      (void)numerics::WidenToFloat(op->type, op->send, op->count, op->wide_in.data());
    }
    const size_t bytes = op->count * DataTypeSize(op->type);
    const bool small = fusion_bytes > 0 && bytes <= fusion_bytes && op->count > 0;
    if (fused && (!small || fused->pieces.front().op->type != op->type ||
                  (fused->count + op->count) * DataTypeSize(op->type) > fusion_bytes ||
                  fused->count + op->count > size_t{kMaxChunksPerSegment} * elements)) {
      finish(std::move(fused));
    }
    if (small) {
      if (!fused) {
        fused = std::make_shared<WireOp>();
        fused->staged = true;
        fused->quantized = op->type != DataType::kInt32;
      }
      fused->pieces.push_back({op, fused->count, 0, op->count});
      fused->count += op->count;
      continue;
    }
    const size_t segment = size_t{kMaxChunksPerSegment} * elements;
    size_t offset = 0;
    do {
      const size_t n = std::min(segment, op->count - offset);
      finish(Direct(op, offset, n));
      offset += n;
    } while (offset < op->count);
  }
  if (fused) finish(std::move(fused));
  for (auto& w : out) {
    if (w->staged) Stage(*w);
  }
  return out;
}

Engine::Engine(const control::WorkerConfig& config, Transport* transport,
               const EngineOptions& options, Lane lane)
    : config_(config), transport_(transport), options_(options), lane_(lane) {
  // The communicator checks lanes against the pool; a wrong one here would
  // leave this lane without slots.
  lane_.count = std::clamp<uint32_t>(lane_.count, 1, std::max<uint32_t>(1, config.slots));
  lane_.index = std::min(lane_.index, lane_.count - 1);
  slots_.resize((config.slots - lane_.index + lane_.count - 1) / lane_.count);
  next_pos_ = NextOwn(0);
  // The window is the lane's share of the pool's.
  const auto pool = static_cast<uint32_t>(slots_.size());
  max_window_ = options.window == 0 ? pool : std::clamp(options.window / lane_.count, 1u, pool);
  cwnd_ = std::clamp<double>(options.initial_window / lane_.count, 1, max_window_);
  ssthresh_ = max_window_;
  rto_ = options.rto;
  tx_items_.resize(std::max<size_t>(1, options.batch));
}

void Engine::Submit(std::vector<std::shared_ptr<WireOp>> ops) {
  const absl::Time now = absl::Now();
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
  return any;
}

uint8_t Engine::LocalExponent(WireOp& op, uint32_t j) {
  const size_t begin = size_t{j} * config_.elements;
  const size_t n = std::min<size_t>(config_.elements, op.count - begin);
  auto e = numerics::BlockExponent({op.in_f + begin, n});
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
// every lane's writes to the output came before (WireOp::completed).
void Engine::Complete(WireOp& op, absl::Time now) {
  const absl::Status error = [&] {
    std::lock_guard<std::mutex> lock(op.error_mu);
    return op.error;
  }();
  for (Piece& p : op.pieces) {
    if (op.staged) {
      OpState& s = *p.op;
      if (op.quantized) {
        float* dst = s.type == DataType::kFloat32 ? static_cast<float*>(s.recv) : s.wide_out.data();
        std::copy_n(op.stage_f_out.data() + p.at, p.count, dst + p.offset);
      } else {
        std::copy_n(op.stage_i_out.data() + p.at, p.count,
                    static_cast<int32_t*>(s.recv) + p.offset);
      }
    }
    if (!error.ok()) p.op->Fail(error);
    if (p.op->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) Finalize(p, now);
  }
}

void Engine::Finalize(Piece& piece, absl::Time now) {
  OpState& s = *piece.op;
  absl::Status status = s.first_error();
  if (status.ok()) {
    const double world = config_.world;
    switch (s.type) {
      case DataType::kFloat32:
        if (s.average) {
          float* r = static_cast<float*>(s.recv);
          for (size_t i = 0; i < s.count; ++i) r[i] = static_cast<float>(r[i] / world);
        }
        break;
      case DataType::kInt32:
        if (s.average) {
          int32_t* r = static_cast<int32_t*>(s.recv);
          for (size_t i = 0; i < s.count; ++i) r[i] /= static_cast<int32_t>(config_.world);
        }
        break;
      case DataType::kBFloat16:
      case DataType::kFloat16:
        if (s.average) {
          for (float& x : s.wide_out) x = static_cast<float>(x / world);
        }
        status = numerics::NarrowFromFloat(s.type, s.wide_out.data(), s.count, s.recv);
        break;
    }
  }
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
}

}  // namespace grid::worker
