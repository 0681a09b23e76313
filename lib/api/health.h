// Internal: a rank's liveness as the other ranks see it, through the store.
// A thread of its own writes this rank's heartbeat and, while operations are
// in flight, reads every other rank's, so that a timeout can name the ranks
// that did not contribute at once, without waiting on the progress thread
// (docs/worker.md, "Timeouts").
#ifndef GRID_LIB_API_HEALTH_H_
#define GRID_LIB_API_HEALTH_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "grid/store.h"

namespace grid::api {

// How often a rank writes "grid/heartbeat/<rank>".
inline constexpr absl::Duration kHeartbeatPeriod = absl::Milliseconds(250);

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

class Health {
 public:
  // `reader` and `writer` are two connections to the job's store, so a slow
  // read never delays this rank's own heartbeat. `timeout` is the
  // communicator's default operation timeout: a rank whose heartbeat has not
  // moved for min(4 periods, 0.4 x timeout) is taken for dead, so the
  // verdict is ready before the timeout ends.
  Health(int rank, int world, std::unique_ptr<Store> reader, std::unique_ptr<Store> writer,
         absl::Duration timeout);
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

 private:
  struct Seen {
    bool read = false;  // a read was tried
    bool ok = false;    // and found a heartbeat
    Heartbeat beat;
    // When this rank first saw the current state (this `beat.unix_ms`, or
    // no heartbeat at all): a live rank changes it every period.
    absl::Time since = absl::InfiniteFuture();
  };
  void Loop();
  void ReadOthers(absl::Time now);

  const int rank_;
  const int world_;
  const absl::Duration silent_after_;
  const absl::Duration read_period_;
  std::unique_ptr<Store> reader_;
  std::unique_ptr<Store> writer_;
  std::atomic<uint64_t> submitted_{0};
  std::atomic<bool> ended_{false};
  std::atomic<int64_t> watch_until_ns_{0};  // absl::ToUnixNanos

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Seen> seen_;  // by rank
  std::thread thread_;
};

}  // namespace grid::api

#endif  // GRID_LIB_API_HEALTH_H_
