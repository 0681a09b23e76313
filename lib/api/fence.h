// Internal: a run's first allreduce, which Communicator::Create(options)
// runs before it returns (BootstrapOptions::fence). A job's switches and
// root keep their slots between runs, and a second run on them starts its
// chunks over: a chunk that matches a complete copy of the first run's is
// taken for a retransmission and answered with the old sum. The fence makes
// that an error before the program's first operation (docs/worker.md,
// "One run per job").
#ifndef GRID_LIB_API_FENCE_H_
#define GRID_LIB_API_FENCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grid/communicator.h"
#include "grid/host_config.h"

namespace grid::api {

// Each rank puts a nonce of this run into its own element of a vector of
// `world` int32 and zeros elsewhere; the sum's element `rank` must come back
// as this rank's nonce. An earlier run's sum, whole or mixed into this
// run's, carries other nonces there. Errors name the job and the rank.
absl::Status RunFence(Communicator& comm, const host_config::WorkerConfig& config, uint32_t nonce);

// A nonce for RunFence: random, in [1, 2^30].
absl::StatusOr<uint32_t> FenceNonce();

}  // namespace grid::api

#endif  // GRID_LIB_API_FENCE_H_
