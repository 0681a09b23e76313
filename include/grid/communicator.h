// grid::Communicator: allreduce through in-network aggregation.
//
// A communicator is one rank of one job. Its chunks go to the aggregation
// switch and along the path that the job's plan chose, the switches sum them,
// the root completes the sums, and the results come back to every rank
// (docs/worker.md). Every operation has a timeout and ends in a Status; a
// lost, duplicated or reordered packet never changes a result.
//
//   auto comm = grid::Communicator::Create(worker_config, std::move(transport), {});
//   absl::Status s = (*comm)->AllReduce(grads, grads, n, grid::DataType::kFloat32,
//                                       grid::ReduceOp::kSum, {.average = true});
#ifndef GRID_COMMUNICATOR_H_
#define GRID_COMMUNICATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/export.h"
#include "grid/host_config.h"
#include "grid/options.h"
#include "grid/transport.h"
#include "grid/types.h"

GRID_API_BEGIN

namespace grid {

enum class ReduceOp : uint8_t { kSum = 0 };

// Per operation.
struct AllreduceOptions {
  bool average = false;  // divide the sum by the world size
  // 0: the communicator's default (EngineOptions::timeout).
  absl::Duration timeout = absl::ZeroDuration();
};

namespace internal {
struct OpState;
struct CommunicatorAccess;
}  // namespace internal

// The handle of an operation in flight.
class Work {
 public:
  // True once the operation has ended (successfully or not).
  bool Test() const;
  // Waits for the end. A wait that times out returns DeadlineExceeded and
  // leaves the operation running (its own timeout still ends it).
  absl::Status Wait(absl::Duration timeout = absl::InfiniteDuration()) const;
  // From submission to the end; zero while running.
  absl::Duration elapsed() const;

 private:
  friend class Communicator;
  explicit Work(std::shared_ptr<internal::OpState> state) : state_(std::move(state)) {}
  std::shared_ptr<internal::OpState> state_;
};

class Communicator {
 public:
  // A rank of a job whose plan is already known: `config` says where its
  // chunks go (control::BuildWorkerConfigs), `transport` carries them.
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(
      const host_config::WorkerConfig& config, std::unique_ptr<Transport> transport,
      CommunicatorOptions options = {});
  // The same with one transport per progress thread (engine.threads of
  // them; 0 there means as many as given): transport k must deliver the
  // frames of slots k mod threads (those of other slots are dropped as
  // malformed), as a NIC queue steered by the slot field would.
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(
      const host_config::WorkerConfig& config, std::vector<std::unique_ptr<Transport>> lanes,
      CommunicatorOptions options = {});
  // A rank that fetches its config ("grid/worker/<rank>") and transport spec
  // ("grid/transport/<rank>", unless bootstrap.transport is set) from the
  // rendezvous store that the controller filled. With control.topology set,
  // rank 0 is that controller (grid/options.h). It returns once every rank
  // has joined: its first allreduce, the fence, refuses switches and a root
  // that still hold an earlier run's slots (BootstrapOptions::fence).
  //
  // With a store (bootstrap.store, in either form of Create), ranks publish
  // heartbeats there, and a timeout names the ranks that did not contribute.
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(CommunicatorOptions options);
  // Create() with options from the environment: GRID_RANK, GRID_WORLD_SIZE,
  // GRID_STORE, GRID_TRANSPORT, GRID_TIMEOUT_MS, GRID_WINDOW, GRID_RTO_US,
  // GRID_THREADS, GRID_FENCE (0: no fence),
  // and for rank 0 as the controller GRID_TOPOLOGY, GRID_PLANNER, GRID_ROOT;
  // GRID_ROOT_RANK=r makes rank r host the root (root.serve), on
  // GRID_ROOT_THREADS threads (root.threads);
  // the rank and size also from torchrun (RANK, WORLD_SIZE), mpirun
  // (OMPI_COMM_WORLD_RANK/SIZE) or SLURM (SLURM_PROCID, SLURM_NTASKS), and
  // the store from MASTER_ADDR with port MASTER_PORT + 1.
  static absl::StatusOr<std::unique_ptr<Communicator>> FromEnvironment(
      CommunicatorOptions base = {});
  static absl::StatusOr<CommunicatorOptions> OptionsFromEnvironment(CommunicatorOptions base = {});

  ~Communicator();  // Shutdown()
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Sums `count` elements of every rank's `send` into every rank's `recv`.
  // send == recv works in place. Every rank must issue the same operations
  // in the same order: from one thread, or from threads whose calls the
  // program orders (two threads calling at will interleave differently on
  // each rank, and their operations are summed with each other's, as with
  // NCCL). A failed operation leaves `recv` unspecified: in place, the input
  // is gone.
  absl::Status AllReduce(const void* send, void* recv, size_t count, DataType type,
                         ReduceOp op = ReduceOp::kSum, const AllreduceOptions& options = {});
  // The same, returning at once. The buffers must stay valid until the end.
  // An operation on memory an earlier one still uses (its recv, or its send
  // when this one writes there) waits for it first, as a stream orders
  // NCCL's; inside a group, where operations run at once, it is refused
  // (InvalidArgument).
  absl::StatusOr<Work> AllReduceAsync(const void* send, void* recv, size_t count, DataType type,
                                      ReduceOp op = ReduceOp::kSum,
                                      const AllreduceOptions& options = {});
  // The checks AllReduce makes of its arguments before it sends anything
  // (InvalidArgument naming the rank). A layer whose ranks must all refuse
  // a call when one rank's arguments are bad (the NCCL API) asks first.
  absl::Status CheckArguments(const void* send, const void* recv, size_t count, DataType type,
                              ReduceOp op = ReduceOp::kSum) const;

  // Fusion and chaining: the operations issued between GroupStart and
  // GroupEnd (async ones) are handed over together; consecutive small ones
  // of one type travel as one (EngineOptions::fusion_bytes), and
  // consecutive float ones are chained, the earlier agreeing the later's
  // first exponents so it sends fewer probes (docs/worker.md, "Chained
  // operations"). Both change what a rank sends, so every rank must group
  // the same operations: grouping is decided by the program, never by
  // timing, and a rank that grouped differently from the others stalls the
  // job until its operations time out.
  absl::Status GroupStart();
  absl::Status GroupEnd();

  // The check Create(options) runs before it returns (BootstrapOptions::fence),
  // for a communicator created without it: one allreduce that fails
  // (FailedPrecondition, or DeadlineExceeded naming the likely cause) when
  // the job's switches and root still hold an earlier run's slots. Every
  // rank must run it as its next operation, at the same time: a thread that
  // created several ranks runs each one's on its own thread.
  absl::Status Fence();

  // Ends every operation in flight with `reason` (Aborted) and refuses new
  // ones. Other ranks then fail their operations by timeout.
  void Abort(absl::Status reason = absl::AbortedError("aborted"));
  // Waits (at most `timeout`) for the operations in flight, then stops the
  // progress thread. Operations still running end as Cancelled, and then
  // Shutdown returns DeadlineExceeded naming how many.
  absl::Status Shutdown(absl::Duration timeout = absl::Seconds(10));

  int rank() const;
  int world_size() const;
  CommunicatorStats stats() const;

 private:
  friend struct internal::CommunicatorAccess;
  class Impl;
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace grid

GRID_API_END

#endif  // GRID_COMMUNICATOR_H_
