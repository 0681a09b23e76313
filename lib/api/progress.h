// Internal: a communicator's progress loop. Callers queue operations (and
// groups of them, fused); each of the rank's progress threads owns one worker
// engine, on its lane of the slots and its own transport, and drives it:
// submits what is queued, polls the transport, scans for loss, and waits on
// the transport when nothing is due. Every lane runs every operation (its
// share of the chunks); a lane that fails ends the others' operations too.
//
// Every lane takes the progress lock (mu_) once a round, so nothing under it
// grows with an operation's size: operations are prepared (fused inputs
// gathered) before it is taken, and only numbered and handed over under it;
// each lane's counters are published through atomics.
#ifndef GRID_LIB_API_PROGRESS_H_
#define GRID_LIB_API_PROGRESS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/health.h"
#include "grid/communicator.h"
#include "grid/host_config.h"
#include "grid/options.h"
#include "grid/transport.h"
#include "trace/recorder.h"
#include "worker/engine.h"
#include "worker/op_state.h"

namespace grid::api {

// The checks an allreduce's arguments pass before anything is sent (the
// op, the type, null buffers, the size, overlap); errors name the rank.
absl::Status CheckAllreduceArguments(int rank, const void* send, const void* recv, size_t count,
                                     DataType type, ReduceOp op);

class ProgressLoop {
 public:
  // With nothing to run the thread still wakes this often, to drain late
  // results and duplicates from the transport.
  static constexpr absl::Duration kIdleWake = absl::Milliseconds(5);
  // The longest wait on the transport while operations are in flight (the
  // loss scan's interval, if shorter).
  static constexpr absl::Duration kBusyWait = absl::Microseconds(200);

  // One thread and engine per transport in `lanes` (at least one; lane k
  // receives the results of slots k mod lanes.size()). `health` (optional)
  // outlives the loop; it hears what was submitted and explains timeouts.
  ProgressLoop(const host_config::WorkerConfig& config,
               std::vector<std::unique_ptr<Transport>> lanes, const EngineOptions& options,
               Health* health);
  ~ProgressLoop();  // Shutdown(10 s)
  ProgressLoop(const ProgressLoop&) = delete;
  ProgressLoop& operator=(const ProgressLoop&) = delete;

  absl::StatusOr<std::shared_ptr<internal::OpState>> Submit(const void* send, void* recv,
                                                            size_t count, DataType type,
                                                            ReduceOp op,
                                                            const AllreduceOptions& options,
                                                            bool blocking);
  absl::Status GroupStart();
  absl::Status GroupEnd();
  void Abort(absl::Status reason);
  // Waits up to `timeout` for the operations in flight, then stops the
  // thread. Operations still running end as Cancelled, and so does this
  // call's result (naming how many): a missed drain deadline is reported.
  absl::Status Shutdown(absl::Duration timeout);
  CommunicatorStats stats() const;
  const host_config::WorkerConfig& config() const { return config_; }

 private:
  // A lane's counters as its thread last published them, read by stats()
  // without a lock: each field on its own (a sum may be a round behind
  // another).
  class PublishedStats {
   public:
    void Store(const CommunicatorStats& s);
    CommunicatorStats Load() const;

   private:
    static constexpr int kCounts = 14;
    std::atomic<uint64_t> counts_[kCounts] = {};
    std::atomic<int64_t> operation_ns_{0}, min_rtt_ns_{0};
  };
  struct LaneState {
    std::unique_ptr<Transport> transport;
    std::unique_ptr<worker::Engine> engine;                // its thread only
    std::vector<std::shared_ptr<worker::WireOp>> pending;  // under mu_
    absl::Status abort;                                    // under mu_
    bool told = false;  // its thread only: its engine's failure was passed on
    absl::Time last_work = absl::InfinitePast();  // its thread only: for busy_poll
    uint64_t results = 0;     // its thread only: engine->results() as Health last heard
    bool idle = true;         // its thread only: engine->Idle() as Health last heard
    size_t left_running = 0;  // set by its thread as it ends
    PublishedStats stats;
    std::unique_ptr<trace::Recorder> trace;  // GRID_TRACE: its thread's until joined
    std::thread thread;
  };

  void Run(LaneState& lane);
  static bool Conflict(const internal::OpState& a, const internal::OpState& b);
  // Waits (until `op`'s deadline) for the operations in flight whose
  // buffers conflict with `op`'s.
  absl::Status AwaitOverlapping(const internal::OpState& op);
  void FinishGroup(const absl::Status& status);  // under mu_
  // Numbers prepared wire operations and hands them to every lane; takes
  // mu_. If the communicator closed meanwhile, ends them instead.
  void Enqueue(std::vector<std::shared_ptr<worker::WireOp>> wire);
  std::vector<std::shared_ptr<worker::WireOp>> Prepare(
      const std::vector<std::shared_ptr<internal::OpState>>& run) const;
  void PublishStats(LaneState& lane, uint64_t fused);
  void TellHealth();                // under mu_
  absl::Status WriteTrace() const;  // once the lanes are joined

  const host_config::WorkerConfig config_;
  const EngineOptions options_;
  Health* const health_;
  std::vector<std::unique_ptr<LaneState>> lanes_;

  std::mutex mu_;
  // Serializes Submit and GroupEnd, so operations are numbered in the order
  // they were submitted while preparing them holds no lock the lanes take.
  std::mutex submit_mu_;
  std::mutex shutdown_mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<internal::OpState>> group_;
  // Operations handed over and maybe not done, for AwaitOverlapping.
  std::vector<std::weak_ptr<internal::OpState>> flight_;
  bool in_group_ = false;
  uint64_t next_id_ = 0;
  uint32_t op_seq_ = 0;
  uint64_t fused_ = 0;
  bool stop_ = false;
  bool joined_ = false;
  absl::Time drain_deadline_ = absl::InfiniteFuture();
  absl::Status closed_;

  std::atomic<uint64_t> fused_published_{0};
};

}  // namespace grid::api

#endif  // GRID_LIB_API_PROGRESS_H_
