// Test support: an in-process fabric. Hosts attach as Transports, switches
// run the reference pipeline (sw::Pipeline) from their tables, and every hop
// can lose, duplicate and reorder frames: each link direction has its
// transport::FaultApplier, the one every emulated link uses. Ranks run as
// threads in one process.
//
// A frame a host sends is carried hop by hop at once, in the sender's thread:
// each switch on the way processes it under its own lock, and what reaches a
// host waits in that host's inbox until it calls Receive. A frame a link
// holds back (reordering) goes right behind the next frame on that link, or
// when a host finds its inbox empty, so a pause never strands it.
#ifndef GRID_TESTS_SUPPORT_LOOPBACK_H_
#define GRID_TESTS_SUPPORT_LOOPBACK_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "node/drop_ledger.h"
#include "switch/runtime.h"
#include "transport/faults.h"

namespace grid::testing {

using transport::LinkFaults;

struct FabricStats {
  uint64_t delivered = 0, lost = 0, duplicated = 0, reordered = 0;
};

class LoopbackFabric {
 public:
  // `configs` holds the tables of the switches that run a pipeline; a switch
  // without one drops what reaches it. `faults` apply to every hop, as a
  // frame leaves a node; each link direction draws from its own seed
  // (derived from faults.seed).
  static absl::StatusOr<std::unique_ptr<LoopbackFabric>> Create(
      const topology::Topology& topology,
      const std::map<topology::NodeId, sw::SwitchConfig>& configs, LinkFaults faults = {});

  // The transport of host `node` (its link 0). One per host.
  absl::StatusOr<std::unique_ptr<Transport>> Attach(topology::NodeId node);
  // Instead of Attach: `lanes` transports of host `node`, one queue each;
  // frames reach lane slot % lanes (transport/lanes.h), as a NIC's queues
  // steered by the slot field would.
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> AttachLanes(topology::NodeId node,
                                                                      uint32_t lanes);

  // Cuts a host off: what it sends and what is sent to it is dropped (a
  // killed process, for tests).
  void Disconnect(topology::NodeId node);

  // Puts `frame` on `node`'s port `port` as if the node had sent it, next to
  // whatever runs there (an attacker on a host's link, or on a switch's
  // port: on the path, for tests).
  void InjectFrom(topology::NodeId node, absl::Span<const uint8_t> frame, uint16_t port = 0);

  // Takes the link between `a` and `b` down (both directions lose
  // everything) or up again.
  void SetLinkDown(topology::NodeId a, topology::NodeId b, bool down);

  // Restarts switch `node`'s pipeline from its tables: everything in its
  // slots is lost, as when a switch process or a Tofino restarts.
  absl::Status RestartSwitch(topology::NodeId node);

  // A fault on an event, not a timer: `fault` runs once, in the thread that
  // delivered the `after`-th frame at node `at` that `match` accepts, after
  // that frame was delivered (to a host's inbox) or processed (by a
  // switch), with no fabric lock held, so it may restart a switch, take a
  // link down or restart the root. One trigger at a time; setting one
  // replaces the last.
  struct Trigger {
    topology::NodeId at = topology::kNoNode;
    std::function<bool(const wire::FrameView&)> match;
    uint64_t after = 1;
    std::function<void(const wire::FrameView&)> fault;
  };
  void SetTrigger(Trigger trigger);
  // Whether the trigger has fired.
  bool fired() const { return fired_.load(); }

  FabricStats stats() const;
  // The counters of one switch's pipeline (a copy, taken under its lock).
  absl::StatusOr<sw::Counters> SwitchCounters(topology::NodeId node) const;
  // What one switch's pipeline counted against each job (its ledger, under
  // the switch's lock: a restart replaces the pipeline).
  absl::StatusOr<std::vector<node::JobDrops>> SwitchJobDrops(topology::NodeId node) const;

 private:
  template <typename Fn>
  auto WithPipeline(topology::NodeId node, Fn fn) const
      -> absl::StatusOr<decltype(fn(std::declval<const sw::Pipeline&>()))>;
  class HostPort;
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<uint8_t>> frames;
    bool disconnected = false;
  };
  struct SwitchNode {
    std::mutex mu;
    std::unique_ptr<sw::Pipeline> pipeline;
    sw::Output out;
    sw::SwitchConfig config;  // for restarts
    // The pipeline's aggregation capacity is granted as time passes, as
    // grid-switch's runtime does.
    sw::CapacityMeter capacity;
  };
  using Bytes = std::vector<uint8_t>;
  struct Arrival {
    topology::NodeId to;
    uint16_t in_port;
    Bytes frame;
  };

  explicit LoopbackFabric(const topology::Topology& topology)
      : topology_(topology), link_down_(topology.links().size()) {}
  // Sends `frame` out of `from`'s port `port`.
  void Forward(topology::NodeId from, uint16_t port, absl::Span<const uint8_t> frame);
  void Deliver(topology::NodeId to, uint16_t in_port, absl::Span<const uint8_t> frame);
  void Enqueue(Inbox& inbox, absl::Span<const uint8_t> frame);
  // Sends on every frame a link holds back (a host found nothing to read).
  void ReleaseHeld();
  // Counts `frame`'s arrival at `to` against the trigger, and fires it.
  void Arrived(topology::NodeId to, absl::Span<const uint8_t> frame);

  const topology::Topology topology_;
  std::map<topology::NodeId, std::unique_ptr<SwitchNode>> switches_;
  std::map<topology::NodeId, std::unique_ptr<Inbox>> hosts_;  // lane 0
  // Hosts attached with lanes: the inboxes of lanes 1, 2, ... (fixed once
  // the host is attached, before traffic).
  std::map<topology::NodeId, std::vector<std::unique_ptr<Inbox>>> more_lanes_;
  mutable std::mutex faults_mu_;
  std::vector<transport::FaultApplier<Bytes>> faults_;  // by arc, under faults_mu_
  std::atomic<int> holding_{0};                         // links holding a frame back
  std::atomic<uint64_t> delivered_{0}, lost_{0};
  std::vector<std::atomic<bool>> link_down_;  // by link id
  std::mutex trigger_mu_;
  Trigger trigger_;       // under trigger_mu_
  uint64_t matched_ = 0;  // under trigger_mu_
  std::atomic<bool> armed_{false}, fired_{false};
};

}  // namespace grid::testing

#endif  // GRID_TESTS_SUPPORT_LOOPBACK_H_
