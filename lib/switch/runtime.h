// Internal: the switch runtime around the pure pipeline (grid/switch.h):
// what a software switch does between its ports and sw::Pipeline. Each
// egress port has a queue, a rate limit (a token bucket) and the link's
// faults; the pipeline is granted its aggregation capacity C_s as time
// passes and told its queue depths (the CONGESTION mark). It does no I/O and
// reads no clock: the caller hands it frames and the time, and sends what
// it says. grid-switch runs it on DPDK mbufs and on kernel UDP links
// (tools/switch_dpdk.cc, tools/switch_udp.cc); a simulator can run it on its
// own packets and clock.
//
// A frame is a handle the port kind owns (an rte_mbuf*, a pooled buffer).
// `Ops` says how to handle one, with no virtual call per frame:
//
//   struct Ops {
//     using Frame = ...;
//     std::optional<absl::Span<uint8_t>> Data(Frame f);  // its bytes, contiguous
//                                          // (nullopt: they cannot be, say no mbuf to
//                                          // linearize into)
//     size_t Length(const Frame& f);       // its length in bytes
//     void Trim(Frame f, size_t length);   // after the pipeline rewrote it shorter
//     std::optional<Frame> Share(Frame f); // one more use of a received frame
//     std::optional<Frame> Make(absl::Span<const uint8_t> bytes);  // a new frame
//     std::optional<Frame> Copy(const Frame& f);  // a duplicate (a fault)
//     void Free(Frame f);
//   };
//
// Data, Make, Share and Copy return nullopt when the pool is empty; the frame
// is then counted as a queue drop (PortDrops::queue), never dropped silently.
#ifndef GRID_LIB_SWITCH_RUNTIME_H_
#define GRID_LIB_SWITCH_RUNTIME_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grid/switch.h"
#include "switch/frame_ring.h"
#include "switch/trace_sample.h"
#include "trace/recorder.h"
#include "transport/faults.h"

namespace grid::sw {

// The runtime's tunables, each with its reason.
struct RuntimeTunables {
  // Frames a port queues for its rate limit: a window of default-size
  // frames from several ranks. More only adds delay a rank's RTO must cover.
  static constexpr size_t kQueueFrames = 1024;
  // Frames sent per call on a port: DPDK's usual burst, and the batch a
  // kernel sendmmsg takes without a second call.
  static constexpr size_t kBurst = 32;
  // A rate limiter's burst, 64 KiB: a window of default-size frames from a
  // few ranks, so a limit shapes the average rate without cutting bursts.
  static constexpr double kBucketBurstBits = 64 * 1024 * 8;
};

// How one egress port is shaped: the link's faults and its rate.
struct PortShaping {
  transport::LinkFaults faults;
  double gbps = 0;  // 0: no rate limit
};

// "PORT:loss=P,dup=P,reorder=P,seed=N,gbps=G" (grid-switch --impair). The
// error names the key at fault.
absl::StatusOr<std::pair<uint16_t, PortShaping>> ParsePortShaping(std::string_view text);

// The aggregation capacity a pipeline enforces: `table_gbps` (the tables'
// C_s) or `override_gbps` when >= 0, times `scale` (an emulation's factor),
// split over `shares` pipelines (lanes) of one switch.
double CapacityShare(double table_gbps, double override_gbps, double scale, unsigned shares);

// A token bucket in bits, refilled from the time it is given.
class TokenBucket {
 public:
  void Configure(double gbps, double burst_bits) {
    rate_bits_per_ns_ = gbps;  // 1 Gbps = 1 bit/ns
    burst_ = burst_bits;
    tokens_ = burst_bits;
    last_ns_ = -1;
  }
  bool limited() const { return rate_bits_per_ns_ > 0; }
  bool Take(double bits, int64_t now_ns) {
    if (!limited()) return true;
    if (last_ns_ >= 0 && now_ns > last_ns_) {
      tokens_ =
          std::min(burst_, tokens_ + static_cast<double>(now_ns - last_ns_) * rate_bits_per_ns_);
    }
    last_ns_ = std::max(last_ns_, now_ns);
    if (tokens_ < bits) return false;
    tokens_ -= bits;
    return true;
  }

 private:
  double rate_bits_per_ns_ = 0, burst_ = 0, tokens_ = 0;
  int64_t last_ns_ = -1;
};

// Grants a pipeline the credit of its aggregation capacity as time passes.
class CapacityMeter {
 public:
  void Grant(Pipeline& pipeline, int64_t now_ns) {
    // 1 Gbps is 1 bit per ns.
    if (last_ns_ >= 0 && now_ns > last_ns_) {
      pipeline.AddCapacityCredit(static_cast<double>(now_ns - last_ns_) *
                                 pipeline.config().capacity_gbps);
    }
    last_ns_ = std::max(last_ns_, now_ns);
  }

 private:
  int64_t last_ns_ = -1;
};

// What a runtime's ports dropped before the wire, summed over its ports.
struct PortDrops {
  uint64_t impaired = 0;  // lost to the link's faults
  uint64_t queue = 0;     // the queue was full, or no buffer was left
  void Add(const PortDrops& o) {
    impaired += o.impaired;
    queue += o.queue;
  }
};

// One egress port: faults, then the queue, then the rate limit.
template <typename Ops>
class EgressPort {
 public:
  using Frame = typename Ops::Frame;

  EgressPort(const PortShaping& shaping, uint64_t seed) : faults_(WithSeed(shaping.faults, seed)) {
    bucket_.Configure(shaping.gbps, RuntimeTunables::kBucketBurstBits);
  }

  // Hands a frame to this port's transmit side, through its faults.
  void Enqueue(Frame f, Ops& ops) {
    faults_.Apply(
        std::move(f), [&](const Frame& x) { return ops.Copy(x); },
        [&](Frame x) {
          ++drops_.impaired;
          ops.Free(std::move(x));
        },
        [&](Frame x) { Push(std::move(x), ops); });
  }

  // Sends what the rate allows at `now_ns`: `send(Span<Frame>)` returns how
  // many of them the port took, in order; the rest wait for the next round.
  template <typename Send>
  size_t Flush(int64_t now_ns, Ops& ops, Send&& send) {
    // A frame held back to be reordered goes once nothing follows it, so a
    // pause in traffic never strands it.
    if (queue_.empty()) faults_.Release([&](Frame x) { Push(std::move(x), ops); });
    Frame batch[RuntimeTunables::kBurst];
    size_t n = 0;
    while (!queue_.empty() && n < RuntimeTunables::kBurst &&
           bucket_.Take(static_cast<double>(ops.Length(queue_.front())) * 8, now_ns)) {
      batch[n++] = queue_.pop_front();
    }
    const size_t sent = n == 0 ? 0 : std::min(n, send(absl::Span<Frame>(batch, n)));
    for (size_t i = n; i-- > sent;) queue_.push_front(std::move(batch[i]));  // in order, later
    return sent;
  }

  // Frees everything queued or held (the switch stops).
  void Drain(Ops& ops) {
    while (!queue_.empty()) ops.Free(queue_.pop_front());
    if (auto held = faults_.TakeHeld()) ops.Free(*std::move(held));
  }

  size_t depth() const { return queue_.size(); }
  bool backlog() const { return !queue_.empty() || faults_.holding(); }
  const PortDrops& drops() const { return drops_; }

 private:
  static transport::LinkFaults WithSeed(transport::LinkFaults f, uint64_t seed) {
    f.seed = seed;
    return f;
  }
  void Push(Frame f, Ops& ops) {
    if (!queue_.push_back(f)) {
      ++drops_.queue;
      ops.Free(std::move(f));
    }
  }

  transport::FaultApplier<Frame> faults_;
  TokenBucket bucket_;
  FrameRing<Frame, RuntimeTunables::kQueueFrames> queue_;
  PortDrops drops_;
};

// The seed of port `port`'s faults in a runtime seeded `seed`: its draws
// apart from every other port's and lane's.
uint64_t PortSeed(uint64_t seed, uint64_t faults_seed, uint16_t port);

// One pipeline with its egress ports: a whole switch, or one lane of it
// (grid-switch with several lcores runs one runtime per lane, each on its
// share of the slots, the capacity and every port's rate).
template <typename Ops>
class SwitchRuntime {
 public:
  using Frame = typename Ops::Frame;

  // `shaping[p]` shapes port p (missing ports are unshaped).
  SwitchRuntime(Pipeline pipeline, const std::vector<PortShaping>& shaping, uint64_t seed, Ops ops)
      : pipeline_(std::move(pipeline)), ops_(std::move(ops)) {
    const uint16_t ports = pipeline_.config().num_ports;
    ports_.reserve(ports);
    for (uint16_t p = 0; p < ports; ++p) {
      const PortShaping s = p < shaping.size() ? shaping[p] : PortShaping{};
      ports_.emplace_back(s, PortSeed(seed, s.faults.seed, p));
    }
  }

  // Runs a frame that arrived on `in_port` through the pipeline and queues
  // what it emits on the egress ports. Takes the frame.
  void Handle(Frame in, uint16_t in_port) {
    const std::optional<absl::Span<uint8_t>> bytes = ops_.Data(in);
    if (!bytes.has_value()) {
      ++make_failures_.queue;
      ops_.Free(std::move(in));
      return;
    }
    const absl::Span<uint8_t> data = *bytes;
    out_.Clear();
    pipeline_.Process(data, in_port, &out_);
    // Every further use of the input is taken before any is queued: a port
    // may free what it is handed (a fault's loss) at once.
    shares_.clear();
    size_t uses = 0;
    for (const OutFrame& f : out_.frames) {
      if (!f.is_input) continue;
      ops_.Trim(in, f.length);
      if (uses++ > 0) shares_.push_back(ops_.Share(in));
    }
    size_t next_share = 0;
    for (const OutFrame& f : out_.frames) {
      std::optional<Frame> o;
      if (!f.is_input) {
        o = ops_.Make(out_.Bytes(f, data));
      } else if (next_share++ == 0) {
        o = in;
      } else {
        o = std::move(shares_[next_share - 2]);
      }
      if (!o.has_value()) {
        ++make_failures_.queue;
        continue;
      }
      ports_[f.port].Enqueue(*std::move(o), ops_);
    }
    if (uses == 0) ops_.Free(std::move(in));
  }

  // One transmit round at `now_ns`: grants the capacity of the time since
  // the last round, sends what each port's rate allows through
  // `send(port, Span<Frame>)` (returns how many the port took), and tells
  // the pipeline the queue depths. Returns the frames sent.
  template <typename Send>
  size_t Flush(int64_t now_ns, Send&& send) {
    capacity_.Grant(pipeline_, now_ns);
    size_t total = 0;
    for (uint16_t p = 0; p < ports_.size(); ++p) {
      total +=
          ports_[p].Flush(now_ns, ops_, [&](absl::Span<Frame> frames) { return send(p, frames); });
      pipeline_.SetQueueDepth(p, static_cast<uint32_t>(ports_[p].depth()));
    }
    if (trace_ != nullptr) Sample(now_ns);
    return total;
  }
  // Records GRID_TRACE's samples of this pipeline and its ports into
  // `trace` (the caller's, written out after the runtime stops; null: off),
  // at the runtime's time plus `unix_offset_ns`: Unix time, as the ranks'.
  void SetTrace(trace::Recorder* trace, int64_t unix_offset_ns) {
    trace_ = trace;
    trace_offset_ns_ = unix_offset_ns;
  }
  // Grants the capacity of the time until `now_ns` without sending (a
  // receive round that comes before the transmit round).
  void Tick(int64_t now_ns) { capacity_.Grant(pipeline_, now_ns); }

  // Whether frames wait for a rate limit or a reordering: the caller must
  // come back for them on a timer, not only when frames arrive.
  bool Backlog() const {
    return std::any_of(ports_.begin(), ports_.end(), [](const auto& p) { return p.backlog(); });
  }
  PortDrops drops() const {
    PortDrops d = make_failures_;
    for (const auto& p : ports_) d.Add(p.drops());
    return d;
  }
  size_t depth(uint16_t port) const { return ports_[port].depth(); }
  void Drain() {
    for (auto& p : ports_) p.Drain(ops_);
  }

  Pipeline& pipeline() { return pipeline_; }
  const Pipeline& pipeline() const { return pipeline_; }
  Ops& ops() { return ops_; }

 private:
  Pipeline pipeline_;
  Ops ops_;
  std::vector<EgressPort<Ops>> ports_;
  CapacityMeter capacity_;
  Output out_;
  std::vector<std::optional<Frame>> shares_;  // further uses of an input frame
  PortDrops make_failures_;
  trace::Recorder* trace_ = nullptr;
  int64_t trace_offset_ns_ = 0;
  std::vector<uint32_t> depths_;  // for a sample

  void Sample(int64_t now_ns) {
    const absl::Time now = absl::FromUnixNanos(now_ns + trace_offset_ns_);
    if (!trace_->SampleDue(now)) return;
    depths_.resize(ports_.size());
    for (size_t p = 0; p < ports_.size(); ++p)
      depths_[p] = static_cast<uint32_t>(ports_[p].depth());
    const PortDrops d = drops();
    SampleSwitch(*trace_, now, pipeline_, depths_, d.impaired, d.queue);
  }
};

// Which of `lanes` lanes of a switch owns a frame: a GRID packet by its
// slot, so every contribution to a slot meets in one pipeline (and lane w
// sends the results of slots s = w mod lanes, on the queue a rank's lane for
// those slots reads: Transport::OpenLanes); anything else lane 0.
uint32_t OwnerLane(absl::Span<const uint8_t> frame, uint32_t lanes);

// The final report of a switch, one JSON line: its name, lanes, drops
// before the wire, capacity and the pipelines' counters summed; `foreign`
// (frames from anyone but a link's other end) where the ports count them.
std::string RuntimeReportJson(const std::string& name, unsigned lanes, const PortDrops& drops,
                              double capacity_gbps, const Counters& counters,
                              std::optional<uint64_t> foreign = std::nullopt);

}  // namespace grid::sw

#endif  // GRID_LIB_SWITCH_RUNTIME_H_
