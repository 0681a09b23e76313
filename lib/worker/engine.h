// The worker engine: turns operations into chunks on the wire and results
// back into tensors (docs/worker.md). An engine is single-threaded: a
// progress thread owns it and calls Poll. A rank with several progress
// threads runs one engine per thread, each on its own lane of the pool's
// slots and its own transport queue (docs/worker.md, "Threads"); they share
// the wire operations.
//
// Concerns live in separate units: engine.cc (operations and completion),
// tx.cc (issuing chunks under the window), rx.cc (results and signals),
// loss.cc (the periodic scan and timeouts), trace.cc (GRID_TRACE's
// timeline); the window is a
// CongestionControl (congestion.h) and the loss rules a LossDetector
// (loss_detector.h), each a unit of its own with its own tests. Nothing here
// reads a clock: every call that needs the time is given it.
#ifndef GRID_LIB_WORKER_ENGINE_H_
#define GRID_LIB_WORKER_ENGINE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grid/host_config.h"
#include "grid/options.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "trace/recorder.h"
#include "worker/codec.h"
#include "worker/congestion.h"
#include "worker/loss_detector.h"
#include "worker/op_state.h"

namespace grid::worker {

// A float operation's data chunks are quantized with an exponent that every
// rank agrees on before it sends them: probe chunk j (header-only) proposes
// rank-local exponents for data chunk j, and data chunk j proposes for data
// chunk j + P; the switches and the root keep the max. Probes use op_seq and
// data uses op_seq + 1, so the stream order is the (op_seq, chunk) order.
// An operation takes only the op_seqs it sends (two, one, or none when
// empty), so op_seq never rises faster than stream positions do: the Tofino
// program's 11-bit op_seq in its chunk tag relies on it (sw::kP4MaxPool).
// A wire operation chained to the one before it (WireOp::next) has fewer
// probes, or none: that one's last data chunks, which have no chunk a pool
// ahead of their own, propose for its first ones.
// An operation of more than kMaxChunksPerSegment chunks is split into
// segments, each with its own op_seq (the Tofino program's 20-bit chunk tag).
inline constexpr uint32_t kMaxChunksPerSegment = 1u << 20;

// The slots one engine runs: slot s belongs to lane s % count. A position of
// the stream goes to its slot's lane, so a rank's wire traffic is the same
// whatever its number of lanes (other ranks cannot tell), and a transport
// can steer results to lanes by the slot field alone. Lane 0 of 1 is the
// whole pool.
struct Lane {
  uint32_t index = 0;
  uint32_t count = 1;
};

struct Piece {  // an operation's elements inside a wire operation
  std::shared_ptr<internal::OpState> op;
  size_t at = 0;      // first element in the wire operation
  size_t offset = 0;  // first element in the operation
  size_t count = 0;
};

// What travels as one (op_seq) stream of chunks. Every lane of a rank runs
// the same WireOp: the fields at the end are shared between them.
struct WireOp {
  std::vector<Piece> pieces;
  const Codec* codec = nullptr;  // the pieces' type (all share one)
  // Elements [0, count): the caller's buffers at the piece's offset, or for
  // fused operations (`staged`) the pieces' inputs gathered in `stage_in`
  // and their sums, wide (Codec::decode_wide), in `stage_out`, which
  // Complete narrows into each piece.
  const uint8_t* in = nullptr;
  uint8_t* out = nullptr;
  std::vector<uint8_t> stage_in, stage_out;
  bool staged = false;
  int divisor = 1;  // direct operations: the world size when they average
  size_t count = 0;
  bool quantized() const { return codec->quantized; }
  const uint8_t* In(size_t element) const { return in + element * codec->element_bytes; }
  uint32_t op_seq = 0;  // of the data chunks; probes (if any) use op_seq - 1
  uint32_t chunks = 0, probes = 0;
  // Probe j proposes for data chunk probe_base + j: the chunks before it
  // are proposed by the previous, chained operation (`next` below).
  uint32_t probe_base = 0;
  absl::Time deadline;
  uint32_t total() const { return probes + chunks; }
  // What the operation's index-th packet names: its first `probes` are
  // probes (op_seq - 1, chunk = index), the rest data chunk index - probes.
  // The one mapping tx.cc (what it sends) and rx.cc (what a result must
  // name) share.
  struct Named {
    bool probe = false;
    uint32_t op_seq = 0;
    uint32_t chunk = 0;
  };
  Named At(uint32_t index) const {
    if (index < probes) return {true, op_seq - 1, index};
    return {false, op_seq, index - probes};
  }

  // The next wire operation of the same submission, chained to this one
  // when both are float. This one's last min(P, chunks) data chunks have no
  // chunk a pool ahead in this operation; in order, they propose for the
  // next one's first chunks instead, and its probes cover only the rest of
  // its first pool (`probe_base`). Every rank chains the same operations
  // (PrepareWireOps decides from what was submitted together, not from
  // timing), so a proposal always meets the other ranks' proposals for the
  // same chunk.
  std::shared_ptr<WireOp> next;
  struct Ahead {
    WireOp* op = nullptr;  // nullptr: data chunk j proposes for nothing
    uint32_t chunk = 0;
  };
  // The data chunk that data chunk j proposes an exponent for: j + P of this
  // operation, or one of the chained next one's first chunks. The one rule
  // tx.cc (what a chunk proposes) and rx.cc (what its result agrees) share.
  Ahead AheadOf(uint32_t j, uint32_t pool) {
    if (uint64_t{j} + pool < chunks) return {this, j + pool};
    const uint32_t first_free = chunks > pool ? chunks - pool : 0;
    if (next != nullptr && j - first_free < next->probe_base) {
      return {next.get(), j - first_free};
    }
    return {};
  }

  // Shared by the lanes. A data chunk's exponent may be agreed by another
  // lane than the one that sends it (a probe's slot differs from its data
  // chunk's when the operation has fewer chunks than the pool has slots).
  void Agree(uint32_t chunk, uint8_t exponent) {
    agreement[chunk].store(exponent, std::memory_order_release);
  }
  bool Agreed(uint32_t chunk) const {
    return agreement[chunk].load(std::memory_order_acquire) >= 0;
  }
  uint8_t Exponent(uint32_t chunk) const {  // once Agreed
    return static_cast<uint8_t>(agreement[chunk].load(std::memory_order_acquire));
  }
  void Fail(absl::Status s) {  // the first error stays
    std::lock_guard<std::mutex> lock(error_mu);
    if (error.ok()) error = std::move(s);
  }
  // Per data chunk: -1 until agreed, then its exponent (0 is valid: an
  // all-zero block).
  std::unique_ptr<std::atomic<int16_t>[]> agreement;
  std::atomic<uint32_t> completed{0};  // chunks answered, over all lanes
  mutable std::mutex error_mu;
  absl::Status error;  // under error_mu until every chunk is answered
};

class Engine {
 public:
  // `lane.count` is at most config.slots.
  Engine(const host_config::WorkerConfig& config, Transport* transport,
         const EngineOptions& options, Lane lane = {});

  // Queues operations at `now`; each wire operation runs after the ones
  // before it. Every lane of a rank is given the same operations in the
  // same order.
  void Submit(std::vector<std::shared_ptr<WireOp>> ops, absl::Time now);
  // One round: receive a batch, issue what the window allows, scan for loss
  // when the scan interval has passed. Returns whether anything happened.
  bool Poll(absl::Time now);
  // Ends every operation with `status` (abort, shutdown, a fatal error).
  void FailAll(const absl::Status& status, absl::Time now);
  // Called when operation `op_id` times out; what it returns is added to the
  // error (the communicator names the ranks that did not contribute).
  void SetTimeoutExplainer(std::function<std::string(uint64_t op_id)> explain) {
    explain_ = std::move(explain);
  }
  // Records this lane's timeline into `trace` (owned by the caller, which
  // writes it out; null: off). Set before the first Poll.
  void SetTrace(trace::Recorder* trace) { trace_ = trace; }
  // Whether this lane has nothing left to send or wait for (other lanes may).
  bool Idle() const { return ops_.empty(); }
  size_t operations() const { return ops_.size(); }  // wire operations this lane still runs
  // Set once a timeout or a fatal error has ended every operation; the
  // stream is then out of step with the other ranks and the engine takes no
  // more operations.
  const absl::Status& failed() const { return failed_; }

  const CommunicatorStats& stats() const { return stats_; }
  // Chunks answered with a result this engine used: progress, which a
  // stall probe's answer or a SIGNAL is not (api::Health).
  uint64_t results() const { return results_; }
  // The loss and congestion state, as tests/worker/engine_test.cc checks it.
  uint32_t window() const { return cc_.window(); }
  uint32_t max_window() const { return cc_.max_window(); }  // EngineOptions::window's share
  double marked_fraction() const { return cc_.marked_fraction(); }
  absl::Duration rto() const { return loss_.rto(); }

 private:
  // A wire operation as this lane runs it: the stream positions
  // [base, base + total) are the operation's, and `own` of them fall in
  // this lane's slots.
  struct Running {
    std::shared_ptr<WireOp> op;
    uint64_t base = 0;
    uint32_t own = 0;
    uint32_t issued = 0, done = 0;  // of `own`
    uint64_t foreign_before = 0;    // Foreign() when it was submitted
  };
  struct Slot {
    Running* run = nullptr;  // nullptr: free
    uint32_t index = 0;      // < op->probes: probe; else data chunk index - probes
    uint64_t pos = 0;        // stream position: slot = pos % P, copy = (pos / P) % 2
    absl::Time sent;
    int sends = 0;
  };
  bool Owns(uint64_t pos) const { return (pos % config_.slots) % lane_.count == lane_.index; }
  Slot& SlotOf(uint64_t pos) { return slots_[(pos % config_.slots) / lane_.count]; }
  uint64_t NextOwn(uint64_t pos) const {
    while (!Owns(pos)) ++pos;
    return pos;
  }
  void PopDone();  // drops finished operations from the front of ops_

  // tx.cc
  bool Issue(absl::Time now);
  // A chunk to send, built when the batch is flushed, in the transport's
  // buffer (Transport::SendBuilt).
  struct TxItem {
    WireOp* op;
    uint32_t index;
    uint64_t pos;
    bool retransmit;
  };
  // Queue and Flush are false once a batch could not be built: every
  // operation has failed (FailAll), and the caller's slots and ops are gone.
  // A probe (header-only) after data, or data after a probe, flushes first.
  bool Queue(WireOp& op, uint32_t index, uint64_t pos, bool retransmit, absl::Time now);
  // Writes the whole frame. A header that does not fit (only a config
  // Create would have refused) zeroes it and sets build_error_.
  void BuildChunk(const TxItem& item, absl::Span<uint8_t> frame);
  bool Flush(absl::Time now);
  // rx.cc
  bool Receive(absl::Time now);
  void OnFrame(absl::Span<const uint8_t> frame, absl::Time now);
  void OnResult(const wire::FrameView& v, absl::Time now);
  bool TakeData(const wire::FrameView& v, WireOp& op, uint32_t chunk);
  void Answered(const Slot& s, uint8_t flags, absl::Time now);
  bool FromAggregator(const wire::FrameView& v) const;
  bool ExponentPossible(WireOp& op, uint32_t chunk, uint8_t exponent);
  uint64_t Foreign() const { return foreign_ + transport_->foreign_frames(); }
  // Loss recovery (loss.cc): every scan_interval, Scan asks the
  // LossDetector about each chunk in flight, resends what it finds lost, and
  // fails operations past their deadline.
  void Scan(absl::Time now);
  // False if the transmit queue filled; `lost` says whether anything went.
  bool ResendLost(absl::Time now, bool& lost);
  void FailExpired(absl::Time now);
  // trace.cc: what the lane waits on (a slice per state, named by a
  // literal; null: nothing to send), the sampled counters, and events.
  void TraceWait(const char* wait, absl::Time now);
  void TraceSample(absl::Time now);
  void TraceSubmit(const WireOp& op, absl::Time now);
  // engine.cc
  void Complete(WireOp& op, absl::Time now);
  void Finalize(Piece& piece, absl::Time now);
  uint8_t LocalExponent(WireOp& op, uint32_t data_chunk);

  host_config::WorkerConfig config_;
  Transport* transport_;
  EngineOptions options_;
  Lane lane_;
  std::deque<Running> ops_;  // running, in stream order (references stay valid)
  size_t issuing_ = 0;       // ops_[issuing_] is being issued
  std::vector<Slot> slots_;  // this lane's: slot s is slots_[s / lane_.count]
  uint64_t stream_end_ = 0;  // the stream position after the last operation submitted
  uint64_t next_pos_ = 0;    // this lane's next position to issue
  uint32_t in_flight_ = 0;
  CongestionControl cc_;
  LossDetector loss_;
  absl::Time next_scan_ = absl::InfinitePast();
  std::vector<TxItem> tx_items_;  // the batch being queued, options_.batch long
  size_t tx_count_ = 0;
  size_t tx_bytes_ = 0;  // the batch's frame size: a batch is probes or data
  CommunicatorStats stats_;
  uint64_t results_ = 0;
  uint64_t foreign_ = 0;  // dropped here; the transport counts its own
  absl::Status failed_;
  absl::Status build_error_;  // a header that did not fit (BuildChunk), for Flush
  std::function<std::string(uint64_t)> explain_;
  trace::Recorder* trace_ = nullptr;
  const char* wait_ = nullptr;  // the open wait slice (TraceWait)
};

// Splits operations (all of one type, issued together) into wire operations:
// consecutive operations of at most `fusion_bytes` are fused (their inputs
// gathered here), an operation above kMaxChunksPerSegment chunks is
// segmented, and consecutive float wire operations are chained
// (WireOp::next). `world`: the divisor of those that average. O(bytes)
// for fused operations only, and needs no lock: NumberWireOps then gives
// them their op_seqs.
std::vector<std::shared_ptr<WireOp>> PrepareWireOps(
    const std::vector<std::shared_ptr<internal::OpState>>& ops, uint16_t elements, uint32_t slots,
    size_t fusion_bytes, int world);
// The op_seqs, in order from the communicator's counter `op_seq`; every rank
// numbers the same wire operations in the same order.
void NumberWireOps(const std::vector<std::shared_ptr<WireOp>>& wire, uint32_t& op_seq);

}  // namespace grid::worker

#endif  // GRID_LIB_WORKER_ENGINE_H_
