#include "api/progress.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace grid::api {

using internal::OpState;

ProgressLoop::ProgressLoop(const host_config::WorkerConfig& config,
                           std::vector<std::unique_ptr<Transport>> lanes,
                           const EngineOptions& options, Health* health)
    : config_(config), options_(options), health_(health) {
  const auto count = static_cast<uint32_t>(lanes.size());
  for (uint32_t k = 0; k < count; ++k) {
    auto lane = std::make_unique<LaneState>();
    lane->transport = std::move(lanes[k]);
    lane->engine = std::make_unique<worker::Engine>(config, lane->transport.get(), options,
                                                    worker::Lane{k, count});
    if (!options.trace_dir.empty()) {
      lane->trace = std::make_unique<trace::Recorder>(options.trace_events);
      lane->engine->SetTrace(lane->trace.get());
    }
    if (health_ != nullptr) {
      lane->engine->SetTimeoutExplainer([this](uint64_t id) { return health_->Explain(id); });
    }
    lanes_.push_back(std::move(lane));
  }
  for (auto& lane : lanes_) {
    LaneState* l = lane.get();
    l->thread = std::thread([this, l] { Run(*l); });
  }
}

namespace {

constexpr size_t kMaxBufferBytes = size_t{1} << 47;

bool Intersect(const void* a, const void* b, size_t bytes_a, size_t bytes_b) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return bytes_a > 0 && bytes_b > 0 && x < y + bytes_b && y < x + bytes_a;
}

}  // namespace

// One writes what the other reads or writes: they must not run at once.
bool ProgressLoop::Conflict(const OpState& a, const OpState& b) {
  const size_t na = a.count * DataTypeSize(a.type), nb = b.count * DataTypeSize(b.type);
  return Intersect(a.recv, b.recv, na, nb) || Intersect(a.recv, b.send, na, nb) ||
         Intersect(a.send, b.recv, na, nb);
}

absl::Status ProgressLoop::AwaitOverlapping(const OpState& op) {
  std::vector<std::shared_ptr<OpState>> earlier;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(flight_, [](const std::weak_ptr<OpState>& w) {
      auto s = w.lock();
      if (s == nullptr) return true;
      std::lock_guard<std::mutex> op_lock(s->mu);
      return s->done;
    });
    for (const auto& w : flight_) {
      auto s = w.lock();
      // The open group's operations have not started: Submit refuses those.
      if (s == nullptr || std::find(group_.begin(), group_.end(), s) != group_.end()) continue;
      if (Conflict(op, *s)) earlier.push_back(std::move(s));
    }
  }
  // Outside a group an operation on memory an earlier one still uses waits
  // for it, as a stream orders NCCL's: run together, the later would read
  // the earlier's input or have its result overwritten.
  for (const auto& s : earlier) {
    std::unique_lock<std::mutex> lock(s->mu);
    if (!s->cv.wait_until(lock, absl::ToChronoTime(op.deadline), [&] { return s->done; })) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "rank %d: this allreduce waited for allreduce %d, which uses the same memory, until "
          "its timeout",
          config_.rank, s->id));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAllreduceArguments(int rank, const void* send, const void* recv, size_t count,
                                     DataType type, ReduceOp op) {
  if (op != ReduceOp::kSum) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d: reduce op %d is not supported (sum only)", rank, static_cast<int>(op)));
  }
  if (DataTypeSize(type) == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: unknown data type %d", rank, static_cast<int>(type)));
  }
  if (count > 0 && (send == nullptr || recv == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: allreduce of %d elements with a null buffer", rank, count));
  }
  // No process addresses more than 2^47 bytes (x86-64 and AArch64 user
  // space): a larger count is a bug such as a negative int made size_t, and
  // its byte count may even wrap.
  if (count > kMaxBufferBytes / DataTypeSize(type)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d: allreduce of %d %s elements: more than the 2^47 bytes a buffer can have (a "
        "negative count converted to size_t?)",
        rank, count, DataTypeName(type)));
  }
  const size_t bytes = count * DataTypeSize(type);
  const auto* s = static_cast<const uint8_t*>(send);
  const auto* r = static_cast<const uint8_t*>(recv);
  if (count > 0 && s != r && s < r + bytes && r < s + bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: send and recv overlap without being the same buffer", rank));
  }
  return absl::OkStatus();
}

ProgressLoop::~ProgressLoop() { (void)Shutdown(absl::Seconds(10)); }

absl::StatusOr<std::shared_ptr<OpState>> ProgressLoop::Submit(const void* send, void* recv,
                                                              size_t count, DataType type,
                                                              ReduceOp op,
                                                              const AllreduceOptions& o,
                                                              bool blocking) {
  const int rank = config_.rank;
  if (absl::Status s = CheckAllreduceArguments(rank, send, recv, count, type, op); !s.ok()) {
    return s;
  }
  auto state = std::make_shared<OpState>();
  state->type = type;
  state->average = o.average;
  state->send = send;
  state->recv = recv;
  state->count = count;
  state->submitted = absl::Now();
  state->deadline =
      state->submitted + (o.timeout > absl::ZeroDuration() ? o.timeout : options_.timeout);
  if (absl::Status waited = AwaitOverlapping(*state); !waited.ok()) return waited;
  std::lock_guard<std::mutex> submitting(submit_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_.ok()) return closed_;
    if (blocking && in_group_) {
      // It would wait for GroupEnd, which its own caller cannot reach.
      return absl::FailedPreconditionError(absl::StrFormat(
          "rank %d: a blocking AllReduce inside a group (use AllReduceAsync)", rank));
    }
    for (const auto& other : group_) {
      if (Conflict(*state, *other)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "rank %d: allreduce %d of this group uses memory that this allreduce writes or "
            "reads: operations of one group run at once, so each buffer may appear once (as "
            "send and recv of one operation)",
            rank, other->id));
      }
    }
    state->id = ++next_id_;
    flight_.push_back(state);
    TellHealth();
    if (in_group_) {
      group_.push_back(state);
      return state;
    }
  }
  Enqueue(Prepare({state}));
  return state;
}

absl::Status ProgressLoop::GroupStart() {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_group_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("rank %d: GroupStart inside a group", config_.rank));
  }
  in_group_ = true;
  return absl::OkStatus();
}

absl::Status ProgressLoop::GroupEnd() {
  std::lock_guard<std::mutex> submitting(submit_mu_);
  std::vector<std::shared_ptr<OpState>> group;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_group_) {
      return absl::FailedPreconditionError(
          absl::StrFormat("rank %d: GroupEnd without GroupStart", config_.rank));
    }
    in_group_ = false;
    if (!closed_.ok()) {
      FinishGroup(closed_);
      return closed_;
    }
    group.swap(group_);
  }
  // Fuse runs of one type; a type change starts a new run.
  std::vector<std::shared_ptr<worker::WireOp>> wire;
  std::vector<std::shared_ptr<OpState>> run;
  auto end_run = [&] {
    if (run.empty()) return;
    for (auto& w : Prepare(run)) wire.push_back(std::move(w));
    run.clear();
  };
  for (auto& op : group) {
    if (!run.empty() && run.back()->type != op->type) end_run();
    run.push_back(op);
  }
  end_run();
  Enqueue(std::move(wire));
  return absl::OkStatus();
}

std::vector<std::shared_ptr<worker::WireOp>> ProgressLoop::Prepare(
    const std::vector<std::shared_ptr<OpState>>& run) const {
  return worker::PrepareWireOps(run, config_.elements, config_.slots, options_.fusion_bytes,
                                config_.world);
}

void ProgressLoop::Enqueue(std::vector<std::shared_ptr<worker::WireOp>> wire) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_.ok()) {
    // Closed while they were prepared: they end here, as a closed group's.
    const absl::Time now = absl::Now();
    for (auto& w : wire) {
      for (worker::Piece& p : w->pieces) p.op->Finish(closed_, now);
    }
    return;
  }
  worker::NumberWireOps(wire, op_seq_);
  for (auto& w : wire) {
    if (w->pieces.size() > 1) fused_ += w->pieces.size();
    for (auto& lane : lanes_) lane->pending.push_back(w);
  }
  cv_.notify_all();
}

void ProgressLoop::Abort(absl::Status reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_.ok()) closed_ = reason;
  for (auto& lane : lanes_) lane->abort = reason;
  FinishGroup(closed_);
  TellHealth();
  cv_.notify_all();
}

absl::Status ProgressLoop::Shutdown(absl::Duration timeout) {
  // One caller joins; a concurrent one waits for it.
  std::lock_guard<std::mutex> once(shutdown_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (joined_) return absl::OkStatus();
    if (closed_.ok()) closed_ = absl::FailedPreconditionError("the communicator is shut down");
    FinishGroup(closed_);
    drain_deadline_ = absl::Now() + timeout;
    stop_ = true;
    TellHealth();
    cv_.notify_all();
  }
  size_t left_running = 0;  // by the lane that had the most
  for (auto& lane : lanes_) {
    lane->thread.join();
    left_running = std::max(left_running, lane->left_running);
  }
  joined_ = true;
  if (absl::Status s = WriteTrace(); !s.ok()) return s;
  if (left_running > 0) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "rank %d: shutdown: %d operations still running after %s; they ended as Cancelled",
        config_.rank, left_running, absl::FormatDuration(timeout)));
  }
  return absl::OkStatus();
}

void ProgressLoop::FinishGroup(const absl::Status& status) {
  const absl::Time now = absl::Now();
  for (auto& op : group_) op->Finish(status, now);
  group_.clear();
}

void ProgressLoop::TellHealth() {
  if (health_ != nullptr) health_->Update(next_id_, stop_ || !closed_.ok());
}

void ProgressLoop::PublishedStats::Store(const CommunicatorStats& s) {
  const uint64_t counts[kCounts] = {s.operations,
                                    s.packets_sent,
                                    s.packets_received,
                                    s.bytes_sent,
                                    s.bytes_received,
                                    s.retransmissions,
                                    s.early_retransmissions,
                                    s.timeouts,
                                    s.congestion_signals,
                                    s.collisions,
                                    s.duplicate_results,
                                    s.malformed,
                                    s.foreign,
                                    s.fused_operations};
  for (int i = 0; i < kCounts; ++i) counts_[i].store(counts[i], std::memory_order_relaxed);
  operation_ns_.store(absl::ToInt64Nanoseconds(s.operation_time), std::memory_order_relaxed);
  min_rtt_ns_.store(absl::ToInt64Nanoseconds(s.min_rtt), std::memory_order_relaxed);
}

CommunicatorStats ProgressLoop::PublishedStats::Load() const {
  uint64_t c[kCounts];
  for (int i = 0; i < kCounts; ++i) c[i] = counts_[i].load(std::memory_order_relaxed);
  CommunicatorStats s;
  s.operations = c[0];
  s.packets_sent = c[1];
  s.packets_received = c[2];
  s.bytes_sent = c[3];
  s.bytes_received = c[4];
  s.retransmissions = c[5];
  s.early_retransmissions = c[6];
  s.timeouts = c[7];
  s.congestion_signals = c[8];
  s.collisions = c[9];
  s.duplicate_results = c[10];
  s.malformed = c[11];
  s.foreign = c[12];
  s.fused_operations = c[13];
  s.operation_time = absl::Nanoseconds(operation_ns_.load(std::memory_order_relaxed));
  s.min_rtt = absl::Nanoseconds(min_rtt_ns_.load(std::memory_order_relaxed));
  return s;
}

CommunicatorStats ProgressLoop::stats() const {
  CommunicatorStats sum;
  for (const auto& lane : lanes_) {
    const CommunicatorStats s = lane->stats.Load();
    sum.operations += s.operations;  // each operation is ended by one lane
    sum.packets_sent += s.packets_sent;
    sum.packets_received += s.packets_received;
    sum.bytes_sent += s.bytes_sent;
    sum.bytes_received += s.bytes_received;
    sum.retransmissions += s.retransmissions;
    sum.early_retransmissions += s.early_retransmissions;
    sum.timeouts += s.timeouts;
    sum.congestion_signals += s.congestion_signals;
    sum.collisions += s.collisions;
    sum.duplicate_results += s.duplicate_results;
    sum.malformed += s.malformed;
    sum.foreign += s.foreign;
    sum.operation_time += s.operation_time;
    if (s.min_rtt > absl::ZeroDuration() &&
        (sum.min_rtt == absl::ZeroDuration() || s.min_rtt < sum.min_rtt)) {
      sum.min_rtt = s.min_rtt;
    }
  }
  sum.fused_operations = fused_published_.load(std::memory_order_relaxed);
  return sum;
}

void ProgressLoop::Run(LaneState& lane) {
  worker::Engine& engine = *lane.engine;
  std::vector<std::shared_ptr<worker::WireOp>> incoming;
  while (true) {
    bool stopping = false;
    absl::Status abort;
    uint64_t fused = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (lane.pending.empty() && engine.Idle() && !stop_ && lane.abort.ok()) {
        // Nothing to run: sleep until there is, but keep draining the
        // transport now and then (late results, duplicates).
        cv_.wait_for(lock, absl::ToChronoNanoseconds(kIdleWake));
      }
      incoming.swap(lane.pending);
      stopping = stop_;
      abort = lane.abort;
      lane.abort = absl::OkStatus();
      fused = fused_;
    }
    const absl::Time now = absl::Now();
    if (!incoming.empty()) engine.Submit(std::move(incoming), now);
    incoming.clear();
    if (!abort.ok()) engine.FailAll(abort, now);
    if (stopping && (engine.Idle() || now >= drain_deadline_)) {
      lane.left_running = engine.operations();
      engine.FailAll(absl::CancelledError("the communicator shut down"), now);
      PublishStats(lane, fused);
      return;
    }
    if (health_ != nullptr && engine.Idle() != lane.idle) {
      lane.idle = engine.Idle();
      if (lane.idle) {
        health_->Idle();
      } else {
        health_->Busy(now);
      }
    }
    if (health_ != nullptr && !engine.Idle()) {
      health_->Watch(now);
      // A switch or the root the job needs died or refuses the job's
      // frames: no operation can complete, so none waits for its timeout.
      if (health_->faulted() && !lane.told) {
        lane.told = true;
        const absl::Status f = health_->fault();
        Abort(absl::Status(f.code(), absl::StrFormat("rank %d job %d: %s", config_.rank,
                                                     config_.job_id, f.message())));
      }
    }
    const bool any = engine.Poll(now);
    if (!engine.failed().ok() && !lane.told) {
      // The stream is out of step with the other ranks: every lane stops.
      lane.told = true;
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_.ok()) closed_ = engine.failed();
      for (auto& other : lanes_) {
        if (other.get() != &lane && other->abort.ok()) other->abort = engine.failed();
      }
      TellHealth();
      cv_.notify_all();
    }
    PublishStats(lane, fused);
    if (any) lane.last_work = now;
    if (health_ != nullptr && engine.results() != lane.results) {
      // The job's own results, not a stranger's frames: what tells the
      // health thread that drops it reads are not the job's (Health::Judge).
      lane.results = engine.results();
      health_->Answered(now);
    }
    // busy_poll 0 never polls, even if the wall clock steps back.
    const bool polling =
        options_.busy_poll > absl::ZeroDuration() && now - lane.last_work < options_.busy_poll;
    if (!any && !engine.Idle() && !polling) {
      lane.transport->WaitReadable(std::min(options_.scan_interval, kBusyWait));
    }
  }
}

void ProgressLoop::PublishStats(LaneState& lane, uint64_t fused) {
  lane.stats.Store(lane.engine->stats());
  // Fused operations are counted as lane 0 takes them.
  if (&lane == lanes_.front().get()) fused_published_.store(fused, std::memory_order_relaxed);
}

}  // namespace grid::api
