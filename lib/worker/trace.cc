// GRID_TRACE's timeline of one lane (docs/observability.md): the wire
// operations as async slices, what the lane waits on as slices of its track,
// sampled counters of the window and loss state, and resends, window cuts
// and signals as instants. Each entry point is called only when a recorder
// is set (Engine::SetTrace).
#include "worker/engine.h"

namespace grid::worker {

void Engine::TraceWait(const char* wait, absl::Time now) {
  if (wait == wait_) return;
  if (wait_ != nullptr) trace_->End(now, wait_, "wait");
  if (wait != nullptr) trace_->Begin(now, wait, "wait");
  wait_ = wait;
}

void Engine::TraceSample(absl::Time now) {
  if (!trace_->SampleDue(now)) return;
  trace_->Counter(now, "chunks",
                  {{"in_flight", in_flight_}, {"window", static_cast<int64_t>(cc_.window())}});
  trace_->Counter(now, "round trip (us)",
                  {{"srtt", absl::ToInt64Microseconds(loss_.srtt())},
                   {"min", absl::ToInt64Microseconds(loss_.min_rtt())},
                   {"rto", absl::ToInt64Microseconds(loss_.rto())}});
  trace_->Counter(now, "signals",
                  {{"marked", static_cast<int64_t>(stats_.congestion_signals)},
                   {"resends", static_cast<int64_t>(stats_.retransmissions)},
                   {"collisions", static_cast<int64_t>(stats_.collisions)}});
}

void Engine::TraceSubmit(const WireOp& op, absl::Time now) {
  // Lane 0 opens every operation's slice, and the lane that answers its
  // last chunk closes it (Complete): a wire operation is one slice per rank.
  if (lane_.index != 0 || op.total() == 0) return;
  trace_->AsyncBegin(now, "allreduce", "op", op.op_seq,
                     {{"id", static_cast<int64_t>(op.pieces.front().op->id)},
                      {"op_seq", op.op_seq},
                      {"chunks", op.total()},
                      {"elements", static_cast<int64_t>(op.count)}});
}

}  // namespace grid::worker
