#include "mpi_peer.h"

// The C API only: mpi.h would pull in the C++ bindings, which need a library
// of their own.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace grid::bench {
namespace {

std::string ErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return absl::StrCat("error ", code);
  return std::string(text, static_cast<size_t>(length));
}

class WorldPeer : public MpiPeer {
 public:
  explicit WorldPeer(int rank) : rank_(rank) {}
  ~WorldPeer() override { MPI_Finalize(); }

  absl::Status AllReduce(float* data, size_t count) override {
    // MPI counts are ints: larger tensors go in pieces.
    for (size_t done = 0; done < count;) {
      const int n = static_cast<int>(std::min<size_t>(count - done, INT_MAX));
      const int rc =
          MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) {
        return absl::UnavailableError(
            absl::StrFormat("rank %d: MPI_Allreduce of %d floats at element %d: %s", rank_, n, done,
                            ErrorString(rc)));
      }
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  std::string Describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string v(version, static_cast<size_t>(length));
    // OpenMPI's string is one line and a release date; keep the first line.
    return v.substr(0, v.find('\n'));
  }

 private:
  const int rank_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MpiPeer>> MpiPeer::Init(int rank, int world) {
  // FUNNELED: GRID's progress threads run beside MPI, but only this thread
  // calls it.
  int provided = 0;
  if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      rc != MPI_SUCCESS) {
    return absl::UnavailableError(absl::StrFormat("rank %d: MPI_Init: %s", rank, ErrorString(rc)));
  }
  auto peer = std::make_unique<WorldPeer>(rank);  // finalizes MPI on every return
  if (provided < MPI_THREAD_FUNNELED) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rank %d: MPI gives thread level %d; allreduce_perf needs MPI_THREAD_FUNNELED", rank,
        provided));
  }
  // Errors come back from calls instead of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int mpi_rank = -1, mpi_world = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_world);
  if (mpi_rank != rank || mpi_world != world) {
    return absl::FailedPreconditionError(
        absl::StrFormat("rank %d of %d: MPI_COMM_WORLD says rank %d of %d; launch with mpirun and "
                        "GRID_RANK=$OMPI_COMM_WORLD_RANK",
                        rank, world, mpi_rank, mpi_world));
  }
  return peer;
}

}  // namespace grid::bench
