// Internal: a rank's liveness as the other ranks see it, through the store.
// A thread of its own writes this rank's heartbeat and, while operations are
// in flight, reads every other rank's, so that a timeout can name the ranks
// that did not contribute at once, without waiting on the progress thread
// (docs/worker.md, "Timeouts").
#ifndef GRID_LIB_API_HEALTH_H_
#define GRID_LIB_API_HEALTH_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grid/store.h"
#include "node/status.h"

namespace grid::api {

// How often a rank writes "grid/heartbeat/<rank>".
inline constexpr absl::Duration kHeartbeatPeriod = absl::Milliseconds(250);
// A node's not_member, bad_source and bad_ingress drops under a job's token
// fail the job only once it is stalled: every rank has issued the
// operations this one waits for, and nothing has answered for this long.
// Those drops come from a misconfiguration (every frame of some rank goes
// nowhere) or from a host that holds the token and forges frames, which
// must not fail a job whose own frames get through (docs/security.md,
// "Drop notices"). Hundreds of round trips, a few RTOs.
inline constexpr absl::Duration kDropStall = absl::Seconds(1);

// A heartbeat: "<operations submitted> <unix ms> <run|end>". "end" once the
// communicator has failed or shut down, so a rank that ended on its own (say,
// by the same timeout) is not taken for a dead one.
struct Heartbeat {
  uint64_t submitted = 0;
  int64_t unix_ms = 0;
  bool ended = false;
};
std::string FormatHeartbeat(const Heartbeat& beat);
// False when `text` is not a heartbeat.
bool ParseHeartbeat(std::string_view text, Heartbeat* beat);

// The switches and the root a job's chunks pass, whose status in the store
// (node/status.h) a rank watches: their names and the job's id and token,
// under which their drop counts are read.
struct WatchedNodes {
  uint16_t job = 0;
  uint32_t token = 0;
  std::vector<std::string> names;
};

class Health {
 public:
  // `reader` and `writer` are two connections to the job's store, so a slow
  // read never delays this rank's own heartbeat. `timeout` is the
  // communicator's default operation timeout: a rank whose heartbeat has not
  // moved for min(4 periods, 0.4 x timeout) is taken for dead, so the
  // verdict is ready before the timeout ends.
  //
  // It also reads the status of each of `nodes` (once here, to learn their
  // drop counts so far, then while watching): a node that stops writing it,
  // or says it ended, or counts a drop against this job that means its
  // tables and the job's plan disagree, is a fault (fault()). A node that
  // never wrote a status (started from files, or a P4 switch) is not
  // judged.
  Health(int rank, int world, std::unique_ptr<Store> reader, std::unique_ptr<Store> writer,
         absl::Duration timeout, WatchedNodes nodes = {});
  ~Health();  // Stop()
  Health(const Health&) = delete;
  Health& operator=(const Health&) = delete;

  // What the next heartbeat says. Any thread.
  void Update(uint64_t submitted, bool ended);
  // Operations are in flight: keep reading the other ranks' heartbeats for
  // a while. Cheap; the progress thread calls it every round.
  void Watch(absl::Time now);
  // The ranks that did not contribute to operation `op_id`, from the last
  // reads: never blocks on the store.
  std::string Explain(uint64_t op_id) const;
  void Stop();

  // A chunk of this rank's came back with its result: any lane's thread,
  // cheap.
  void Answered(absl::Time now) {
    answered_ns_.store(absl::ToUnixNanos(now), std::memory_order_relaxed);
  }
  // A lane of this rank had nothing in flight and now has: a stall counts
  // from here, not from before a quiet spell.
  void Busy(absl::Time now) {
    busy_ns_.store(absl::ToUnixNanos(now), std::memory_order_relaxed);
    busy_lanes_.fetch_add(1, std::memory_order_relaxed);
  }
  // That lane has nothing in flight again. A rank between operations waits
  // for nothing, so it is never stalled, however long its caller takes to
  // issue the next one.
  void Idle() { busy_lanes_.fetch_sub(1, std::memory_order_relaxed); }
  // Whether a watched node has failed the job: a cheap check for the
  // progress thread, every round.
  bool faulted() const { return faulted_.load(std::memory_order_acquire); }
  // What failed (Unavailable or FailedPrecondition, naming the node, as
  // "grid-switch S1"), once faulted(); OK before.
  absl::Status fault() const;
  // The stale drops each watched node has counted against this job's token,
  // as last read, by node: the fence's sign that a node holds a later part
  // of an earlier run (api/fence.h).
  std::vector<uint64_t> StaleDrops() const;
  // "grid-switch S1": how errors name watched node `i`.
  std::string NodeName(size_t i) const;
  // What this rank's heartbeat says it has submitted (Update's last).
  uint64_t submitted() const { return submitted_.load(std::memory_order_relaxed); }
  // Whether, by the last reads, every other rank of this run has submitted
  // operation `op_id` or ended: each heartbeat has moved since this rank
  // first read it (a rank of an earlier run left one that does not move)
  // and counts `op_id` or more, or says it ended.
  bool AllIssued(uint64_t op_id) const;
  // Whether every watched node (none: false) writes a status that has
  // moved since this rank first read it, and has not ended: the nodes are
  // up, and would count what they drop.
  bool NodesLive() const;

 private:
  struct Seen {
    bool read = false;  // a read was tried
    bool ok = false;    // and found a heartbeat
    bool live = false;  // it moved since the first read: a rank of this run
    Heartbeat beat;
    // When this rank first saw the current state (this `beat.unix_ms`, or
    // no heartbeat at all): a live rank changes it every period.
    absl::Time since = absl::InfiniteFuture();
  };
  struct NodeSeen {
    bool ok = false;      // the last read found a status
    bool judged = false;  // a status has been seen: the node can be judged
    bool moved = false;   // and it changed since: the node runs
    node::NodeStatus status;
    absl::Time since = absl::InfiniteFuture();  // when `status.unix_ms` last changed
    // This job's counts at the first read that found them: drops before it
    // belong to an earlier run under the same token.
    bool baselined = false;
    std::array<uint64_t, node::kNumJobDrops> baseline{};
  };
  void Loop();
  void ReadOthers(absl::Time now);
  void ReadNodes(absl::Time now);
  // Under mu_: the fault that node `i`'s last read shows, if any.
  absl::Status Judge(size_t i, absl::Time now) const;
  // Under mu_: this rank waits for an operation, every rank has issued it,
  // and no result has come for kDropStall since, nor since this rank last
  // became busy.
  bool Stalled(absl::Time now) const;
  bool AllIssuedLocked(uint64_t op_id) const;

  const int rank_;
  const int world_;
  const absl::Duration silent_after_;
  const absl::Duration read_period_;
  std::unique_ptr<Store> reader_;
  std::unique_ptr<Store> writer_;
  std::atomic<uint64_t> submitted_{0};
  std::atomic<bool> ended_{false};
  std::atomic<int64_t> watch_until_ns_{0};  // absl::ToUnixNanos
  std::atomic<int64_t> answered_ns_{0};     // Answered's last, absl::ToUnixNanos
  std::atomic<int64_t> busy_ns_{0};         // Busy's last
  std::atomic<int> busy_lanes_{0};          // Busy's less Idle's
  // Under mu_: since when every other rank has been seen to have submitted
  // as many operations as this one (InfiniteFuture: not so at the last read).
  absl::Time all_issued_since_ = absl::InfiniteFuture();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Seen> seen_;  // by rank
  const WatchedNodes nodes_;
  std::vector<NodeSeen> node_seen_;  // by nodes_.names
  absl::Status fault_;               // under mu_; the first one sticks
  std::atomic<bool> faulted_{false};
  std::thread thread_;
};

}  // namespace grid::api

#endif  // GRID_LIB_API_HEALTH_H_
