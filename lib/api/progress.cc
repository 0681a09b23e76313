#include "api/progress.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace grid::api {

using internal::OpState;

ProgressLoop::ProgressLoop(const control::WorkerConfig& config,
                           std::unique_ptr<Transport> transport, const EngineOptions& options,
                           Health* health)
    : config_(config),
      transport_(std::move(transport)),
      options_(options),
      health_(health),
      engine_(config, transport_.get(), options) {
  if (health_ != nullptr) {
    engine_.SetTimeoutExplainer([this](uint64_t id) { return health_->Explain(id); });
  }
  thread_ = std::thread([this] { Run(); });
}

ProgressLoop::~ProgressLoop() { (void)Shutdown(absl::Seconds(10)); }

absl::StatusOr<std::shared_ptr<OpState>> ProgressLoop::Submit(const void* send, void* recv,
                                                              size_t count, DataType type,
                                                              ReduceOp op,
                                                              const AllreduceOptions& o,
                                                              bool blocking) {
  const int rank = config_.rank;
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
  const size_t bytes = count * DataTypeSize(type);
  const auto* s = static_cast<const uint8_t*>(send);
  auto* r = static_cast<uint8_t*>(recv);
  if (count > 0 && s != r && s < r + bytes && r < s + bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: send and recv overlap without being the same buffer", rank));
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
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_.ok()) return closed_;
  if (blocking && in_group_) {
    // It would wait for GroupEnd, which its own caller cannot reach.
    return absl::FailedPreconditionError(
        absl::StrFormat("rank %d: a blocking AllReduce inside a group (use AllReduceAsync)", rank));
  }
  state->id = ++next_id_;
  TellHealth();
  if (in_group_) {
    group_.push_back(state);
  } else {
    std::vector<std::shared_ptr<OpState>> run = {state};
    QueueRun(run);
    cv_.notify_one();
  }
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
  // Fuse runs of one type; a type change starts a new run.
  std::vector<std::shared_ptr<OpState>> run;
  for (auto& op : group_) {
    if (!run.empty() && run.back()->type != op->type) QueueRun(run);
    run.push_back(op);
  }
  QueueRun(run);
  group_.clear();
  cv_.notify_one();
  return absl::OkStatus();
}

void ProgressLoop::QueueRun(std::vector<std::shared_ptr<OpState>>& run) {
  if (run.empty()) return;
  auto wire =
      worker::PrepareWireOps(run, config_.elements, config_.slots, options_.fusion_bytes, op_seq_);
  for (auto& w : wire) {
    if (w->pieces.size() > 1) fused_ += w->pieces.size();
    pending_.push_back(std::move(w));
  }
  run.clear();
}

void ProgressLoop::Abort(absl::Status reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_.ok()) closed_ = reason;
  abort_ = std::move(reason);
  FinishGroup(closed_);
  TellHealth();
  cv_.notify_one();
}

absl::Status ProgressLoop::Shutdown(absl::Duration timeout) {
  // One caller joins; a concurrent one waits for it.
  std::lock_guard<std::mutex> once(shutdown_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return absl::OkStatus();
    if (closed_.ok()) closed_ = absl::FailedPreconditionError("the communicator is shut down");
    FinishGroup(closed_);
    drain_deadline_ = absl::Now() + timeout;
    stop_ = true;
    TellHealth();
    cv_.notify_one();
  }
  thread_.join();
  if (left_running_ > 0) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "rank %d: shutdown: %d operations still running after %s; they ended as Cancelled",
        config_.rank, left_running_, absl::FormatDuration(timeout)));
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

CommunicatorStats ProgressLoop::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

void ProgressLoop::Run() {
  std::vector<std::unique_ptr<worker::WireOp>> incoming;
  while (true) {
    bool stopping = false;
    absl::Status abort;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (pending_.empty() && engine_.Idle() && !stop_ && abort_.ok()) {
        // Nothing to run: sleep until there is, but keep draining the
        // transport now and then (late results, duplicates).
        cv_.wait_for(lock, absl::ToChronoNanoseconds(kIdleWake));
      }
      incoming.swap(pending_);
      stopping = stop_;
      abort = abort_;
      abort_ = absl::OkStatus();
      engine_fused_ = fused_;
    }
    const absl::Time now = absl::Now();
    if (!incoming.empty()) engine_.Submit(std::move(incoming));
    incoming.clear();
    if (!abort.ok()) engine_.FailAll(abort, now);
    if (stopping && (engine_.Idle() || now >= drain_deadline_)) {
      left_running_ = engine_.operations();
      engine_.FailAll(absl::CancelledError("the communicator shut down"), now);
      PublishStats();
      return;
    }
    if (health_ != nullptr && !engine_.Idle()) health_->Watch(now);
    const bool any = engine_.Poll(now);
    if (!engine_.failed().ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_.ok()) closed_ = engine_.failed();
      TellHealth();
    }
    PublishStats();
    if (!any && !engine_.Idle()) {
      transport_->WaitReadable(std::min(options_.scan_interval, kBusyWait));
    }
  }
}

void ProgressLoop::PublishStats() {
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = engine_.stats();
  stats_.fused_operations = engine_fused_;
}

}  // namespace grid::api
