// The root on several threads: one RootEngine per lane of its transport
// (transport/lanes.h), each completing the chunks of its slots (slot mod
// threads). Slots share no state at the root, so the lanes need no
// coordination; their counters are summed.
#ifndef GRID_LIB_ROOT_LANES_H_
#define GRID_LIB_ROOT_LANES_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/host_config.h"
#include "grid/transport.h"
#include "root/engine.h"
#include "trace/recorder.h"

namespace grid::root {

class RootLanes {
 public:
  // One thread per transport in `lanes` (lane k receives the frames of slots
  // k mod lanes.size()); each waits on its transport for up to `idle_wait`
  // when a poll found nothing.
  static absl::StatusOr<std::unique_ptr<RootLanes>> Start(
      const host_config::RootConfig& config, std::vector<std::unique_ptr<Transport>> lanes,
      absl::Duration idle_wait, size_t trace_events = 0);
  // The same on `threads` lanes of one transport (transport::LanesOf).
  // `trace_events` > 0: each lane records GRID_TRACE's samples in a ring of
  // that many events (WriteTrace).
  static absl::StatusOr<std::unique_ptr<RootLanes>> Start(const host_config::RootConfig& config,
                                                          std::unique_ptr<Transport> transport,
                                                          uint32_t threads,
                                                          absl::Duration idle_wait,
                                                          size_t trace_events = 0);
  ~RootLanes();  // Stop()
  RootLanes(const RootLanes&) = delete;
  RootLanes& operator=(const RootLanes&) = delete;

  void Stop();  // joins the threads; idempotent
  // After Stop: the lanes' timelines as `dir`/root-NAME.json (trace/chrome.h),
  // if they were recorded.
  absl::Status WriteTrace(const std::string& dir, const std::string& name,
                          const host_config::RootConfig& config) const;
  // Every lane drops what it holds and completes `config`'s job from scratch,
  // as a restarted process would, on the same transports (SIGHUP in
  // grid-root: a job's next run, or another job). Returns once every lane has
  // taken it, or DeadlineExceeded after `timeout` (the lanes still take it at
  // their next poll). The counters go on from where they were.
  absl::Status Reload(const host_config::RootConfig& config, absl::Duration timeout);
  // Every lane's counters, summed (as of each lane's last poll with work).
  RootStats stats() const;
  std::string Describe() const;  // the first lane's transport and the count
  // Every lane's drops counted against each (job, token), summed: any
  // thread.
  std::vector<node::JobDrops> DropsByJob() const;

 private:
  struct Lane {
    std::unique_ptr<Transport> transport;
    std::unique_ptr<RootEngine> engine;  // its thread only
    uint64_t generation = 0;             // of the config its engine runs; its thread only
    RootStats retired;                   // its earlier engines' counters; its thread only
    RootStats published;                 // under stats_mu_
    // Counted by its thread, read by any; it outlives the engines a reload
    // replaces.
    node::DropLedger job_drops;
    std::unique_ptr<trace::Recorder> trace;  // its thread's until joined; null: off
    std::thread thread;
  };
  RootLanes() = default;
  void Run(Lane& lane, absl::Duration idle_wait);
  void TakeReload(Lane& lane);
  static void Sample(Lane& lane);  // GRID_TRACE's counters, when due

  std::vector<std::unique_ptr<Lane>> lanes_;
  std::atomic<bool> stop_{false};
  mutable std::mutex stats_mu_;
  // A reload: the config and its generation (0: none yet), and how many
  // lanes run it.
  std::atomic<uint64_t> generation_{0};
  std::mutex reload_mu_;
  std::condition_variable reloaded_;
  std::shared_ptr<const host_config::RootConfig> reload_;  // under reload_mu_
  size_t lanes_reloaded_ = 0;                              // under reload_mu_
};

// A sum of counters, field by field.
RootStats operator+(const RootStats& a, const RootStats& b);

}  // namespace grid::root

#endif  // GRID_LIB_ROOT_LANES_H_
