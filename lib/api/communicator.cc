// The communicator facade: checks what it is given, puts the parts together
// (progress loop, health, hosted root, rank 0's controller) and forwards.
#include "grid/communicator.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "api/controller.h"
#include "api/fence.h"
#include "api/health.h"
#include "api/progress.h"
#include "api/root_runner.h"
#include "grid/store.h"
#include "store/wait.h"
#include "transport/lanes.h"
#include "worker/op_state.h"

namespace grid {

using internal::OpState;

bool Work::Test() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->done;
}

absl::Status Work::Wait(absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(state_->mu);
  const auto done = [&] { return state_->done; };
  if (timeout == absl::InfiniteDuration()) {
    state_->cv.wait(lock, done);
  } else if (!state_->cv.wait_for(lock, absl::ToChronoNanoseconds(timeout), done)) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "allreduce %d still running after waiting %s", state_->id, absl::FormatDuration(timeout)));
  }
  return state_->status;
}

absl::Duration Work::elapsed() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->elapsed;
}

// The parts, in the order they are torn down: the progress loop first (its
// thread uses the health), the root and the store server last (other ranks
// may still need them while this one drains).
class Communicator::Impl {
 public:
  Impl(const host_config::WorkerConfig& config, std::vector<std::unique_ptr<Transport>> lanes,
       const EngineOptions& options, std::unique_ptr<api::Health> health,
       std::unique_ptr<api::RootRunner> root, std::unique_ptr<StoreServer> server)
      : server_(std::move(server)),
        root_(std::move(root)),
        health_(std::move(health)),
        progress_(config, std::move(lanes), options, health_.get()) {}

  ~Impl() { (void)Shutdown(absl::Seconds(10)); }

  absl::Status Shutdown(absl::Duration timeout) {
    absl::Status s = progress_.Shutdown(timeout);
    if (health_) health_->Stop();
    return s;
  }

  const host_config::WorkerConfig& config() const { return progress_.config(); }
  api::ProgressLoop& progress() { return progress_; }
  api::Health* health() { return health_.get(); }  // null without a store

 private:
  std::unique_ptr<StoreServer> server_;  // rank 0 serving the TCP store
  std::unique_ptr<api::RootRunner> root_;
  std::unique_ptr<api::Health> health_;  // with a store only
  api::ProgressLoop progress_;
};

// What the factory functions below may see of Communicator's insides.
struct internal::CommunicatorAccess {
  using Impl = Communicator::Impl;
  static std::unique_ptr<Communicator> Make(std::unique_ptr<Impl> impl) {
    return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
  }
};

namespace {

absl::Status ValidateWorker(const host_config::WorkerConfig& config) {
  if (config.token == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d config: token 0 is refused (docs/security.md)", config.rank));
  }
  if (config.world == 0 || config.rank >= config.world) {
    return absl::InvalidArgumentError(
        absl::StrFormat("config: rank %d of world %d", config.rank, config.world));
  }
  if (config.slots == 0 || config.slots > wire::kMaxSlots || config.elements == 0 ||
      config.elements > wire::kMaxElements || config.fan_in == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d config: slots %d, elements %d, fan_in %d: out of range",
                        config.rank, config.slots, config.elements, config.fan_in));
  }
  return absl::OkStatus();
}

absl::Status ValidateEngine(int rank, uint32_t slots, const EngineOptions& e) {
  constexpr size_t kMaxBatch = 1024;
  if (e.threads == 0 || e.threads > transport::kMaxLanes || e.threads > slots) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d options: engine.threads = %d; 1 to %d and at most the pool's %d "
                        "slots (each thread runs its own slots)",
                        rank, e.threads, transport::kMaxLanes, slots));
  }
  if (e.batch == 0 || e.batch > kMaxBatch) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d options: engine.batch = %d; 1 to %d frames", rank, e.batch, kMaxBatch));
  }
  if (e.busy_poll < absl::ZeroDuration() || e.busy_poll > absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d options: engine.busy_poll = %s; 0 to 1s", rank,
                        absl::FormatDuration(e.busy_poll)));
  }
  if (e.initial_window == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d options: engine.initial_window must be at least 1", rank));
  }
  if (!(e.ecn_gain > 0 && e.ecn_gain <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d options: engine.ecn_gain = %g; in (0, 1]", rank, e.ecn_gain));
  }
  if (e.rto <= absl::ZeroDuration() || e.max_rto < e.rto || e.min_rto <= absl::ZeroDuration() ||
      e.min_rto > e.max_rto || e.scan_interval <= absl::ZeroDuration() ||
      e.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d options: engine rto %s, max_rto %s, scan_interval %s and timeout %s must be "
        "positive (max_rto >= rto)",
        rank, absl::FormatDuration(e.rto), absl::FormatDuration(e.max_rto),
        absl::FormatDuration(e.scan_interval), absl::FormatDuration(e.timeout)));
  }
  return absl::OkStatus();
}

// A value the controller published, without the newline a file may end in.
// A store read that says what it waits for after a few seconds
// (store::AwaitKey).
store::KeyWait Waiting(const BootstrapOptions& b, std::string key, std::string what) {
  store::KeyWait w;
  w.key = std::move(key);
  w.who = absl::StrFormat("rank %d", b.rank);
  w.what = std::move(what);
  w.timeout = b.timeout;
  w.notice = b.notice;
  return w;
}

absl::StatusOr<std::string> ReadSpec(Store& store, const store::KeyWait& wait) {
  auto v = store::AwaitKey(store, wait);
  if (!v.ok()) return v.status();
  std::string spec = *std::move(v);
  while (!spec.empty() && (spec.back() == '\n' || spec.back() == ' ')) spec.pop_back();
  return spec;
}

absl::StatusOr<std::unique_ptr<Transport>> Open(const BootstrapOptions& b,
                                                const std::string& spec) {
  return b.transports != nullptr ? b.transports->Open(spec) : OpenTransport(spec);
}

absl::StatusOr<std::unique_ptr<api::RootRunner>> HostRoot(const CommunicatorOptions& o,
                                                          Store& store) {
  auto text = store::AwaitKey(store, Waiting(o.bootstrap, "grid/root", "the root's config"));
  if (!text.ok()) return text.status();
  auto config = host_config::ParseRootConfigJson(*text);
  if (!config.ok()) return config.status();
  std::string spec = o.root.transport;
  if (spec.empty()) {
    auto stored =
        ReadSpec(store, Waiting(o.bootstrap, "grid/root-transport", "the root's transport"));
    if (!stored.ok()) return stored.status();
    spec = *std::move(stored);
  }
  auto transport = Open(o.bootstrap, spec);
  if (!transport.ok()) return transport.status();
  return api::RootRunner::Start(*config, *std::move(transport), o.root.threads);
}

struct Parts {
  std::unique_ptr<api::RootRunner> root;
  std::unique_ptr<StoreServer> server;
};

// `lanes`: one transport per engine thread, or one to share between them.
absl::StatusOr<std::unique_ptr<Communicator>> Assemble(
    const host_config::WorkerConfig& config, std::vector<std::unique_ptr<Transport>> lanes,
    const CommunicatorOptions& options, Parts parts);

std::vector<std::unique_ptr<Transport>> One(std::unique_ptr<Transport> transport) {
  std::vector<std::unique_ptr<Transport>> v;
  v.push_back(std::move(transport));
  return v;
}

}  // namespace

void NoticeToStderr(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(
    const host_config::WorkerConfig& config, std::unique_ptr<Transport> transport,
    CommunicatorOptions options) {
  return Assemble(config, One(std::move(transport)), options, {});
}

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(
    const host_config::WorkerConfig& config, std::vector<std::unique_ptr<Transport>> lanes,
    CommunicatorOptions options) {
  if (options.engine.threads == 0) options.engine.threads = static_cast<uint32_t>(lanes.size());
  if (lanes.size() != options.engine.threads) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: %d transports for engine.threads = %d (one per thread)",
                        config.rank, lanes.size(), options.engine.threads));
  }
  return Assemble(config, std::move(lanes), options, {});
}

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(CommunicatorOptions options) {
  const BootstrapOptions& b = options.bootstrap;
  if (b.rank < 0) {
    return absl::InvalidArgumentError("options: bootstrap.rank is not set (GRID_RANK, RANK, ...)");
  }
  if (b.store.empty() && !b.open_store) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d options: no bootstrap.store (GRID_STORE or MASTER_ADDR) nor open_store", b.rank));
  }
  Parts parts;
  if (b.rank == 0 && !options.control.topology.empty()) {
    if (b.world_size < 1) {
      return absl::InvalidArgumentError(
          "rank 0 options: planning the job needs bootstrap.world_size (GRID_WORLD_SIZE, "
          "WORLD_SIZE, ...)");
    }
    auto served = api::ControlJob(b, options.control);
    if (!served.ok()) return served.status();
    parts.server = *std::move(served);
  }
  auto store = api::OpenBootstrapStore(b);
  if (!store.ok()) return store.status();
  store::KeyWait wait =
      Waiting(b, absl::StrFormat("grid/worker/%d", b.rank), "its config from the job's controller");
  // A rank the published job does not have waits for nothing: say so now.
  wait.give_up = [&b, s = store->get()]() -> absl::Status {
    if (b.rank == 0) return absl::OkStatus();
    auto first = s->Get("grid/worker/0", absl::ZeroDuration());
    if (!first.ok()) return absl::OkStatus();
    auto zero = host_config::ParseWorkerConfigJson(*first);
    if (!zero.ok() || b.rank < zero->world) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d: the job published in store %s (job %d) has %d workers, ranks 0-%d: this "
        "rank is not one of them (GRID_RANK/RANK, or a store holding another job?)",
        b.rank, s->Describe(), zero->job_id, zero->world, zero->world - 1));
  };
  auto text = store::AwaitKey(**store, wait);
  if (!text.ok()) return text.status();
  auto config = host_config::ParseWorkerConfigJson(*text);
  if (!config.ok()) return config.status();
  if (config->rank != b.rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: the store's config is for rank %d", b.rank, config->rank));
  }
  if (b.world_size >= 0 && config->world != b.world_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d: world size %d, but the job has %d workers", b.rank, b.world_size, config->world));
  }
  std::string spec = b.transport;
  if (spec.empty()) {
    auto stored = ReadSpec(**store, Waiting(b, absl::StrFormat("grid/transport/%d", b.rank),
                                            "its transport from the job's controller"));
    if (!stored.ok()) {
      return absl::Status(stored.status().code(),
                          absl::StrFormat("rank %d: no transport: set GRID_TRANSPORT (or "
                                          "bootstrap.transport), or publish one with "
                                          "grid-controller --udp-base-port/--memif-dir (%s)",
                                          b.rank, stored.status().message()));
    }
    spec = *std::move(stored);
  }
  auto transport = Open(b, spec);
  if (!transport.ok()) return transport.status();
  if (options.root.serve) {
    auto root = HostRoot(options, **store);
    if (!root.ok()) return root.status();
    parts.root = *std::move(root);
  }
  auto comm = Assemble(*config, One(*std::move(transport)), options, std::move(parts));
  if (!comm.ok() || !b.fence) return comm;
  if (absl::Status s = (*comm)->Fence(); !s.ok()) return s;
  return comm;
}

namespace {

absl::StatusOr<std::unique_ptr<Communicator>> Assemble(
    const host_config::WorkerConfig& config, std::vector<std::unique_ptr<Transport>> lanes,
    const CommunicatorOptions& options, Parts parts) {
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (lanes[k] == nullptr) {
      return absl::InvalidArgumentError(
          lanes.size() == 1
              ? absl::StrFormat("rank %d: no transport", config.rank)
              : absl::StrFormat("rank %d: no transport for thread %d", config.rank, k));
    }
  }
  if (absl::Status s = ValidateWorker(config); !s.ok()) return s;
  if (absl::Status s = ValidateEngine(config.rank, config.slots, options.engine); !s.ok()) return s;
  // One transport for several threads: a queue each where it has them,
  // else they share it.
  if (lanes.size() == 1 && options.engine.threads > 1) {
    auto own = transport::LanesOf(std::move(lanes.front()), options.engine.threads);
    if (!own.ok()) {
      return absl::Status(own.status().code(),
                          absl::StrFormat("rank %d: %d threads: %s", config.rank,
                                          options.engine.threads, own.status().message()));
    }
    lanes = *std::move(own);
  }
  std::unique_ptr<api::Health> health;
  if (!options.bootstrap.store.empty() || options.bootstrap.open_store) {
    auto reader = api::OpenBootstrapStore(options.bootstrap);
    if (!reader.ok()) return reader.status();
    auto writer = api::OpenBootstrapStore(options.bootstrap);
    if (!writer.ok()) return writer.status();
    health = std::make_unique<api::Health>(
        config.rank, config.world, *std::move(reader), *std::move(writer), options.engine.timeout,
        api::WatchedNodes{config.job_id, config.token, config.nodes});
  }
  using Access = internal::CommunicatorAccess;
  return Access::Make(std::make_unique<Access::Impl>(config, std::move(lanes), options.engine,
                                                     std::move(health), std::move(parts.root),
                                                     std::move(parts.server)));
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

absl::Status Communicator::AllReduce(const void* send, void* recv, size_t count, DataType type,
                                     ReduceOp op, const AllreduceOptions& options) {
  auto state = impl_->progress().Submit(send, recv, count, type, op, options, /*blocking=*/true);
  if (!state.ok()) return state.status();
  return Work(*std::move(state)).Wait();
}

absl::StatusOr<Work> Communicator::AllReduceAsync(const void* send, void* recv, size_t count,
                                                  DataType type, ReduceOp op,
                                                  const AllreduceOptions& options) {
  auto state = impl_->progress().Submit(send, recv, count, type, op, options, /*blocking=*/false);
  if (!state.ok()) return state.status();
  return Work(*std::move(state));
}

absl::Status Communicator::CheckArguments(const void* send, const void* recv, size_t count,
                                          DataType type, ReduceOp op) const {
  return api::CheckAllreduceArguments(impl_->config().rank, send, recv, count, type, op);
}

absl::Status Communicator::GroupStart() { return impl_->progress().GroupStart(); }
absl::Status Communicator::GroupEnd() { return impl_->progress().GroupEnd(); }
void Communicator::Abort(absl::Status reason) { impl_->progress().Abort(std::move(reason)); }
absl::Status Communicator::Shutdown(absl::Duration timeout) { return impl_->Shutdown(timeout); }
absl::Status Communicator::Fence() {
  auto nonce = api::FenceNonce();
  if (!nonce.ok()) return nonce.status();
  return api::RunFence(*this, impl_->config(), *nonce, impl_->health());
}

int Communicator::rank() const { return impl_->config().rank; }
int Communicator::world_size() const { return impl_->config().world; }
CommunicatorStats Communicator::stats() const { return impl_->progress().stats(); }

}  // namespace grid
