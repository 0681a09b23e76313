#include "nccl/comm.h"

#include <set>

namespace grid::nccl {
namespace {

struct LiveComms {
  std::mutex mu;
  std::set<const ncclComm*> comms;
};

LiveComms& Live() {
  static auto* live = new LiveComms;  // never destroyed: exit order must not matter
  return *live;
}

}  // namespace

std::string& LastError() {
  thread_local std::string last;
  return last;
}

ncclResult_t Fail(ncclComm* comm, ncclResult_t result, const std::string& message) {
  LastError() = message;
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->last_error = message;
  }
  return result;
}

ncclResult_t FailAsync(ncclComm* comm, ncclResult_t result, const std::string& message) {
  if (result != ncclInvalidArgument && result != ncclInvalidUsage) {
    std::lock_guard<std::mutex> lock(comm->mu);
    if (comm->async_error == ncclSuccess) comm->async_error = result;
  }
  return Fail(comm, result, message);
}

void Register(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(Live().mu);
  Live().comms.insert(comm);
}

void Unregister(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(Live().mu);
  Live().comms.erase(comm);
}

bool IsLive(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(Live().mu);
  return Live().comms.count(comm) > 0;
}

ncclResult_t NotLive(const ncclComm* comm, const char* call) {
  if (comm == nullptr)
    return Fail(nullptr, ncclInvalidArgument, std::string(call) + ": comm is null");
  return Fail(nullptr, ncclInvalidArgument,
              std::string(call) +
                  ": comm is not a live communicator (destroyed already, or not made by "
                  "ncclCommInitRank or ncclCommInitAll)");
}

}  // namespace grid::nccl
