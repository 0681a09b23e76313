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
#include "grid/control.h"
#include "grid/transport.h"
#include "grid/types.h"

namespace grid {

enum class ReduceOp : uint8_t { kSum = 0 };

// Per operation.
struct AllreduceOptions {
  bool average = false;  // divide the sum by the world size
  // 0: the communicator's default (CommunicatorOptions::timeout).
  absl::Duration timeout = absl::ZeroDuration();
};

// Who this rank is and how it finds its job, then the engine's tunables, in
// one place (docs/worker.md explains each).
struct CommunicatorOptions {
  // Bootstrap (Create(options) and FromEnvironment only).
  int rank = -1;
  int world_size = -1;    // checked against the job's config when >= 0
  std::string store;      // "file:DIR" or "tcp:HOST:PORT" (grid/store.h)
  std::string transport;  // overrides the store's grid/transport/<rank>
  absl::Duration bootstrap_timeout = absl::Seconds(60);
  // Rank 0 as the controller: with `topology` set, rank 0 plans the job
  // (`planner`, the root host `root` or the topology's default) and
  // publishes it into the store, serving the store itself when it is
  // tcp:...; other ranks need only the store. Without it, a grid-controller
  // has published the job.
  std::string topology;  // a generator spec or a JSON file (topology.h)
  std::string planner = "grid";
  std::string root;        // host name; empty: the job's default
  uint32_t slots = 256;    // pool size P on every aggregating switch
  uint16_t elements = 64;  // elements per packet
  uint16_t job_id = 1;
  // The job's token (docs/security.md); 0: rank 0 draws a random one.
  uint32_t token = 0;
  // Host the job's root (parameter server) in this rank's process, on its
  // own thread and transport (`root_transport`, or the store's
  // grid/root-transport). The root must outlive every rank's operations.
  bool serve_root = false;
  std::string root_transport;

  absl::Duration timeout = absl::Seconds(30);  // default per operation
  // In-flight chunks: at most the pool size P. 0 = P. The window starts at
  // `initial_window`, doubles per round trip up to the first congestion
  // signal or loss (slow start), then adapts (AIMD) between 1 and this.
  uint32_t window = 0;
  uint32_t initial_window = 16;
  // Loss recovery: a chunk whose result has not come back after the RTO is
  // sent again, then after 2x, 4x, 8x (up to `max_rto` once no result has
  // come for 2 x max_rto; docs/worker.md). The RTO starts at
  // `rto` and then follows the measured round trips (srtt + 4 rttvar, RFC
  // 6298), never below `min_rto`. A periodic scan of the in-flight slots
  // finds them; there is no timer per packet.
  absl::Duration rto = absl::Milliseconds(20);
  absl::Duration min_rto = absl::Milliseconds(2);
  absl::Duration max_rto = absl::Milliseconds(500);
  absl::Duration scan_interval = absl::Milliseconds(1);
  // Operations of at most this many bytes that are queued together travel as
  // one (fusion). 0 disables fusion.
  size_t fusion_bytes = 64 * 1024;
  size_t batch = 32;  // frames per transport call
};

struct CommunicatorStats {
  uint64_t operations = 0;
  uint64_t fused_operations = 0;  // operations that travelled with others
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t retransmissions = 0;
  uint64_t timeouts = 0;
  uint64_t congestion_signals = 0;  // results or signals that carried CONGESTION
  uint64_t collisions = 0;          // SIGNALs with COLLISION
  uint64_t duplicate_results = 0;   // results for chunks already done (ignored)
  uint64_t malformed = 0;           // frames dropped by the parser
  // Frames dropped because they did not come from this rank's aggregation
  // node through its first hop, or belong to another job (wrong id or
  // token), or came to a link from anyone but its other end.
  uint64_t foreign = 0;
  absl::Duration operation_time;  // summed over completed operations
};

namespace internal {
struct OpState;
}

// The handle of an operation in flight.
class Work {
 public:
  explicit Work(std::shared_ptr<internal::OpState> state) : state_(std::move(state)) {}
  // True once the operation has ended (successfully or not).
  bool Test() const;
  // Waits for the end. A wait that times out returns DeadlineExceeded and
  // leaves the operation running (its own timeout still ends it).
  absl::Status Wait(absl::Duration timeout = absl::InfiniteDuration()) const;
  // From submission to the end; zero while running.
  absl::Duration elapsed() const;

 private:
  std::shared_ptr<internal::OpState> state_;
};

class Communicator {
 public:
  // A rank of a job whose plan is already known: `config` says where its
  // chunks go (control::BuildWorkerConfigs), `transport` carries them.
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(const control::WorkerConfig& config,
                                                              std::unique_ptr<Transport> transport,
                                                              CommunicatorOptions options = {});
  // A rank that fetches its config ("grid/worker/<rank>") and transport spec
  // ("grid/transport/<rank>", unless options.transport is set) from the
  // rendezvous store that the controller filled.
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(CommunicatorOptions options);
  // Create() with options from the environment: GRID_RANK, GRID_WORLD_SIZE,
  // GRID_STORE, GRID_TRANSPORT, GRID_TIMEOUT_MS, GRID_WINDOW, GRID_RTO_US,
  // and for rank 0 as the controller GRID_TOPOLOGY, GRID_PLANNER, GRID_ROOT;
  // GRID_ROOT_RANK=r makes rank r host the root (serve_root);
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
  // in the same order.
  absl::Status AllReduce(const void* send, void* recv, size_t count, DataType type,
                         ReduceOp op = ReduceOp::kSum, const AllreduceOptions& options = {});
  // The same, returning at once. The buffers must stay valid until the end.
  absl::StatusOr<Work> AllReduceAsync(const void* send, void* recv, size_t count, DataType type,
                                      ReduceOp op = ReduceOp::kSum,
                                      const AllreduceOptions& options = {});

  // Fusion: the operations issued between GroupStart and GroupEnd (async
  // ones) are handed over together, and consecutive small ones of one type
  // travel as one (CommunicatorOptions::fusion_bytes). Every rank must group
  // the same operations, so fusion is decided by the program, never by
  // timing.
  absl::Status GroupStart();
  absl::Status GroupEnd();

  // Ends every operation in flight with `reason` (Aborted) and refuses new
  // ones. Other ranks then fail their operations by timeout.
  void Abort(absl::Status reason = absl::AbortedError("aborted"));
  // Waits (at most `timeout`) for the operations in flight, then stops the
  // progress thread. Operations still running end as Cancelled.
  absl::Status Shutdown(absl::Duration timeout = absl::Seconds(10));

  int rank() const;
  int world_size() const;
  CommunicatorStats stats() const;

 private:
  class Impl;
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace grid

#endif  // GRID_COMMUNICATOR_H_
