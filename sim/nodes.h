// The hosts of a grid-ns3 run: each a library engine, unchanged, on a
// fabric host (sim/fabric.h), driven as a progress thread drives it but on
// the simulator's clock. A rank polls its worker::Engine when frames
// arrive, when its NIC takes frames again, and every scan interval while an
// operation runs; the root polls its root::RootEngine when frames arrive.
// Host processing takes no simulated time (docs/simulation.md, "What is
// modelled").
#ifndef GRID_SIM_NODES_H_
#define GRID_SIM_NODES_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "grid/host_config.h"
#include "grid/options.h"
#include "ns3/event-id.h"
#include "root/engine.h"
#include "sim/fabric.h"
#include "worker/engine.h"
#include "worker/op_state.h"

namespace grid::sim {

class SimRank {
 public:
  static absl::StatusOr<std::unique_ptr<SimRank>> Create(const host_config::WorkerConfig& config,
                                                         const EngineOptions& options,
                                                         Fabric& fabric);

  // Starts an allreduce of `count` elements of `type` from `send` into
  // `recv` (both outlive it) at the simulator's current time, as
  // Communicator::AllReduce would submit it.
  void Start(DataType type, const void* send, void* recv, size_t count);
  // Whether the last operation ended, how, and after how long.
  bool done() const;
  absl::Status status() const;
  absl::Duration elapsed() const;
  const CommunicatorStats& stats() const { return engine_->stats(); }
  const host_config::WorkerConfig& config() const { return config_; }

 private:
  SimRank(const host_config::WorkerConfig& config, const EngineOptions& options)
      : config_(config), options_(options) {}
  void Wake();
  void Poll();

  host_config::WorkerConfig config_;
  EngineOptions options_;
  Transport* transport_ = nullptr;
  std::unique_ptr<worker::Engine> engine_;
  std::shared_ptr<internal::OpState> op_;
  uint64_t next_id_ = 0;
  uint32_t op_seq_ = 0;
  bool poll_pending_ = false;
  ns3::EventId timer_;
  absl::Time timer_at_ = absl::InfiniteFuture();
};

class SimRoot {
 public:
  static absl::StatusOr<std::unique_ptr<SimRoot>> Create(const host_config::RootConfig& config,
                                                         Fabric& fabric);
  const root::RootStats& stats() const { return engine_->stats(); }
  // A root process that restarts: what its copies held is lost.
  void Restart();

 private:
  explicit SimRoot(const host_config::RootConfig& config) : config_(config) {}
  void Wake();
  void Poll();

  host_config::RootConfig config_;
  Transport* transport_ = nullptr;
  std::unique_ptr<root::RootEngine> engine_;
  bool poll_pending_ = false;
};

}  // namespace grid::sim

#endif  // GRID_SIM_NODES_H_
