// MPI_Allreduce as a peer in allreduce_perf: the same ranks, the same run,
// over whatever transport mpirun configured (scripts/netns_perf.sh runs
// OpenMPI's TCP BTL over the emulated fabric). Built from mpi_peer.cc where
// CMake finds MPI (Debian's libopenmpi-dev), else from
// mpi_peer_unavailable.cc, whose Init says so.
#ifndef GRID_BENCH_MPI_PEER_H_
#define GRID_BENCH_MPI_PEER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grid::bench {

class MpiPeer {
 public:
  // MPI_Init. The process must have been started by mpirun, with MPI's rank
  // and size in MPI_COMM_WORLD equal to GRID's `rank` and `world`.
  static absl::StatusOr<std::unique_ptr<MpiPeer>> Init(int rank, int world);
  // MPI_Finalize.
  virtual ~MpiPeer() = default;
  // MPI_Allreduce over `count` floats, in place, summed. MPI's errors come
  // back as errors that name the rank.
  virtual absl::Status AllReduce(float* data, size_t count) = 0;
  // The MPI library's version string.
  virtual std::string Describe() const = 0;
};

}  // namespace grid::bench

#endif  // GRID_BENCH_MPI_PEER_H_
