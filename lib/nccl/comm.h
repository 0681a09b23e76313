// The NCCL layer's communicator handle, and how its calls fail: the last
// error (per thread and per communicator), the asynchronous error, and the
// handles that are live, so that a destroyed one is an error instead of a
// use of freed memory.
#ifndef GRID_LIB_NCCL_COMM_H_
#define GRID_LIB_NCCL_COMM_H_

#include <memory>
#include <mutex>
#include <string>

#include "grid/communicator.h"
#include "grid/nccl.h"

struct ncclComm {
  std::unique_ptr<grid::Communicator> comm;
  int rank = 0;
  int nranks = 0;
  std::mutex mu;  // guards the three below: any thread may ask
  ncclResult_t async_error = ncclSuccess;
  std::string last_error;
  // Why the fence of a communicator created in a group failed: its fabric
  // holds an earlier run's slots, and no operation may run on it.
  std::string fence_error;
};

namespace grid::nccl {

// This thread's last error (ncclGetLastError(NULL)).
std::string& LastError();

// Records `message` as this thread's and `comm`'s (if any) last error.
ncclResult_t Fail(ncclComm* comm, ncclResult_t result, const std::string& message);
// The same, and an error of the fabric (not of the arguments: not
// ncclInvalidArgument or ncclInvalidUsage) becomes the communicator's
// asynchronous error, as a failed kernel does in NCCL; a program that polls
// it must not abort for a refused call.
ncclResult_t FailAsync(ncclComm* comm, ncclResult_t result, const std::string& message);

// The communicators this process made and has not destroyed.
void Register(const ncclComm* comm);
void Unregister(const ncclComm* comm);
bool IsLive(const ncclComm* comm);
// Null, destroyed or never made: ncclInvalidArgument naming `call`.
ncclResult_t NotLive(const ncclComm* comm, const char* call);

}  // namespace grid::nccl

#endif  // GRID_LIB_NCCL_COMM_H_
