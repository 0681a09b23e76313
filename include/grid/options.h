// grid::CommunicatorOptions, grouped by who reads each part: how a rank
// finds its job (bootstrap), how rank 0 plans one (control), whether a rank
// hosts the root, and the engine's tunables (docs/worker.md explains each).
// Every default is written once, here or in host_config::JobParams.
//
//   grid::CommunicatorOptions o;
//   o.bootstrap.rank = 3;
//   o.bootstrap.store = "tcp:10.0.0.1:29501";
//   o.engine.timeout = absl::Seconds(10);
#ifndef GRID_OPTIONS_H_
#define GRID_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/export.h"
#include "grid/host_config.h"
#include "grid/planner.h"
#include "grid/store.h"

GRID_API_BEGIN

namespace grid {
class TransportRegistry;

// Writes `line` and a newline to stderr: the default notice of a long wait.
void NoticeToStderr(const std::string& line);

// Who this rank is and where it finds its job (Communicator::Create(options)
// and FromEnvironment only).
struct BootstrapOptions {
  int rank = -1;
  int world_size = -1;  // checked against the job's config when >= 0
  std::string store;    // "file:DIR" or "tcp:HOST:PORT" (grid/store.h)
  // A store of the program's own (a pluggable Store, as Gloo's; the PyTorch
  // backend's adapter to c10d's): when set, it is called instead of opening
  // `store`, once for each handle the communicator needs (its config, its
  // heartbeats, rank 0's publishing), and `store` is not read. Rank 0 then
  // serves nothing: the program's store is shared already.
  std::function<absl::StatusOr<std::unique_ptr<Store>>()> open_store;
  std::string transport;  // overrides the store's grid/transport/<rank>
  // Where transport specs are opened (a kind registered there reaches the
  // job); null: the built-in kinds. Read during Create() only.
  const TransportRegistry* transports = nullptr;
  absl::Duration timeout = absl::Seconds(60);  // for each store read
  // Told once when a store read has waited 3 s: what it waits for, where,
  // and for how much longer. null: nothing is said.
  std::function<void(const std::string&)> notice = NoticeToStderr;
  // Create() returns after one allreduce of the whole job, so every rank
  // must start within the engine's timeout. It tells a fabric still holding
  // an earlier run's slots, which would answer this run's chunks with that
  // run's sums, from a fresh one: Create() then fails, naming the job
  // (docs/worker.md, "One run per job"). false: Create() returns at once.
  bool fence = true;
};

// Rank 0 as the controller: with `topology` set, rank 0 plans the job with
// `planner` and publishes it into the store, serving the store itself when it
// is tcp:...; other ranks need only the store. Without it, a grid-controller
// has published the job. Both plan through control::PlanJob, with the same
// defaults, so the same options make the same job either way.
struct ControlOptions {
  std::string topology;  // a generator spec or a JSON file (grid/topology.h)
  std::string planner = "grid";
  // Where `planner` is looked up (a custom planner registered there reaches
  // the job); null: the built-in planners. Read during Create() only.
  const planner::PlannerRegistry* planners = nullptr;
  // The planner's options; atp runs best effort, as ATP does and as
  // grid-controller's --atp defaults to.
  planner::PlannerOptions planner_options = AtpAsDeployed();
  std::string root;  // the root's host name; empty: the job's default
  // Job id, pool size, elements per packet; token 0: rank 0 draws a random
  // one (docs/security.md). Slots or elements 0, the default: chosen for
  // `path_mtu`, `switches` and `rtt` (control::ChooseFrames, PoolSlots), as
  // grid-controller chooses them.
  host_config::JobParams job = ChosenFrames();
  // The smallest MTU (IP bytes) on the job's paths, for chosen frames.
  size_t path_mtu = 1500;
  // What the aggregation switches run: grid-switch, or the P4 programs
  // (64-element frames, pools of at most 511), as grid-controller --switch.
  bool p4_switches = false;
  // The round trip the pool must cover (grid-controller --rtt-us; GRID_RTT_US);
  // zero: the topology's link latencies.
  absl::Duration rtt = absl::ZeroDuration();

 private:
  static host_config::JobParams ChosenFrames() {
    host_config::JobParams p;
    p.slots = 0;
    p.elements = 0;
    return p;
  }
  static planner::PlannerOptions AtpAsDeployed() {
    planner::PlannerOptions o;
    o.atp_best_effort = true;
    return o;
  }
};

// Hosting the job's root (parameter server) in this rank's process, on its
// own thread and transport. The root must outlive every rank's operations.
struct RootHostOptions {
  bool serve = false;
  std::string transport;  // empty: the store's grid/root-transport
  // Threads, each completing the chunks of its lane of the slots (slot mod
  // threads) on its own queue of the transport, or a share of it
  // (docs/worker.md, "Threads"); 1 to 64 and at most the pool size.
  uint32_t threads = 1;
};

// The worker engine's tunables.
struct EngineOptions {
  absl::Duration timeout = absl::Seconds(30);  // default per operation
  // In-flight chunks: at most the pool size P. 0 = P. The window starts at
  // `initial_window`, doubles per round trip up to the first congestion
  // signal or loss (slow start), then grows by one per window and shrinks
  // with the share of marked results (DCTCP) or by half on loss, between 1
  // and this.
  uint32_t window = 0;
  uint32_t initial_window = 16;
  // Results marked CONGESTION shrink the window by the marked fraction (a
  // moving average with this gain, updated once per window) over two, once
  // per window (DCTCP, docs/worker.md "The window").
  double ecn_gain = 1.0 / 16;
  // Loss recovery: a chunk whose result has not come back after the RTO is
  // sent again, then after 2x, 4x, 8x (up to `max_rto` once no result has
  // come for 2 x max_rto; docs/worker.md). The RTO starts at `rto` and then
  // follows the measured round trips (srtt + 4 rttvar, RFC 6298), never
  // below `min_rto`. A periodic scan of the in-flight slots finds them;
  // there is no timer per packet.
  absl::Duration rto = absl::Milliseconds(20);
  absl::Duration min_rto = absl::Milliseconds(2);
  absl::Duration max_rto = absl::Milliseconds(500);
  absl::Duration scan_interval = absl::Milliseconds(1);
  // Operations of at most this many bytes that are queued together travel as
  // one (fusion). 0 disables fusion.
  size_t fusion_bytes = 64 * 1024;
  size_t batch = 32;  // frames per transport call
  // While operations are in flight, a progress thread that finds nothing to
  // do keeps polling this long before it sleeps on its transport
  // (GRID_BUSY_POLL_US; 0 to 1 s). A host with a core per progress thread
  // saves the sleep and the wake-up (a futex or a doorbell, several µs
  // each); on a host with more busy threads than cores (emulated fabrics)
  // the poll takes the core the answer needs. docs/worker.md, "Waiting".
  absl::Duration busy_poll = absl::ZeroDuration();
  // Progress threads (GRID_THREADS), 1 to 64 and at most the pool size:
  // thread k runs the slots s with s % threads == k, with its own share of
  // the window and its own loss recovery, on its own transport queue
  // (Communicator::Create with one transport per thread) or on a share of
  // one (docs/worker.md, "Threads"). Ranks of a job may differ in it.
  uint32_t threads = 1;
  // GRID_TRACE: a directory where the rank writes its timeline when the
  // communicator shuts down (rank-R-jobJ.json): a Chrome trace-event JSON
  // that Perfetto and chrome://tracing open (docs/observability.md). "" is
  // off, and costs nothing measurable. Each progress thread keeps its last
  // `trace_events` events (GRID_TRACE_EVENTS, 104 bytes each). A root
  // hosted in the rank (RootHostOptions) is not traced; grid-root is.
  std::string trace_dir;
  size_t trace_events = size_t{1} << 17;
};

struct CommunicatorOptions {
  BootstrapOptions bootstrap;
  ControlOptions control;
  RootHostOptions root;
  EngineOptions engine;
};

// What a communicator has done so far (Communicator::stats()).
struct CommunicatorStats {
  uint64_t operations = 0;
  uint64_t fused_operations = 0;  // operations that travelled with others
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t retransmissions = 0;
  // Of those, chunks found lost because a chunk sent after them was
  // answered first (RACK); the rest timed out.
  uint64_t early_retransmissions = 0;
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
  // The shortest round trip of a chunk sent once (Karn's rule), over every
  // lane; zero before the first result. Queues add to a round trip and never
  // take from it, so this is the path's own, the one a pool must cover:
  // give it to grid-controller --rtt-us (docs/worker.md, "Frame width and
  // pool").
  absl::Duration min_rtt;
};

}  // namespace grid

GRID_API_END

#endif  // GRID_OPTIONS_H_
