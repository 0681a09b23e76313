// Internal: a worker lane's loss detection (docs/worker.md, "Loss
// recovery"): the round-trip estimate and RTO (RFC 6298, from clean samples
// only), the rate results come back at, loss by order (RACK, RFC 8985) and
// a stalled stream's probe (F-RTO, RFC 5682). It decides; the engine holds
// the chunks and resends what it is told. Pure: results, chunks and the
// time come in as arguments.
//
// Every chunk of a rank takes the same path to its aggregator and every
// rank sends in stream order, so results come back in the order their
// chunks were sent. A chunk's round trip waits for every rank's
// contribution, though, so another rank's loss delays it: the rules below
// tell a lost chunk from one waiting for someone else's repair.
#ifndef GRID_LIB_WORKER_LOSS_DETECTOR_H_
#define GRID_LIB_WORKER_LOSS_DETECTOR_H_

#include <cstdint>

#include "absl/time/time.h"
#include "grid/options.h"

namespace grid::worker {

class LossDetector {
 public:
  explicit LossDetector(const EngineOptions& options) : options_(options), rto_(options.rto) {}

  // The chunk at stream position `pos`, last sent at `sent` (`sends` times
  // by this rank), was answered at `now`; `retransmitted`: some rank's
  // contribution to it was sent again (the result carries RETRANSMIT).
  void OnAnswered(uint64_t pos, absl::Time sent, int sends, bool retransmitted, absl::Time now);

  // One scan's timeouts, from the state at its start (StartScan).
  struct ScanClock {
    int max_shift = 0;  // a resent chunk's timeout doubles this often at most
    absl::Duration stall_base, overtaken_base, reorder;
    bool probe_says_lost = false;
  };
  // Starts a scan at `now` with `in_flight` chunks out: measures the rate
  // results come back at, and consumes a stall probe's answer once it says
  // the rest was lost.
  ScanClock StartScan(absl::Time now, uint32_t in_flight);

  enum class Verdict : uint8_t {
    kWaiting,
    kLostByOrder,  // a chunk sent after it was answered (RACK), or the probe says so
    kTimedOut,     // overtaken, and out longer than its timeout
  };
  // A chunk in flight, last sent at `sent`, `sends` times.
  Verdict Judge(const ScanClock& c, absl::Time sent, int sends, absl::Time now) const;
  // The stream's oldest chunk in flight (at `pos`): whether the stream
  // stalled (nothing answered since it was sent, or since the last result,
  // for the stall's timeout). Then it is resent as a probe, and the probe's
  // answer tells a wait from a lost tail.
  bool StallProbeDue(const ScanClock& c, absl::Time sent, int sends, absl::Time now) const;
  void ProbeSent(uint64_t pos);

  absl::Duration rto() const { return rto_; }
  absl::Duration srtt() const { return srtt_; }
  absl::Duration min_rtt() const { return min_rtt_; }
  double result_rate() const { return result_rate_; }

 private:
  void SampleRtt(absl::Duration rtt);
  void MeasureResultRate(absl::Time now, uint32_t in_flight);
  double Backoff(const ScanClock& c, int sends) const;

  const EngineOptions options_;
  // The round-trip estimate, from clean samples.
  absl::Duration srtt_ = absl::ZeroDuration(), rttvar_ = absl::ZeroDuration();
  absl::Duration rto_;
  absl::Duration min_rtt_ = absl::ZeroDuration();
  absl::Time last_result_ = absl::InfinitePast();       // when a chunk was last answered
  absl::Time last_result_sent_ = absl::InfinitePast();  // when that chunk was (last) sent
  // Loss by order: the latest first send answered, and its round trip.
  absl::Time rack_sent_ = absl::InfinitePast();
  absl::Duration rack_rtt_;
  // A stalled stream's probe: its position, and once its result is in,
  // when it came and when the probe was sent. A result for a chunk sent
  // before the probe cancels it (the stall was a wait, not a loss).
  uint64_t probe_pos_ = UINT64_MAX;
  absl::Time probe_answered_ = absl::InfinitePast();
  absl::Time probe_sent_ = absl::InfinitePast();
  // Results per second while chunks are in flight: with N chunks queued
  // ahead, a chunk sent now waits about N / rate for its result, which the
  // smoothed round trip follows late.
  double result_rate_ = 0;
  uint64_t results_counted_ = 0;
  absl::Time rate_since_ = absl::InfinitePast();
};

}  // namespace grid::worker

#endif  // GRID_LIB_WORKER_LOSS_DETECTOR_H_
