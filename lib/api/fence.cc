#include "api/fence.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "grid/control.h"

namespace grid::api {
namespace {

absl::Status Failed(const host_config::WorkerConfig& config, const absl::Status& s) {
  // A fabric that served a later part of an earlier run drops this run's
  // chunks as old, so the fence waits for its timeout like a missing rank.
  return absl::Status(
      s.code(),
      absl::StrFormat("rank %d job %d: the run's fence (Create's first allreduce) failed: %s. "
                      "Every rank must start within the timeout; a fabric that served an earlier "
                      "run of this job drops this run's chunks as old: publish a new job and "
                      "restart the switches and the root",
                      config.rank, config.job_id, s.message()));
}

absl::Status OldSum(const host_config::WorkerConfig& config, size_t element, int64_t got,
                    int64_t want) {
  return absl::FailedPreconditionError(absl::StrFormat(
      "rank %d job %d: the run's fence (Create's first allreduce) came back with another run's "
      "sum (element %d: %d, this run's is %d): the job's switches and root still hold an earlier "
      "run's slots. Publish a new job, then restart the switches and the root or send them "
      "SIGHUP",
      config.rank, config.job_id, element, got, want));
}

}  // namespace

absl::StatusOr<uint32_t> FenceNonce() {
  auto random = control::NewToken();
  if (!random.ok()) return random.status();
  return *random % (1u << 30) + 1;
}

absl::Status RunFence(Communicator& comm, const host_config::WorkerConfig& config, uint32_t nonce) {
  const size_t world = config.world, rank = config.rank;
  std::vector<int32_t> nonces(world, 0);
  nonces[rank] = static_cast<int32_t>(nonce);
  if (absl::Status s = comm.AllReduce(nonces.data(), nonces.data(), world, DataType::kInt32);
      !s.ok()) {
    return Failed(config, s);
  }
  if (nonces[rank] != static_cast<int32_t>(nonce)) return OldSum(config, rank, nonces[rank], nonce);
  return absl::OkStatus();
}

}  // namespace grid::api
