// A whole job in one process for tests: a planned topology, the reference
// switch pipelines on a loopback fabric, the root engine on its own thread,
// and one Communicator per rank.
#ifndef GRID_TESTS_SUPPORT_CLUSTER_H_
#define GRID_TESTS_SUPPORT_CLUSTER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/store.h"
#include "grid/topology.h"
#include "gtest/gtest.h"
#include "node/status.h"
#include "root/engine.h"
#include "root/lanes.h"
#include "support/loopback.h"

namespace grid::testing {

struct ClusterOptions {
  std::string topology = "testbed";
  std::string planner = "grid";
  planner::PlannerOptions planner_options;
  int workers = 8;
  uint32_t slots = 64;
  uint16_t elements = 64;
  transport::LinkFaults impairment;  // per hop (seeded 7 here, so runs repeat)
  CommunicatorOptions comm;
  // Per rank, comm.engine.threads otherwise (the ranks of a job may differ).
  std::vector<uint32_t> threads;
  // Ranks with several threads get a fabric queue per thread
  // (LoopbackFabric::AttachLanes) instead of sharing one.
  bool queue_per_thread = false;
  // The root's threads (root/lanes.h), each on its own fabric queue
  // (LoopbackFabric::AttachLanes); above 1, RestartRoot is not available.
  uint32_t root_threads = 1;
  // The switches and the root write their status into Rejoin's store
  // (ReportNodes), as grid-switch and grid-root do from a store; false: as
  // nodes started from files, which write none.
  bool report_nodes = true;
};

class Cluster {
 public:
  explicit Cluster(ClusterOptions o) : options_(o) {
    topo_ = *topology::GenerateTopology(o.topology);
    auto job = planner::MakeJob(topo_, o.workers, std::nullopt, 1);
    auto planner = planner::PlannerRegistry::WithBuiltins().Create(o.planner, o.planner_options);
    plan_ = *(*planner)->Plan(topo_, *job);
    host_config::JobParams params;
    params.job_id = 3;
    params.token = 0x5eed;
    params.slots = o.slots;
    params.elements = o.elements;
    auto switches = control::BuildSwitchConfigs(topo_, plan_, params);
    EXPECT_TRUE(switches.ok()) << switches.status();
    switches_ = *switches;
    workers_ = *control::BuildWorkerConfigs(topo_, plan_, params);
    root_config_ = *control::BuildRootConfig(topo_, plan_, params);
    transport::LinkFaults faults = o.impairment;
    faults.seed = 7;
    fabric_ = *testing::LoopbackFabric::Create(topo_, *switches, faults);
    if (o.root_threads > 1) {
      auto lanes = root::RootLanes::Start(root_config_,
                                          *fabric_->AttachLanes(root_config_.node, o.root_threads),
                                          absl::Milliseconds(2));
      EXPECT_TRUE(lanes.ok()) << lanes.status();
      root_lanes_ = *std::move(lanes);
    } else {
      root_transport_ = *fabric_->Attach(root_config_.node);
      root_ =
          std::make_unique<root::RootEngine>(root_config_, root_transport_.get(), 32, &root_drops_);
      root_thread_ = std::thread([this] {
        while (!stop_.load()) {
          bool any;
          {
            std::lock_guard<std::mutex> lock(root_mu_);
            any = root_->Poll();
          }
          if (!any) root_transport_->WaitReadable(absl::Milliseconds(2));
        }
      });
    }
    for (int r = 0; r < o.workers; ++r) {
      CommunicatorOptions c = o.comm;
      if (static_cast<size_t>(r) < o.threads.size()) c.engine.threads = o.threads[r];
      auto comm =
          c.engine.threads > 1 && o.queue_per_thread
              ? Communicator::Create(workers_[r],
                                     *fabric_->AttachLanes(workers_[r].node, c.engine.threads), c)
              : Communicator::Create(workers_[r], *fabric_->Attach(workers_[r].node), c);
      EXPECT_TRUE(comm.ok()) << comm.status();
      comms_.push_back(std::move(*comm));
    }
  }

  ~Cluster() {
    comms_.clear();
    reporters_.clear();
    StopRoot();
  }

  // Stops the root's threads (so its counters can be read).
  root::RootStats StopRoot() {
    if (root_lanes_) {
      root_lanes_->Stop();
      return root_lanes_->stats();
    }
    stop_.store(true);
    if (root_thread_.joinable()) root_thread_.join();
    return root_->stats();
  }

  int size() const { return static_cast<int>(comms_.size()); }
  Communicator& comm(int rank) { return *comms_[rank]; }
  // Runs fn(rank) on one thread per rank.
  void Run(const std::function<void(int)>& fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r) threads.emplace_back([&, r] { fn(r); });
    for (auto& t : threads) t.join();
  }
  // Kills a rank: its communicator aborts and the fabric cuts it off.
  void Kill(int rank) {
    fabric_->Disconnect(workers_[rank].node);
    comms_[rank]->Abort();
  }
  // The ranks run again, each as a new program would: through the
  // bootstrap path (Communicator::Create(options)), their configs in a file
  // store at `store_dir` and their transports on this fabric, whose
  // switches and root keep what they hold. The old communicators go first.
  // Returns each rank's Create status; comm(r) is the new one where it is ok.
  // `edit` changes the configs published for the ranks (say, a token the
  // switches do not hold: a job published again without reloading them).
  std::vector<absl::Status> Rejoin(
      CommunicatorOptions c, const std::string& store_dir,
      const std::function<void(host_config::WorkerConfig&)>& edit = nullptr) {
    comms_.clear();
    comms_.resize(workers_.size());
    std::vector<absl::Status> status(workers_.size());
    auto store = OpenStore("file:" + store_dir);
    if (!store.ok()) {
      status.assign(workers_.size(), store.status());
      return status;
    }
    for (host_config::WorkerConfig w : workers_) {
      if (edit) edit(w);
      absl::Status s = (*store)->Set(absl::StrFormat("grid/worker/%d", w.rank),
                                     host_config::WorkerConfigToJson(w));
      EXPECT_TRUE(s.ok()) << s;
    }
    if (reporters_.empty() && options_.report_nodes) ReportNodes("file:" + store_dir);
    TransportRegistry registry = TransportRegistry::WithBuiltins();
    absl::Status registered = registry.Register(
        "loop", [this](std::string_view spec) -> absl::StatusOr<std::unique_ptr<Transport>> {
          const std::string text(spec);
          int node = 0;
          if (!absl::SimpleAtoi(text.substr(text.find(':') + 1), &node)) {
            return absl::InvalidArgumentError("loop: " + text);
          }
          std::lock_guard<std::mutex> lock(attach_mu_);
          return fabric_->Attach(static_cast<topology::NodeId>(node));
        });
    EXPECT_TRUE(registered.ok()) << registered;
    std::vector<std::thread> threads;
    for (size_t r = 0; r < workers_.size(); ++r) {
      threads.emplace_back([&, r] {
        CommunicatorOptions o = c;
        o.bootstrap.rank = static_cast<int>(r);
        o.bootstrap.world_size = static_cast<int>(workers_.size());
        o.bootstrap.store = "file:" + store_dir;
        o.bootstrap.transport = absl::StrFormat("loop:%d", workers_[r].node);
        o.bootstrap.transports = &registry;
        auto comm = Communicator::Create(o);
        status[r] = comm.status();
        if (comm.ok()) comms_[r] = *std::move(comm);
      });
    }
    for (auto& t : threads) t.join();
    return status;
  }
  // The switches and the root write their status into the store, as
  // grid-switch and grid-root do from one (node/status.h), until the
  // cluster ends or StopReporting.
  void ReportNodes(const std::string& spec) {
    for (const auto& [node, config] : switches_) {
      auto store = OpenStore(spec);
      ASSERT_TRUE(store.ok()) << store.status();
      const topology::NodeId at = node;
      reporters_[config.name] = std::make_unique<node::NodeReporter>(
          *std::move(store), config.name, node::NodeKind::kSwitch, [this, at] {
            return fabric_->SwitchJobDrops(at).value_or(std::vector<node::JobDrops>{});
          });
    }
    auto store = OpenStore(spec);
    ASSERT_TRUE(store.ok()) << store.status();
    reporters_[root_config_.name] = std::make_unique<node::NodeReporter>(
        *std::move(store), root_config_.name, node::NodeKind::kRoot,
        [this] { return root_lanes_ ? root_lanes_->DropsByJob() : root_drops_.Snapshot(); });
  }
  // A node's process dies: its status stops changing (`ended`: it says it
  // ended, as on SIGTERM).
  void StopReporting(const std::string& name, bool ended) {
    auto it = reporters_.find(name);
    if (it == reporters_.end()) return;
    it->second->Stop(ended);
    reporters_.erase(it);
  }
  testing::LoopbackFabric& fabric() { return *fabric_; }
  const planner::Plan& plan() const { return plan_; }
  const topology::Topology& topology() const { return topo_; }
  const std::vector<host_config::WorkerConfig>& workers() const { return workers_; }
  const host_config::RootConfig& root_config() const { return root_config_; }
  const std::map<topology::NodeId, sw::SwitchConfig>& switches() const { return switches_; }
  // The root process restarts: a fresh engine on the same transport, with
  // nothing of what the old one had completed.
  void RestartRoot() {
    std::lock_guard<std::mutex> lock(root_mu_);
    root_ =
        std::make_unique<root::RootEngine>(root_config_, root_transport_.get(), 32, &root_drops_);
  }
  // Between two runs: the switches restart their pipelines from their tables
  // (a restart, or a SIGHUP that brings a new job's tables) and the root's
  // threads start over (RootLanes::Reload, grid-root's SIGHUP), on the same
  // links.
  absl::Status RestartSwitchesAndReloadRoot() {
    for (const auto& [node, config] : switches_) {
      if (absl::Status s = fabric_->RestartSwitch(node); !s.ok()) return s;
    }
    if (root_lanes_) return root_lanes_->Reload(root_config_, absl::Seconds(5));
    RestartRoot();
    return absl::OkStatus();
  }
  // The root's counters so far (read while its thread runs: for tests that
  // only compare them after the ranks are done).
  root::RootStats root_stats() {
    if (root_lanes_) return root_lanes_->stats();
    std::lock_guard<std::mutex> lock(root_mu_);
    return root_->stats();
  }

 private:
  ClusterOptions options_;
  topology::Topology topo_;
  planner::Plan plan_;
  std::vector<host_config::WorkerConfig> workers_;
  host_config::RootConfig root_config_;
  std::map<topology::NodeId, sw::SwitchConfig> switches_;
  std::mutex root_mu_;  // the root engine, between its thread and root_stats()
  std::unique_ptr<testing::LoopbackFabric> fabric_;
  std::unique_ptr<Transport> root_transport_;
  std::unique_ptr<root::RootEngine> root_;
  std::thread root_thread_;
  std::unique_ptr<root::RootLanes> root_lanes_;  // root_threads > 1
  std::atomic<bool> stop_{false};
  node::DropLedger root_drops_;  // the single-thread root's
  std::map<std::string, std::unique_ptr<node::NodeReporter>> reporters_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::mutex attach_mu_;  // Rejoin's ranks attach from their own threads
};

}  // namespace grid::testing

#endif  // GRID_TESTS_SUPPORT_CLUSTER_H_
