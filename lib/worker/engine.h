// The worker engine: turns operations into chunks on the wire and results
// back into tensors (docs/worker.md). An engine is single-threaded: a
// progress thread owns it and calls Poll. A rank with several progress
// threads runs one engine per thread, each on its own lane of the pool's
// slots and its own transport queue (docs/worker.md, "Threads"); they share
// the wire operations.
//
// Concerns live in separate files: engine.cc (operations and completion),
// tx.cc (issuing chunks under the window), rx.cc (results and signals),
// loss.cc (the periodic scan and timeouts).
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
  bool quantized = false;  // float path (probes, exponents) or int32
  const float* in_f = nullptr;
  float* out_f = nullptr;
  const int32_t* in_i = nullptr;
  int32_t* out_i = nullptr;
  std::vector<float> stage_f_in, stage_f_out;  // fused operations
  std::vector<int32_t> stage_i_in, stage_i_out;
  bool staged = false;
  size_t count = 0;
  uint32_t op_seq = 0;  // of the data chunks; probes (if any) use op_seq - 1
  uint32_t chunks = 0, probes = 0;
  // Probe j proposes for data chunk probe_base + j: the chunks before it
  // are proposed by the previous, chained operation (`next` below).
  uint32_t probe_base = 0;
  absl::Time deadline;
  uint8_t max_exponent = 255;  // numerics::MaxBlockExponent of its type
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
  Engine(const control::WorkerConfig& config, Transport* transport, const EngineOptions& options,
         Lane lane = {});

  // Queues operations; each wire operation runs after the ones before it.
  // Every lane of a rank is given the same operations in the same order.
  void Submit(std::vector<std::shared_ptr<WireOp>> ops);
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
  // Whether this lane has nothing left to send or wait for (other lanes may).
  bool Idle() const { return ops_.empty(); }
  size_t operations() const { return ops_.size(); }  // wire operations this lane still runs
  // Set once a timeout or a fatal error has ended every operation; the
  // stream is then out of step with the other ranks and the engine takes no
  // more operations.
  const absl::Status& failed() const { return failed_; }

  const CommunicatorStats& stats() const { return stats_; }
  // The loss and congestion state, as tests/worker/loss_test.cc checks it.
  uint32_t window() const { return static_cast<uint32_t>(cwnd_); }
  double marked_fraction() const { return alpha_; }
  absl::Duration rto() const { return rto_; }

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
  bool Queue(WireOp& op, uint32_t index, uint64_t pos, bool retransmit);
  // Writes the whole frame. A header that does not fit (only a config
  // Create would have refused) zeroes it and sets build_error_.
  void BuildChunk(const TxItem& item, absl::Span<uint8_t> frame);
  bool Flush();
  // rx.cc
  bool Receive(absl::Time now);
  void OnFrame(absl::Span<const uint8_t> frame, absl::Time now);
  void OnResult(const wire::FrameView& v, absl::Time now);
  bool TakeData(const wire::FrameView& v, WireOp& op, uint32_t chunk);
  void Answered(const Slot& s, uint8_t flags, absl::Time now);
  bool FromAggregator(const wire::FrameView& v) const;
  bool ExponentPossible(WireOp& op, uint32_t chunk, uint8_t exponent);
  uint64_t Foreign() const { return foreign_ + transport_->foreign_frames(); }
  // Loss recovery (loss.cc): every scan_interval, Scan measures the rate
  // results come back at, resends what is lost, and fails operations past
  // their deadline.
  void Scan(absl::Time now);
  void MeasureResultRate(absl::Time now);
  struct LossClock {  // one scan's timeouts
    int max_shift = 0;
    absl::Duration stall_base, overtaken_base, reorder;
    bool probe_says_lost = false;
  };
  // Also consumes a stall probe's answer once it says the rest was lost.
  LossClock LossClockAt(absl::Time now);
  // False if the transmit queue filled; `lost` says whether anything went.
  bool ResendLost(absl::Time now, bool& lost);
  void FailExpired(absl::Time now);
  void Backoff(absl::Time now, double floor = 1);
  void OnMark(bool marked);  // the congestion control's ECN input (DCTCP)
  // engine.cc
  void Complete(WireOp& op, absl::Time now);
  void Finalize(Piece& piece, absl::Time now);
  uint8_t LocalExponent(WireOp& op, uint32_t data_chunk);

  control::WorkerConfig config_;
  Transport* transport_;
  EngineOptions options_;
  Lane lane_;
  std::deque<Running> ops_;  // running, in stream order (references stay valid)
  size_t issuing_ = 0;       // ops_[issuing_] is being issued
  std::vector<Slot> slots_;  // this lane's: slot s is slots_[s / lane_.count]
  uint64_t stream_end_ = 0;  // the stream position after the last operation submitted
  uint64_t next_pos_ = 0;    // this lane's next position to issue
  uint32_t in_flight_ = 0;
  double cwnd_;
  double ssthresh_;  // slow start below it, +1 per window above it
  uint32_t max_window_;
  absl::Time last_decrease_ = absl::InfinitePast();
  // DCTCP: alpha_ follows the fraction of results and signals marked
  // CONGESTION, updated once per window of them; a window with marks shrinks
  // cwnd by alpha_ / 2 (loss.cc, OnMark). It starts at 1, so the first
  // marked window halves, as TCP would.
  double alpha_ = 1;
  uint32_t window_seen_ = 0, window_marked_ = 0;
  // Doublings of a chunk's retransmission timeout (loss.cc, Scan).
  static constexpr int kMaxBackoff = 3;
  static constexpr int kMaxSilentBackoff = 20;
  // The round-trip estimate (loss.cc, SampleRtt), from clean samples.
  absl::Duration srtt_ = absl::ZeroDuration(), rttvar_ = absl::ZeroDuration();
  absl::Duration rto_;
  void SampleRtt(absl::Duration rtt);
  absl::Time last_result_ = absl::InfinitePast();       // when a chunk was last answered
  absl::Time last_result_sent_ = absl::InfinitePast();  // when that chunk was (last) sent
  // Loss by order (RACK, RFC 8985; loss.cc, Scan): every chunk of this rank
  // takes the same path to its aggregator, and every rank sends in stream
  // order, so results come back in the order their chunks were sent. A
  // chunk still out when one sent after it has been answered, for longer
  // than that one's round trip and a reordering window, was lost. A chunk
  // that is only queued has nothing sent after it answered yet.
  absl::Time rack_sent_ = absl::InfinitePast();  // the latest send answered
  absl::Duration rack_rtt_;                      // that chunk's round trip
  // A stalled stream's probe (loss.cc): its position, and once its result
  // is in, when it came and when the probe was sent. A
  // result for a chunk sent before the probe cancels it (the stall was a
  // wait, not a loss).
  uint64_t probe_pos_ = UINT64_MAX;
  absl::Time probe_answered_ = absl::InfinitePast();
  absl::Time probe_sent_ = absl::InfinitePast();
  // Results per second while chunks are in flight (loss.cc, Scan): with
  // in_flight_ chunks queued ahead, a chunk sent now waits about
  // in_flight_ / result_rate_ for its result, which srtt_ follows late.
  double result_rate_ = 0;
  uint64_t results_counted_ = 0;
  absl::Time rate_since_ = absl::InfinitePast();
  absl::Time next_scan_ = absl::InfinitePast();
  std::vector<TxItem> tx_items_;  // the batch being queued, options_.batch long
  size_t tx_count_ = 0;
  size_t tx_bytes_ = 0;  // the batch's frame size: a batch is probes or data
  CommunicatorStats stats_;
  uint64_t foreign_ = 0;  // dropped here; the transport counts its own
  absl::Status failed_;
  absl::Status build_error_;  // a header that did not fit (BuildChunk), for Flush
  std::function<std::string(uint64_t)> explain_;
};

// Splits operations (all of one type, issued together) into wire operations:
// consecutive operations of at most `fusion_bytes` are fused, an operation
// above kMaxChunksPerSegment chunks is segmented, and consecutive float
// wire operations are chained (WireOp::next). Widens 16-bit types.
// `op_seq` is the communicator's counter; every rank must call this with the
// same operations in the same order.
std::vector<std::shared_ptr<WireOp>> PrepareWireOps(
    const std::vector<std::shared_ptr<internal::OpState>>& ops, uint16_t elements, uint32_t slots,
    size_t fusion_bytes, uint32_t& op_seq);

}  // namespace grid::worker

#endif  // GRID_LIB_WORKER_ENGINE_H_
