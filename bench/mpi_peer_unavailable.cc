// allreduce_perf without MPI: --mpi says how to get it.
#include "mpi_peer.h"

namespace grid::bench {

absl::StatusOr<std::unique_ptr<MpiPeer>> MpiPeer::Init(int, int) {
  return absl::FailedPreconditionError(
      "allreduce_perf was built without MPI: install libopenmpi-dev and reconfigure");
}

}  // namespace grid::bench
