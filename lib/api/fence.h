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
#include "api/health.h"
#include "grid/communicator.h"
#include "grid/host_config.h"

namespace grid::api {

// Each rank puts a nonce of this run into its own element of a vector of
// `world` int32 and zeros elsewhere; the sum's element `rank` must come back
// as this rank's nonce. An earlier run's sum, whole or mixed into this
// run's, carries other nonces there. Errors name the job and the rank.
//
// A node that served a later part of an earlier run (a long one) drops this
// run's chunks as stale instead, so the sum never comes. With `health`
// (the rank watches the job's nodes), a stale drop counted against the job
// while the fence runs ends it at once, naming the node: in a fresh run
// nothing can be stale at the fence, the run's first operation. And once
// every rank is seen to have issued the fence (their heartbeats), it fails
// after kFenceGrace without a sum, whatever the timeout: nodes that write
// no status drop a rerun's chunks in silence.
absl::Status RunFence(Communicator& comm, const host_config::WorkerConfig& config, uint32_t nonce,
                      const Health* health = nullptr);

// How often the fence looks at the nodes' stale counts while it waits: a
// fraction of the period at which the health thread reads them.
inline constexpr absl::Duration kFenceLook = absl::Milliseconds(20);
// Once every rank's heartbeat shows it has issued the fence, how long the
// fence waits for its one chunk's sum before it fails: thousands of round
// trips and several RTOs on a loaded machine (2 cores, every process of a
// job), far below an operation's timeout (30 s; torch's 30 min). The ranks
// must start within the timeout; this bounds only the wait after they have.
inline constexpr absl::Duration kFenceGrace = absl::Seconds(3);
// The same where some node writes no status (started from files, a P4
// switch) or has not written one yet (still starting): longer, since such a
// node may not be up yet.
inline constexpr absl::Duration kFenceGraceUnseen = absl::Seconds(10);

// A nonce for RunFence: random, in [1, 2^30].
absl::StatusOr<uint32_t> FenceNonce();

}  // namespace grid::api

#endif  // GRID_LIB_API_FENCE_H_
