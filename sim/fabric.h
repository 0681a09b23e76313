// grid-ns3's network: a project topology as ns-3 nodes joined by
// point-to-point links with the topology's rates and latencies. Frames are
// the GRID wire format's whole Ethernet frames, carried as the payload of
// ns-3 packets; each switch runs the library's switch runtime and pipeline
// (sw::SwitchRuntime, the code grid-switch runs), and each host hands what
// reaches it to the engine that owns it, through a grid::Transport.
//
// The fabric is the only place that touches ns-3's links: it applies each
// link direction's faults (the library's transport::FaultApplier) as frames
// arrive, takes links down and up, restarts switches, and folds every
// delivery into a digest that names the run (docs/simulation.md,
// "Determinism").
#ifndef GRID_SIM_FABRIC_H_
#define GRID_SIM_FABRIC_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "grid/transport.h"
#include "transport/faults.h"

namespace grid::sim {

// The simulator's clock as the library reads time: ns-3's Now() counted
// from the Unix epoch.
absl::Time Now();
int64_t NowNs();

// The fabric's tunables, each with its reason.
struct FabricTunables {
  // Frames a host's NIC queues: a DPDK ring's usual size. The engine's
  // window keeps far fewer in flight; more would only hide back-pressure.
  static constexpr uint32_t kHostQueueFrames = 1024;
  // Frames a switch's link device holds besides the one on the wire: one,
  // so the next goes out back to back, and the backlog waits in the switch
  // runtime's egress queue, whose depth marks CONGESTION as grid-switch's
  // does.
  static constexpr uint32_t kSwitchDeviceFrames = 1;
  // A frame a link holds back to reorder goes out behind the next one, or
  // after this long with nothing behind it (a few frame times at 10 Gbps).
  static constexpr absl::Duration kReorderRelease = absl::Microseconds(5);
};

struct FabricStats {
  uint64_t delivered = 0;           // frames handed to a node
  uint64_t lost = 0;                // to a link's faults or a link that was down
  uint64_t duplicated = 0;          // by a link's faults
  uint64_t reordered = 0;           // held back by a link's faults
  uint64_t device_drops = 0;        // a host's NIC queue was full (back-pressure, resent)
  uint64_t switch_queue_drops = 0;  // a switch's egress queue was full (sw::PortDrops::queue)
};

class Fabric {
 public:
  // One per process at a time: ns-3's simulator is global. `switches` holds
  // every switch's tables (control::BuildSwitchConfigs); `faults` apply to
  // every link direction, each drawing from its own seed (faults.seed mixed
  // with the direction).
  static absl::StatusOr<std::unique_ptr<Fabric>> Create(
      const topology::Topology& topology,
      const std::map<topology::NodeId, sw::SwitchConfig>& switches, transport::LinkFaults faults);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Host `node`'s transport (its link 0). `on_arrival` runs, inside the
  // simulation, when frames wait to be received and when frames the NIC
  // refused may be sent again: the owner then polls its engine. Owned by
  // the fabric.
  absl::StatusOr<Transport*> Attach(topology::NodeId node, std::function<void()> on_arrival);

  // Faults on a schedule (sim/scenario.h): both directions of the link
  // between `a` and `b` lose everything while it is down.
  void SetLinkDown(topology::NodeId a, topology::NodeId b, bool down);
  // A switch restarts from its tables: what its slots held is lost.
  absl::Status RestartSwitch(topology::NodeId node);
  // A host's link loses everything from now on, in both directions (a rank
  // or root process that died), or again carries frames.
  void Isolate(topology::NodeId node, bool isolated);

  // Every frame delivered so far, with its time and place, folded into one
  // number: two runs of the same inputs deliver the same frames at the same
  // times in the same order, or they differ here.
  uint64_t digest() const;
  FabricStats stats() const;
  absl::StatusOr<sw::Counters> SwitchCounters(topology::NodeId node) const;
  // The frames each link direction carried, by arc (topology::ArcId), and
  // their bytes: for per-link utilization.
  const std::vector<uint64_t>& arc_bytes() const;

  class Impl;

 private:
  explicit Fabric(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace grid::sim

#endif  // GRID_SIM_FABRIC_H_
