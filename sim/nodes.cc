#include "sim/nodes.h"

#include <utility>

#include "ns3/simulator.h"

namespace grid::sim {

namespace {

// Engine rounds one event runs before it yields to the rest of the
// simulation at the same instant: a bound, so a rank that always finds work
// cannot starve the others, and far above what one arrival needs.
constexpr int kRoundsPerWake = 64;

// Runs `poll` at this instant, after what is already scheduled for it:
// once, however many arrivals ask before it runs (`pending` says so).
template <typename Poll>
void ScheduleOnce(bool& pending, Poll poll) {
  if (pending) return;
  pending = true;
  ns3::Simulator::ScheduleNow(poll);
}

ns3::Time ToNs3(absl::Duration d) { return ns3::NanoSeconds(absl::ToInt64Nanoseconds(d)); }

}  // namespace

absl::StatusOr<std::unique_ptr<SimRank>> SimRank::Create(const host_config::WorkerConfig& config,
                                                         const EngineOptions& options,
                                                         Fabric& fabric) {
  std::unique_ptr<SimRank> rank(new SimRank(config, options));
  SimRank* self = rank.get();
  auto transport = fabric.Attach(config.node, [self] { self->Wake(); });
  if (!transport.ok()) return transport.status();
  rank->transport_ = *transport;
  rank->engine_ = std::make_unique<worker::Engine>(config, rank->transport_, options);
  return rank;
}

void SimRank::Start(DataType type, const void* send, void* recv, size_t count) {
  auto op = std::make_shared<internal::OpState>();
  op->id = ++next_id_;
  op->type = type;
  op->send = send;
  op->recv = recv;
  op->count = count;
  op->submitted = Now();
  op->deadline = op->submitted + options_.timeout;
  op_ = op;
  auto wire = worker::PrepareWireOps({op}, config_.elements, config_.slots, options_.fusion_bytes,
                                     config_.world);
  worker::NumberWireOps(wire, op_seq_);
  engine_->Submit(std::move(wire), op->submitted);
  Wake();
}

bool SimRank::done() const {
  if (op_ == nullptr) return false;
  std::lock_guard<std::mutex> lock(op_->mu);
  return op_->done;
}

absl::Status SimRank::status() const {
  if (op_ == nullptr) return absl::FailedPreconditionError("no operation was started");
  std::lock_guard<std::mutex> lock(op_->mu);
  if (!op_->done) return absl::UnavailableError("the operation has not ended");
  return op_->status;
}

absl::Duration SimRank::elapsed() const {
  if (op_ == nullptr) return absl::ZeroDuration();
  std::lock_guard<std::mutex> lock(op_->mu);
  return op_->elapsed;
}

void SimRank::Wake() {
  ScheduleOnce(poll_pending_, [this] { Poll(); });
}

void SimRank::Poll() {
  poll_pending_ = false;
  const absl::Time now = Now();
  int rounds = 0;
  while (rounds < kRoundsPerWake && engine_->Poll(now)) ++rounds;
  if (rounds == kRoundsPerWake) Wake();
  if (engine_->Idle()) return;
  // The loss scan runs every scan interval while an operation runs, as the
  // progress thread's WaitReadable(scan_interval) makes it.
  const absl::Time at = now + options_.scan_interval;
  // Pending: !IsExpired(), as IsRunning() is deprecated from ns-3 3.42.
  if (!timer_.IsExpired() && timer_at_ <= at) return;
  timer_.Cancel();
  timer_at_ = at;
  timer_ = ns3::Simulator::Schedule(ToNs3(options_.scan_interval), [this] { Wake(); });
}

absl::StatusOr<std::unique_ptr<SimRoot>> SimRoot::Create(const host_config::RootConfig& config,
                                                         Fabric& fabric) {
  std::unique_ptr<SimRoot> root(new SimRoot(config));
  SimRoot* self = root.get();
  auto transport = fabric.Attach(config.node, [self] { self->Wake(); });
  if (!transport.ok()) return transport.status();
  root->transport_ = *transport;
  root->engine_ = std::make_unique<root::RootEngine>(config, root->transport_);
  return root;
}

void SimRoot::Restart() { engine_ = std::make_unique<root::RootEngine>(config_, transport_); }

void SimRoot::Wake() {
  ScheduleOnce(poll_pending_, [this] { Poll(); });
}

void SimRoot::Poll() {
  poll_pending_ = false;
  int rounds = 0;
  while (rounds < kRoundsPerWake && engine_->Poll()) ++rounds;
  // More waits: come back at this instant, after the others had their turn.
  if (rounds == kRoundsPerWake) Wake();
}

}  // namespace grid::sim
