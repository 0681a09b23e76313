// Internal: the worker's fixed tunables, each with its reason, in one place
// (docs/worker.md, "Tunables"). What a user may change is in EngineOptions
// (grid/options.h); these are the constants the loss and congestion rules
// are built from.
#ifndef GRID_LIB_WORKER_TUNABLES_H_
#define GRID_LIB_WORKER_TUNABLES_H_

namespace grid::worker {

struct Tunables {
  // Doublings of a resent chunk's timeout while results still come back:
  // the chunk most likely waits for another rank's repair, and must not
  // sleep through its own being lost again.
  static constexpr int kMaxBackoff = 3;
  // Doublings once nothing has come back for 2 x max_rto: the path is down,
  // and the chunk backs off up to max_rto.
  static constexpr int kMaxSilentBackoff = 20;
  // The result rate is averaged over at least this many scan intervals
  // that had results: one interval's count is a handful of batches.
  static constexpr int kRateScans = 4;
  // The weight of a new result-rate sample (the rest keeps the old): a
  // quarter follows a change within a few samples without chasing batches.
  static constexpr double kRateGain = 0.25;
  // A stalled stream waits this many times the queue ahead of its oldest
  // chunk (in flight / result rate) before probing: results come in
  // batches, and 1.5 covers one batch late.
  static constexpr double kQueueWaitFactor = 1.5;
  // An overtaken chunk's timeout is at most this many smoothed round trips
  // (once any is measured): loss slows results while the chunks it holds
  // back stay in flight, and unbounded that estimate fed on itself.
  static constexpr double kOvertakenRtts = 3;
  // RACK's reordering window (RFC 8985) and F-RTO's wait, as a fraction of
  // the round trip, plus one scan interval: the jitter of the scan and of
  // results that arrive in one batch.
  static constexpr double kReorderFraction = 0.25;
};

}  // namespace grid::worker

#endif  // GRID_LIB_WORKER_TUNABLES_H_
