#include "api/fence.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "grid/control.h"

namespace grid::api {

absl::StatusOr<uint32_t> FenceNonce() {
  auto random = control::NewToken();
  if (!random.ok()) return random.status();
  return *random % (1u << 30) + 1;
}

absl::Status RunFence(Communicator& comm, uint16_t job_id, uint32_t nonce) {
  const int rank = comm.rank();
  std::vector<int32_t> v(static_cast<size_t>(comm.world_size()), 0);
  v[static_cast<size_t>(rank)] = static_cast<int32_t>(nonce);
  absl::Status s = comm.AllReduce(v.data(), v.data(), v.size(), DataType::kInt32);
  if (!s.ok()) {
    // A fabric that served a later part of an earlier run drops this run's
    // chunks as old, so the fence waits for its timeout like a missing rank.
    return absl::Status(
        s.code(),
        absl::StrFormat("rank %d job %d: the run's first allreduce (Create's fence) failed: %s. "
                        "Every rank must start within the timeout; a fabric that served an "
                        "earlier run of this job drops this run's chunks as old: publish a new "
                        "job and restart the switches and the root",
                        rank, job_id, s.message()));
  }
  const auto got = static_cast<uint32_t>(v[static_cast<size_t>(rank)]);
  if (got != nonce) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rank %d job %d: the run's first allreduce (Create's fence) came back with another "
        "run's sum (element %d: %d; this run sent %d): the job's switches and root still hold an "
        "earlier run's slots. Publish a new job and restart the switches and the root",
        rank, job_id, rank, got, nonce));
  }
  return absl::OkStatus();
}

}  // namespace grid::api
