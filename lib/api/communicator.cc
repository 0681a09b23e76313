#include "grid/communicator.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grid/planner.h"
#include "grid/store.h"
#include "grid/topology.h"
#include "root/engine.h"
#include "worker/engine.h"
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

// The job's root in a rank's process: its engine on its own thread and
// transport, until the communicator goes.
class RootRunner {
 public:
  RootRunner(const control::RootConfig& config, std::unique_ptr<Transport> transport)
      : transport_(std::move(transport)), engine_(config, transport_.get()) {
    thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_relaxed)) {
        if (!engine_.Poll()) transport_->WaitReadable(absl::Milliseconds(2));
      }
    });
  }
  ~RootRunner() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::unique_ptr<Transport> transport_;
  root::RootEngine engine_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class Communicator::Impl {
 public:
  static constexpr absl::Duration kHeartbeat = absl::Milliseconds(250);

  Impl(const control::WorkerConfig& config, std::unique_ptr<Transport> transport,
       CommunicatorOptions options, std::unique_ptr<Store> store,
       std::unique_ptr<Store> heartbeat_store)
      : config_(config),
        transport_(std::move(transport)),
        options_(options),
        engine_(config, transport_.get(), options),
        store_(std::move(store)),
        heartbeat_store_(std::move(heartbeat_store)) {
    if (store_) engine_.SetTimeoutExplainer([this](uint64_t id) { return Explain(id); });
    thread_ = std::thread([this] { Run(); });
    if (store_) {
      // Its own thread: every rank's progress thread may be busy explaining
      // the same timeout, and must not look dead to the others meanwhile.
      heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
    }
  }

  ~Impl() { (void)Shutdown(absl::Seconds(10)); }

  absl::StatusOr<std::shared_ptr<OpState>> Submit(const void* send, void* recv, size_t count,
                                                  DataType type, ReduceOp op,
                                                  const AllreduceOptions& o, bool blocking) {
    if (op != ReduceOp::kSum) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rank %d: reduce op %d is not supported (sum only)", config_.rank, static_cast<int>(op)));
    }
    if (DataTypeSize(type) == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("rank %d: unknown data type %d", config_.rank, static_cast<int>(type)));
    }
    if (count > 0 && (send == nullptr || recv == nullptr)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rank %d: allreduce of %d elements with a null buffer", config_.rank, count));
    }
    const size_t bytes = count * DataTypeSize(type);
    const auto* s = static_cast<const uint8_t*>(send);
    auto* r = static_cast<uint8_t*>(recv);
    if (count > 0 && s != r && s < r + bytes && r < s + bytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rank %d: send and recv overlap without being the same buffer", config_.rank));
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
      return absl::FailedPreconditionError(absl::StrFormat(
          "rank %d: a blocking AllReduce inside a group (use AllReduceAsync)", config_.rank));
    }
    state->id = ++next_id_;
    if (in_group_) {
      group_.push_back(state);
    } else {
      auto wire = worker::PrepareWireOps({state}, config_.elements, config_.slots,
                                         options_.fusion_bytes, op_seq_);
      for (auto& w : wire) pending_.push_back(std::move(w));
      cv_.notify_one();
    }
    return state;
  }

  absl::Status GroupStart() {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_group_) {
      return absl::FailedPreconditionError(
          absl::StrFormat("rank %d: GroupStart inside a group", config_.rank));
    }
    in_group_ = true;
    return absl::OkStatus();
  }

  absl::Status GroupEnd() {
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
    auto flush = [&] {
      if (run.empty()) return;
      auto wire = worker::PrepareWireOps(run, config_.elements, config_.slots,
                                         options_.fusion_bytes, op_seq_);
      for (auto& w : wire) {
        if (w->pieces.size() > 1) fused_ += w->pieces.size();
        pending_.push_back(std::move(w));
      }
      run.clear();
    };
    for (auto& op : group_) {
      if (!run.empty() && run.back()->type != op->type) flush();
      run.push_back(op);
    }
    flush();
    group_.clear();
    cv_.notify_one();
    return absl::OkStatus();
  }

  void Abort(absl::Status reason) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_.ok()) closed_ = reason;
    abort_ = std::move(reason);
    FinishGroup(closed_);
    cv_.notify_one();
  }

  absl::Status Shutdown(absl::Duration timeout) {
    // One caller joins; a concurrent one waits for it.
    std::lock_guard<std::mutex> once(shutdown_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!thread_.joinable()) return absl::OkStatus();
      if (closed_.ok()) closed_ = absl::FailedPreconditionError("the communicator is shut down");
      FinishGroup(closed_);
      drain_deadline_ = absl::Now() + timeout;
      stop_ = true;
      cv_.notify_one();
    }
    thread_.join();
    heartbeat_cv_.notify_all();
    if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
    return absl::OkStatus();
  }

  // Operations still held by an open group end with `status` (under mu_).
  void FinishGroup(const absl::Status& status) {
    const absl::Time now = absl::Now();
    for (auto& op : group_) op->Finish(status, now);
    group_.clear();
  }

  CommunicatorStats stats() const {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }

  const control::WorkerConfig& config() const { return config_; }
  void KeepStoreServer(std::unique_ptr<StoreServer> server) { store_server_ = std::move(server); }
  void KeepRoot(std::unique_ptr<RootRunner> root) { root_ = std::move(root); }

 private:
  void Run() {
    std::vector<std::unique_ptr<worker::WireOp>> incoming;
    while (true) {
      bool stopping = false;
      absl::Status abort;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (pending_.empty() && engine_.Idle() && !stop_ && abort_.ok()) {
          // Nothing to run: sleep until there is, but keep draining the
          // transport now and then (late results, duplicates).
          cv_.wait_for(lock, std::chrono::milliseconds(5));
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
        engine_.FailAll(absl::CancelledError("the communicator shut down"), now);
        PublishStats();
        return;
      }
      const bool any = engine_.Poll(now);
      if (!engine_.failed().ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (closed_.ok()) closed_ = engine_.failed();
      }
      PublishStats();
      if (!any && !engine_.Idle()) {
        transport_->WaitReadable(std::min(options_.scan_interval, absl::Microseconds(200)));
      }
    }
  }

  // With a store: every 250 ms, "grid/heartbeat/<rank>" = "<operations
  // submitted> <unix ms>". A timeout reads every rank's, to name the ranks
  // that did not contribute.
  // "<operations submitted> <unix ms> <state>": state is "run", or "end"
  // once the communicator has failed or shut down, so a rank that ended on
  // its own (say, by the same timeout) is not taken for a dead one.
  void HeartbeatLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      const uint64_t submitted = next_id_;
      const bool ended = stop_ || !closed_.ok();
      lock.unlock();
      // Its own store connection, so a slow store never holds up Explain.
      (void)heartbeat_store_->Set(
          absl::StrFormat("grid/heartbeat/%d", config_.rank),
          absl::StrFormat("%d %d %s", submitted, absl::ToUnixMillis(absl::Now()),
                          ended ? "end" : "run"));
      lock.lock();
      if (stop_) return;
      heartbeat_cv_.wait_for(lock, absl::ToChronoMilliseconds(kHeartbeat), [&] { return stop_; });
    }
  }

  // Reads every rank's heartbeat twice, more than a period apart: a rank
  // whose heartbeat did not move (and did not say it ended) is dead or hung;
  // one that has not yet submitted the operation is behind.
  std::string Explain(uint64_t op_id) {
    struct Beat {
      uint64_t submitted = 0;
      int64_t at = -1;
      bool ended = false;
      bool ok = false;
    };
    auto read = [&](int r) {
      Beat b;
      auto v = store_->Get(absl::StrFormat("grid/heartbeat/%d", r), absl::Milliseconds(50));
      char state[8] = {};
      b.ok = v.ok() && std::sscanf(v->c_str(), "%lu %ld %7s", &b.submitted, &b.at, state) == 3;
      b.ended = std::string(state) == "end";
      return b;
    };
    std::vector<Beat> first(config_.world);
    for (int r = 0; r < config_.world; ++r) {
      if (r != config_.rank) first[r] = read(r);
    }
    // Within the timeout, so the error still comes within twice it.
    absl::SleepFor(std::min(kHeartbeat * 4, options_.timeout * 0.4));
    std::vector<std::string> silent, behind;
    for (int r = 0; r < config_.world; ++r) {
      if (r == config_.rank) continue;
      const Beat b = read(r);
      if (!b.ok || (b.at == first[r].at && !b.ended)) {
        silent.push_back(std::to_string(r));
      } else if (b.submitted < op_id) {
        behind.push_back(absl::StrFormat("%d (at allreduce %d)", r, b.submitted));
      }
    }
    if (silent.empty() && behind.empty()) {
      return "every rank is alive and has issued it, so its chunks were lost on the way, or an "
             "aggregation switch or the root lost its state (restarted) meanwhile";
    }
    std::string out = "ranks that did not contribute:";
    if (!silent.empty()) out += " not responding " + absl::StrJoin(silent, ", ");
    if (!behind.empty()) {
      out += (silent.empty() ? " not yet issued it " : "; not yet issued it ") +
             absl::StrJoin(behind, ", ");
    }
    return out;
  }

  void PublishStats() {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_ = engine_.stats();
    stats_.fused_operations = engine_fused_;
  }

  const control::WorkerConfig config_;
  std::unique_ptr<Transport> transport_;
  const CommunicatorOptions options_;
  worker::Engine engine_;  // progress thread only

  std::mutex mu_;
  std::mutex shutdown_mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<worker::WireOp>> pending_;
  std::vector<std::shared_ptr<OpState>> group_;
  bool in_group_ = false;
  uint64_t next_id_ = 0;
  uint32_t op_seq_ = 0;
  uint64_t fused_ = 0;
  bool stop_ = false;
  absl::Time drain_deadline_ = absl::InfiniteFuture();
  absl::Status abort_;
  absl::Status closed_;

  uint64_t engine_fused_ = 0;
  std::unique_ptr<Store> store_;               // optional: heartbeats are read here
  std::unique_ptr<Store> heartbeat_store_;     // and written here
  std::unique_ptr<StoreServer> store_server_;  // rank 0 serving the TCP store
  std::unique_ptr<RootRunner> root_;           // the job's root, when this rank hosts it
  std::condition_variable heartbeat_cv_;
  std::thread heartbeat_thread_;
  mutable std::mutex stats_mu_;
  CommunicatorStats stats_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(
    const control::WorkerConfig& config, std::unique_ptr<Transport> transport,
    CommunicatorOptions options) {
  std::unique_ptr<Store> store, heartbeat_store;
  if (!options.store.empty()) {
    auto opened = OpenStore(options.store);
    auto second = OpenStore(options.store);
    if (!opened.ok()) return opened.status();
    if (!second.ok()) return second.status();
    store = *std::move(opened);
    heartbeat_store = *std::move(second);
  }
  if (transport == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat("rank %d: no transport", config.rank));
  }
  if (config.token == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d config: token 0 is refused (docs/security.md)", config.rank));
  }
  if (config.world == 0 || config.rank >= config.world) {
    return absl::InvalidArgumentError(
        absl::StrFormat("config: rank %d of world %d", config.rank, config.world));
  }
  if (config.slots == 0 || config.slots > 65536 || config.elements == 0 ||
      config.elements > wire::kMaxElements || config.fan_in == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d config: slots %d, elements %d, fan_in %d: out of range",
                        config.rank, config.slots, config.elements, config.fan_in));
  }
  if (options.batch == 0 || options.batch > 1024) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d options: batch = %d; 1 to 1024 frames", config.rank, options.batch));
  }
  if (options.initial_window == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d options: initial_window must be at least 1", config.rank));
  }
  if (options.rto <= absl::ZeroDuration() || options.max_rto < options.rto ||
      options.min_rto <= absl::ZeroDuration() || options.min_rto > options.max_rto ||
      options.scan_interval <= absl::ZeroDuration() || options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d options: rto %s, max_rto %s, scan_interval %s and timeout %s must be positive "
        "(max_rto >= rto)",
        config.rank, absl::FormatDuration(options.rto), absl::FormatDuration(options.max_rto),
        absl::FormatDuration(options.scan_interval), absl::FormatDuration(options.timeout)));
  }
  return std::unique_ptr<Communicator>(new Communicator(std::make_unique<Impl>(
      config, std::move(transport), options, std::move(store), std::move(heartbeat_store))));
}

namespace {

// Rank 0 as the controller: plans the job and publishes it. Serves the store
// when it is tcp:... (the server lives as long as the communicator).
absl::StatusOr<std::unique_ptr<StoreServer>> ControlJob(const CommunicatorOptions& o) {
  std::unique_ptr<StoreServer> server;
  if (o.store.rfind("tcp:", 0) == 0) {
    int port = 0;
    if (!absl::SimpleAtoi(o.store.substr(o.store.rfind(':') + 1), &port)) {
      return absl::InvalidArgumentError(absl::StrFormat("store \"%s\": no port", o.store));
    }
    auto s = ServeTcpStore(port);
    if (!s.ok()) return s.status();
    server = *std::move(s);
  }
  auto store = OpenStore(o.store);
  if (!store.ok()) return store.status();
  auto topo = topology::LoadTopology(o.topology);
  if (!topo.ok()) return topo.status();
  auto job = planner::MakeJob(
      *topo, o.world_size, o.root.empty() ? std::nullopt : std::optional<std::string>(o.root), 1);
  if (!job.ok()) return job.status();
  auto created = planner::PlannerRegistry::WithBuiltins().Create(o.planner);
  if (!created.ok()) return created.status();
  auto plan = (*created)->Plan(*topo, *job);
  if (!plan.ok()) return plan.status();
  control::JobParams params;
  params.job_id = o.job_id;
  params.token = o.token;
  if (params.token == 0) {
    auto token = control::NewToken();
    if (!token.ok()) return token.status();
    params.token = *token;
  }
  params.slots = o.slots;
  params.elements = o.elements;
  if (absl::Status s = control::PublishJob(*topo, *plan, params, **store); !s.ok()) return s;
  return server;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(CommunicatorOptions options) {
  if (options.rank < 0) {
    return absl::InvalidArgumentError("options: rank is not set (GRID_RANK, RANK, ...)");
  }
  if (options.store.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d options: no store (GRID_STORE or MASTER_ADDR)", options.rank));
  }
  std::unique_ptr<StoreServer> server;
  if (options.rank == 0 && !options.topology.empty()) {
    if (options.world_size < 1) {
      return absl::InvalidArgumentError(
          "rank 0 options: planning the job needs world_size (GRID_WORLD_SIZE, WORLD_SIZE, ...)");
    }
    auto served = ControlJob(options);
    if (!served.ok()) return served.status();
    server = *std::move(served);
  }
  auto store = OpenStore(options.store);
  if (!store.ok()) return store.status();
  auto text =
      (*store)->Get(absl::StrFormat("grid/worker/%d", options.rank), options.bootstrap_timeout);
  if (!text.ok()) return text.status();
  auto config = control::ParseWorkerConfigJson(*text);
  if (!config.ok()) return config.status();
  if (config->rank != options.rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: the store's config is for rank %d", options.rank, config->rank));
  }
  if (options.world_size >= 0 && config->world != options.world_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: world size %d, but the job has %d workers", options.rank,
                        options.world_size, config->world));
  }
  std::string spec = options.transport;
  if (spec.empty()) {
    auto stored = (*store)->Get(absl::StrFormat("grid/transport/%d", options.rank),
                                options.bootstrap_timeout);
    if (!stored.ok()) {
      return absl::Status(stored.status().code(),
                          absl::StrFormat("rank %d: no transport: set GRID_TRANSPORT (or "
                                          "options.transport), or publish one with grid-controller "
                                          "--udp-base-port/--memif-dir (%s)",
                                          options.rank, stored.status().message()));
    }
    spec = *stored;
    while (!spec.empty() && (spec.back() == '\n' || spec.back() == ' ')) spec.pop_back();
  }
  auto transport = OpenTransport(spec);
  if (!transport.ok()) return transport.status();
  std::unique_ptr<RootRunner> root;
  if (options.serve_root) {
    auto root_config = (*store)->Get("grid/root", options.bootstrap_timeout);
    if (!root_config.ok()) return root_config.status();
    auto parsed = control::ParseRootConfigJson(*root_config);
    if (!parsed.ok()) return parsed.status();
    std::string root_spec = options.root_transport;
    if (root_spec.empty()) {
      auto stored = (*store)->Get("grid/root-transport", options.bootstrap_timeout);
      if (!stored.ok()) return stored.status();
      root_spec = *stored;
      while (!root_spec.empty() && (root_spec.back() == '\n' || root_spec.back() == ' ')) {
        root_spec.pop_back();
      }
    }
    auto root_transport = OpenTransport(root_spec);
    if (!root_transport.ok()) return root_transport.status();
    root = std::make_unique<RootRunner>(*parsed, *std::move(root_transport));
  }
  auto comm = Create(*config, *std::move(transport), options);
  if (comm.ok() && server) (*comm)->impl_->KeepStoreServer(std::move(server));
  if (comm.ok() && root) (*comm)->impl_->KeepRoot(std::move(root));
  return comm;
}

namespace {

const char* FirstEnv(std::initializer_list<const char*> names, const char** which) {
  for (const char* n : names) {
    if (const char* v = std::getenv(n); v != nullptr && *v != '\0') {
      *which = n;
      return v;
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<CommunicatorOptions> Communicator::OptionsFromEnvironment(CommunicatorOptions o) {
  const char* which = nullptr;
  auto integer = [&](std::initializer_list<const char*> names, int64_t lo, int64_t hi,
                     int64_t* out) -> absl::Status {
    const char* v = FirstEnv(names, &which);
    if (v == nullptr) return absl::OkStatus();
    int64_t x = 0;
    if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "environment %s=\"%s\": expected an integer in [%d, %d]", which, v, lo, hi));
    }
    *out = x;
    return absl::OkStatus();
  };
  int64_t rank = o.rank, world = o.world_size, timeout_ms = -1, window = -1, rto_us = -1;
  for (const absl::Status& s :
       {integer({"GRID_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, 0, 65534, &rank),
        integer({"GRID_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, 1, 65535,
                &world),
        integer({"GRID_TIMEOUT_MS"}, 1, int64_t{1} << 40, &timeout_ms),
        integer({"GRID_WINDOW"}, 0, 65536, &window),
        integer({"GRID_RTO_US"}, 1, int64_t{1} << 40, &rto_us)}) {
    if (!s.ok()) return s;
  }
  o.rank = static_cast<int>(rank);
  o.world_size = static_cast<int>(world);
  if (timeout_ms > 0) o.timeout = absl::Milliseconds(timeout_ms);
  if (window >= 0) o.window = static_cast<uint32_t>(window);
  if (rto_us > 0) {
    o.rto = absl::Microseconds(rto_us);
    o.min_rto = std::min(o.min_rto, o.rto);
    o.max_rto = std::max(o.max_rto, o.rto);
  }
  if (const char* v = FirstEnv({"GRID_STORE"}, &which)) {
    o.store = v;
  } else if (const char* addr = FirstEnv({"MASTER_ADDR"}, &which)) {
    int64_t port = 29500;
    if (absl::Status s = integer({"MASTER_PORT"}, 1, 65534, &port); !s.ok()) return s;
    o.store = absl::StrFormat("tcp:%s:%d", addr, port + 1);
  }
  if (const char* v = FirstEnv({"GRID_TRANSPORT"}, &which)) o.transport = v;
  if (const char* v = FirstEnv({"GRID_TOPOLOGY"}, &which)) o.topology = v;
  if (const char* v = FirstEnv({"GRID_PLANNER"}, &which)) o.planner = v;
  if (const char* v = FirstEnv({"GRID_ROOT"}, &which)) o.root = v;
  int64_t root_rank = -1;
  if (absl::Status s = integer({"GRID_ROOT_RANK"}, 0, 65534, &root_rank); !s.ok()) return s;
  if (root_rank >= 0 && root_rank == o.rank) o.serve_root = true;
  return o;
}

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::FromEnvironment(
    CommunicatorOptions base) {
  auto options = OptionsFromEnvironment(std::move(base));
  if (!options.ok()) return options.status();
  return Create(*std::move(options));
}

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

absl::Status Communicator::AllReduce(const void* send, void* recv, size_t count, DataType type,
                                     ReduceOp op, const AllreduceOptions& options) {
  auto state = impl_->Submit(send, recv, count, type, op, options, /*blocking=*/true);
  if (!state.ok()) return state.status();
  return Work(*std::move(state)).Wait();
}

absl::StatusOr<Work> Communicator::AllReduceAsync(const void* send, void* recv, size_t count,
                                                  DataType type, ReduceOp op,
                                                  const AllreduceOptions& options) {
  auto state = impl_->Submit(send, recv, count, type, op, options, /*blocking=*/false);
  if (!state.ok()) return state.status();
  return Work(*std::move(state));
}

absl::Status Communicator::GroupStart() { return impl_->GroupStart(); }
absl::Status Communicator::GroupEnd() { return impl_->GroupEnd(); }
void Communicator::Abort(absl::Status reason) { impl_->Abort(std::move(reason)); }
absl::Status Communicator::Shutdown(absl::Duration timeout) { return impl_->Shutdown(timeout); }
int Communicator::rank() const { return impl_->config().rank; }
int Communicator::world_size() const { return impl_->config().world; }
CommunicatorStats Communicator::stats() const { return impl_->stats(); }

}  // namespace grid
