// libgrid_nccl: NCCL's allreduce API on grid::Communicator (grid/nccl.h,
// docs/nccl.md). It uses only libgrid's public API.
#include "grid/nccl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "grid/communicator.h"
#include "nccl/agreement.h"
#include "nccl/codes.h"
#include "nccl/comm.h"

namespace {

using grid::nccl::Fail;
using grid::nccl::FailAsync;
using grid::nccl::IsLive;
using grid::nccl::LastError;
using grid::nccl::NotLive;

// The id's layout: a magic, then the store spec, NUL-terminated.
constexpr char kMagic[] = "GRIDNCCL1";
constexpr size_t kStoreOffset = sizeof(kMagic);
constexpr size_t kMaxStore = NCCL_UNIQUE_ID_BYTES - kStoreOffset - 1;

// One queued operation of a group.
struct Pending {
  ncclComm* comm;
  const void* send;
  void* recv;
  size_t count;
  grid::DataType type;
  ncclDataType_t nccl_type;
  ncclRedOp_t op;
  // Why this rank refuses the call for its arguments; empty when it does
  // not. A refused call still takes part in the agreement check, so that
  // every rank refuses it (the others' next call would be matched against
  // this rank's next one otherwise).
  std::string refusal;
};
thread_local int t_group_depth = 0;
thread_local std::vector<Pending> t_group;
// Communicators this thread created inside the group: their fences run at
// ncclGroupEnd, each on its own thread, before the group's operations.
thread_local std::vector<ncclComm*> t_group_new;

// Whether ranks must agree on every operation's count, type and op before
// it runs (GRID_NCCL_CHECK=0 turns the check off, for benchmarks).
bool CheckAgreement() {
  const char* v = std::getenv("GRID_NCCL_CHECK");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

// Runs one communicator's share of a group: the agreement check, then the
// operations, all in flight at once.
ncclResult_t RunOn(ncclComm* comm, const std::vector<const Pending*>& ops) {
  std::string refusal;
  for (const Pending* p : ops) {
    if (refusal.empty()) refusal = p->refusal;
  }
  if (CheckAgreement()) {
    std::vector<grid::nccl::OpKey> keys;
    for (const Pending* p : ops) keys.push_back({p->count, p->nccl_type, p->op});
    std::vector<int32_t> check = grid::nccl::AgreementCheck(keys, !refusal.empty(), comm->rank);
    absl::Status s =
        comm->comm->AllReduce(check.data(), check.data(), check.size(), grid::DataType::kInt32);
    if (!s.ok()) {
      return FailAsync(comm, grid::nccl::FromStatus(s),
                       absl::StrFormat("rank %d: ncclAllReduce: %s", comm->rank, s.message()));
    }
    const grid::nccl::Verdict verdict = grid::nccl::ReadAgreement(check, comm->nranks);
    if (!refusal.empty()) return Fail(comm, ncclInvalidArgument, refusal);
    if (verdict.refused > 0) {
      const std::string who = verdict.refused == 1
                                  ? absl::StrFormat("rank %d", verdict.refusing_rank)
                                  : absl::StrFormat("%d ranks", verdict.refused);
      return Fail(comm, ncclInvalidArgument,
                  absl::StrFormat("rank %d: ncclAllReduce: %s refused this call for its "
                                  "arguments (its own error says why); nothing was summed, and "
                                  "the communicator goes on",
                                  comm->rank, who));
    }
    if (!verdict.same_ops) {
      return Fail(comm, ncclInvalidUsage,
                  absl::StrFormat("rank %d: ncclAllReduce: the ranks disagree on the number of "
                                  "operations or on a count, datatype or op (this rank: %s); "
                                  "nothing was summed",
                                  comm->rank, grid::nccl::Describe(keys)));
    }
  } else if (!refusal.empty()) {
    // Without the check the other ranks cannot be told (docs/nccl.md).
    return Fail(comm, ncclInvalidArgument, refusal);
  }
  absl::Status s = ops.size() > 1 ? comm->comm->GroupStart() : absl::OkStatus();
  std::vector<grid::Work> work;
  for (const Pending* p : ops) {
    if (!s.ok()) break;
    grid::AllreduceOptions options;
    options.average = p->op == ncclAvg;
    auto w = comm->comm->AllReduceAsync(p->send, p->recv, p->count, p->type, grid::ReduceOp::kSum,
                                        options);
    if (w.ok()) {
      work.push_back(*std::move(w));
    } else {
      s = w.status();
    }
  }
  if (ops.size() > 1) {
    absl::Status end = comm->comm->GroupEnd();
    if (s.ok()) s = end;
  }
  for (grid::Work& w : work) {
    absl::Status done = w.Wait();
    if (s.ok()) s = done;
  }
  if (!s.ok()) {
    return FailAsync(comm, grid::nccl::FromStatus(s),
                     absl::StrFormat("rank %d: ncclAllReduce: %s", comm->rank, s.message()));
  }
  return ncclSuccess;
}

// Runs fn(0), ..., fn(n - 1), each on its own thread when there are
// several: the ranks of this process's communicators (ncclCommInitAll, or
// several started in one group) must all run at once.
void AtOnce(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 1) return fn(0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) threads.emplace_back(fn, i);
  for (std::thread& t : threads) t.join();
}

ncclResult_t RunGroup(std::vector<Pending> group) {
  // One thread per communicator: a group may span several communicators of
  // this process (ncclCommInitAll), whose ranks must all run at once.
  std::vector<ncclComm*> comms;
  for (const Pending& p : group) {
    if (std::find(comms.begin(), comms.end(), p.comm) == comms.end()) comms.push_back(p.comm);
  }
  std::vector<ncclResult_t> results(comms.size(), ncclSuccess);
  AtOnce(comms.size(), [&](size_t i) {
    std::vector<const Pending*> ops;
    for (const Pending& p : group) {
      if (p.comm == comms[i]) ops.push_back(&p);
    }
    results[i] = RunOn(comms[i], ops);
  });
  for (size_t i = 0; i < comms.size(); ++i) {
    if (results[i] != ncclSuccess) {
      std::lock_guard<std::mutex> lock(comms[i]->mu);
      LastError() = comms[i]->last_error;
      return results[i];
    }
  }
  return ncclSuccess;
}

ncclResult_t Join(ncclComm_t* out, int nranks, const std::string& store, int rank) {
  auto options = grid::Communicator::OptionsFromEnvironment();
  if (!options.ok()) {
    return Fail(nullptr, ncclInvalidUsage,
                absl::StrFormat("rank %d: ncclCommInitRank: %s", rank, options.status().message()));
  }
  options->bootstrap.rank = rank;
  options->bootstrap.world_size = nranks;
  options->bootstrap.store = store;
  // Inside ncclGroupStart/End one thread may start several ranks of the
  // job, one after the other: none may wait for the others (NCCL completes
  // them at ncclGroupEnd), so their fences run there (FenceGroup).
  if (t_group_depth > 0) options->bootstrap.fence = false;
  auto comm = grid::Communicator::Create(*std::move(options));
  if (!comm.ok()) {
    return Fail(nullptr,
                grid::nccl::FromStatus(comm.status()) == ncclInvalidArgument ? ncclInvalidArgument
                                                                             : ncclSystemError,
                absl::StrFormat("rank %d: ncclCommInitRank: %s", rank, comm.status().message()));
  }
  auto c = std::make_unique<ncclComm>();
  c->comm = *std::move(comm);
  c->rank = rank;
  c->nranks = nranks;
  if (t_group_depth > 0) t_group_new.push_back(c.get());
  grid::nccl::Register(c.get());
  *out = c.release();
  return ncclSuccess;
}

// The fences of the communicators created in a group, all at once (one
// thread each, as their ranks' first operation). A failure becomes the
// communicator's async error, so nothing runs on a fabric that still holds
// an earlier run's slots.
ncclResult_t FenceGroup(std::vector<ncclComm*> comms) {
  std::vector<absl::Status> status(comms.size());
  AtOnce(comms.size(), [&](size_t i) { status[i] = comms[i]->comm->Fence(); });
  ncclResult_t result = ncclSuccess;
  for (size_t i = 0; i < comms.size(); ++i) {
    if (status[i].ok()) continue;
    const std::string message =
        absl::StrFormat("rank %d: ncclCommInitRank (completed at ncclGroupEnd): %s", comms[i]->rank,
                        status[i].message());
    {
      std::lock_guard<std::mutex> lock(comms[i]->mu);
      comms[i]->fence_error = message;
    }
    const ncclResult_t r = FailAsync(comms[i], ncclSystemError, message);
    if (result == ncclSuccess) result = r;
  }
  return result;
}

// A communicator destroyed inside an open group leaves it: neither its
// queued operations nor its fence may run at ncclGroupEnd.
void Forget(ncclComm* comm) {
  std::erase_if(t_group, [&](const Pending& p) { return p.comm == comm; });
  std::erase(t_group_new, comm);
  grid::nccl::Unregister(comm);
}

// The store spec the environment names; empty when it names none.
std::string StoreFromEnvironment() {
  auto options = grid::Communicator::OptionsFromEnvironment();
  return options.ok() ? options->bootstrap.store : std::string();
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr)
    return Fail(nullptr, ncclInvalidArgument, "ncclGetVersion: version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return Fail(nullptr, ncclInvalidArgument, "ncclGetUniqueId: id is null");
  const std::string store = StoreFromEnvironment();
  if (store.empty()) {
    return Fail(nullptr, ncclInvalidUsage,
                "ncclGetUniqueId: no rendezvous store: set GRID_STORE (file:DIR or tcp:HOST:PORT) "
                "to the store a grid-controller filled, or MASTER_ADDR and MASTER_PORT");
  }
  if (store.size() > kMaxStore) {
    return Fail(nullptr, ncclInvalidArgument,
                absl::StrFormat("ncclGetUniqueId: the store spec \"%s\" is longer than %d bytes",
                                store, kMaxStore));
  }
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, kMagic, sizeof(kMagic));
  std::memcpy(id->internal + kStoreOffset, store.data(), store.size());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (comm == nullptr) return Fail(nullptr, ncclInvalidArgument, "ncclCommInitRank: comm is null");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return Fail(nullptr, ncclInvalidArgument,
                absl::StrFormat("ncclCommInitRank: rank %d of %d ranks", rank, nranks));
  }
  if (std::memcmp(id.internal, kMagic, sizeof(kMagic)) != 0 ||
      id.internal[NCCL_UNIQUE_ID_BYTES - 1] != 0) {
    return Fail(nullptr, ncclInvalidArgument,
                absl::StrFormat("rank %d: ncclCommInitRank: the unique id was not made by this "
                                "library's ncclGetUniqueId",
                                rank));
  }
  return Join(comm, nranks, std::string(id.internal + kStoreOffset), rank);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* /*devlist*/) {
  if (comms == nullptr || ndev < 1) {
    return Fail(nullptr, ncclInvalidArgument, "ncclCommInitAll: comms is null or ndev < 1");
  }
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return r;
  // Every rank joins at once: joining waits on the others.
  std::vector<ncclResult_t> results(ndev);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int r = 0; r < ndev; ++r) {
    threads.emplace_back([&, r] {
      results[r] = ncclCommInitRank(&comms[r], ndev, id, r);
      errors[r] = LastError();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ndev; ++r) {
    if (results[r] == ncclSuccess) continue;
    for (int k = 0; k < ndev; ++k) {
      if (results[k] == ncclSuccess) ncclCommAbort(comms[k]);
      comms[k] = nullptr;
    }
    return Fail(nullptr, results[r], errors[r]);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  if (!IsLive(comm)) return NotLive(comm, "ncclCommDestroy");
  absl::Status s = comm->comm->Shutdown();
  const int rank = comm->rank;
  Forget(comm);
  delete comm;
  if (!s.ok()) {
    return Fail(nullptr, grid::nccl::FromStatus(s),
                absl::StrFormat("rank %d: ncclCommDestroy: %s", rank, s.message()));
  }
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  if (!IsLive(comm)) return NotLive(comm, "ncclCommAbort");
  comm->comm->Abort(absl::AbortedError("ncclCommAbort"));
  (void)comm->comm->Shutdown(absl::ZeroDuration());
  Forget(comm);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!IsLive(comm)) return NotLive(comm, "ncclCommCount");
  if (count == nullptr) return Fail(comm, ncclInvalidArgument, "ncclCommCount: count is null");
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!IsLive(comm)) return NotLive(comm, "ncclCommUserRank");
  if (rank == nullptr) return Fail(comm, ncclInvalidArgument, "ncclCommUserRank: rank is null");
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (!IsLive(comm)) return NotLive(comm, "ncclCommGetAsyncError");
  if (async_error == nullptr) {
    return Fail(comm, ncclInvalidArgument, "ncclCommGetAsyncError: async_error is null");
  }
  std::lock_guard<std::mutex> lock(comm->mu);
  *async_error = comm->async_error;
  return ncclSuccess;
}

const char* ncclGetLastError(ncclComm_t comm) {
  if (comm == nullptr || !IsLive(comm)) return LastError().c_str();
  // The pointer stays valid until the communicator's next error.
  std::lock_guard<std::mutex> lock(comm->mu);
  return comm->last_error.c_str();
}

ncclResult_t ncclAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  if (!IsLive(comm)) return NotLive(comm, "ncclAllReduce");
  const std::string who = absl::StrFormat("rank %d: ncclAllReduce", comm->rank);
  {
    std::unique_lock<std::mutex> lock(comm->mu);
    if (!comm->fence_error.empty()) {
      const std::string why = comm->fence_error;
      lock.unlock();
      return Fail(comm, ncclSystemError, who + ": the communicator never started: " + why);
    }
  }
  // A bad argument is this rank's refusal, which the other ranks hear in
  // the agreement check (RunOn): all of them refuse the call, and go on.
  std::string refusal;
  grid::DataType type = grid::DataType::kInt32;
  if (stream != nullptr) {
    refusal = who +
              ": a CUDA stream, but this libgrid_nccl has no CUDA: pass host buffers and a null "
              "stream";
  } else if (!grid::nccl::TypeOf(datatype, &type)) {
    refusal = absl::StrFormat(
        "%s: %s is not supported (ncclFloat32, ncclFloat16, ncclBfloat16, ncclInt32)", who,
        grid::nccl::TypeName(datatype));
  } else if (op != ncclSum && op != ncclAvg) {
    refusal = absl::StrFormat("%s: %s is not supported (ncclSum, ncclAvg): the switches add", who,
                              grid::nccl::OpName(op));
  } else if (absl::Status s = comm->comm->CheckArguments(sendbuf, recvbuf, count, type); !s.ok()) {
    refusal = absl::StrFormat("%s: %s", who, s.message());
  }
  Pending p{comm, sendbuf, recvbuf, count, type, datatype, op, refusal};
  if (t_group_depth > 0) {
    t_group.push_back(std::move(p));
    // Refused at once here, and by every rank at ncclGroupEnd.
    return refusal.empty() ? ncclSuccess : Fail(comm, ncclInvalidArgument, refusal);
  }
  return RunGroup({p});
}

ncclResult_t ncclGroupStart(void) {
  ++t_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (t_group_depth == 0) {
    return Fail(nullptr, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  }
  if (--t_group_depth > 0) return ncclSuccess;
  std::vector<Pending> group;
  group.swap(t_group);
  std::vector<ncclComm*> created;
  created.swap(t_group_new);
  if (!created.empty()) {
    if (ncclResult_t r = FenceGroup(std::move(created)); r != ncclSuccess) return r;
  }
  if (group.empty()) return ncclSuccess;
  return RunGroup(std::move(group));
}

}  // extern "C"
