#include "api/fence.h"

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "grid/control.h"

namespace grid::api {
namespace {

// What clears the state an earlier run of the job left: every message of
// a fence that met it ends with this.
std::string ClearEarlierRun(uint16_t job_id) {
  return absl::StrFormat(
      "publish the job again, then restart the switches and the root or send them SIGHUP (P4 "
      "switches programmed through P4Runtime: grid-controller --delete-job=%d before publishing, "
      "docs/deploy.md)",
      job_id);
}

absl::Status Failed(const host_config::WorkerConfig& config, const absl::Status& s) {
  // A fabric that served a later part of an earlier run drops this run's
  // chunks as old, so the fence waits for its timeout like a missing rank.
  return absl::Status(
      s.code(),
      absl::StrFormat("rank %d job %d: the run's fence (Create's first allreduce) failed: %s. "
                      "Every rank must start within the timeout; a fabric that served an earlier "
                      "run of this job drops this run's chunks as old: %s",
                      config.rank, config.job_id, s.message(), ClearEarlierRun(config.job_id)));
}

absl::Status OldSum(const host_config::WorkerConfig& config, size_t element, int64_t got,
                    int64_t want) {
  return absl::FailedPreconditionError(absl::StrFormat(
      "rank %d job %d: the run's fence (Create's first allreduce) came back with another run's "
      "sum (element %d: %d, this run's is %d): the job's switches and root still hold an earlier "
      "run's slots: %s",
      config.rank, config.job_id, element, got, want, ClearEarlierRun(config.job_id)));
}

}  // namespace

absl::StatusOr<uint32_t> FenceNonce() {
  auto random = control::NewToken();
  if (!random.ok()) return random.status();
  return *random % (1u << 30) + 1;
}

absl::Status RunFence(Communicator& comm, const host_config::WorkerConfig& config, uint32_t nonce,
                      const Health* health) {
  const size_t world = config.world, rank = config.rank;
  std::vector<int32_t> nonces(world, 0);
  nonces[rank] = static_cast<int32_t>(nonce);
  // The stale counts before this rank sends: an earlier run under the same
  // token counted its own late packets.
  const std::vector<uint64_t> before =
      health != nullptr ? health->StaleDrops() : std::vector<uint64_t>{};
  auto work = comm.AllReduceAsync(nonces.data(), nonces.data(), world, DataType::kInt32);
  if (!work.ok()) return Failed(config, work.status());
  absl::Status s;
  const uint64_t op = health != nullptr ? health->submitted() : 0;
  absl::Time all_in = absl::InfiniteFuture();  // when every rank was seen to have issued it
  while (true) {
    s = work->Wait(kFenceLook);
    if (!absl::IsDeadlineExceeded(s)) break;
    if (work->Test()) {
      // Done between the look's deadline and now: its own status, not the
      // look's "still running".
      s = work->Wait(absl::ZeroDuration());
      break;
    }
    if (health == nullptr) continue;
    const absl::Time now = absl::Now();
    if (all_in == absl::InfiniteFuture() && health->AllIssued(op)) all_in = now;
    // Nodes that are up and count their drops would have named the cause
    // by now; others may still be starting (a DPDK switch's EAL takes
    // seconds on a loaded machine), so they get longer.
    const absl::Duration grace = health->NodesLive() ? kFenceGrace : kFenceGraceUnseen;
    if (now - all_in >= grace) {
      // One chunk, every rank sending it: a fabric that serves this run
      // answers in round trips. Nodes that write no status (switches
      // from files, P4 switches) cannot say why they drop it.
      const absl::Status silent = absl::FailedPreconditionError(absl::StrFormat(
          "rank %d job %d: the run's fence (Create's first allreduce) failed: every rank has "
          "issued it (or ended), and no sum came in %s: a switch or the root drops this run's "
          "chunks, or is "
          "down. A fabric that served a long earlier run of this job drops them as stale: %s. "
          "Their counters (SIGUSR1) say which drops them",
          config.rank, config.job_id, absl::FormatDuration(grace), ClearEarlierRun(config.job_id)));
      comm.Abort(silent);
      (void)work->Wait();
      return silent;
    }
    const std::vector<uint64_t> stale_now = health->StaleDrops();
    for (size_t i = 0; i < stale_now.size() && i < before.size(); ++i) {
      if (stale_now[i] <= before[i]) continue;
      const absl::Status stale = absl::FailedPreconditionError(absl::StrFormat(
          "rank %d job %d: the run's fence (Create's first allreduce) failed: %s drops this "
          "run's chunks as stale (%d so far): it holds a later part of an earlier run of this "
          "job: %s",
          config.rank, config.job_id, health->NodeName(i), stale_now[i] - before[i],
          ClearEarlierRun(config.job_id)));
      comm.Abort(stale);
      (void)work->Wait();  // ends at once: aborted
      return stale;
    }
  }
  if (!s.ok()) return Failed(config, s);
  if (nonces[rank] != static_cast<int32_t>(nonce)) return OldSum(config, rank, nonces[rank], nonce);
  return absl::OkStatus();
}

}  // namespace grid::api
