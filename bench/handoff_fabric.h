// Benchmark support: one rank's link to a "network" thread that runs its
// aggregation switch (the reference pipeline) and the root engine, so that
// the rank's own CPU can be told apart from the network's. The rank's
// transport hands frames over lock-free single-producer rings, and sleeps on
// a futex when it has nothing to receive; the network thread never sleeps
// while the rank waits for it, like a NIC and a switch would not.
#ifndef GRID_BENCH_HANDOFF_FABRIC_H_
#define GRID_BENCH_HANDOFF_FABRIC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grid/host_config.h"
#include "grid/switch.h"
#include "grid/transport.h"
#include "grid/wire.h"

namespace grid::root {
class RootEngine;
}  // namespace grid::root

namespace grid::bench {

// A ring of whole frames from one thread to one other. Push and Pop never
// block; the consumer may sleep in Wait until the producer Wakes it.
class FrameRing {
 public:
  static constexpr uint64_t kSlots = 512;  // a power of two

  FrameRing();
  // Copies `frame` into the next slot; false when the ring is full.
  bool Push(absl::Span<const uint8_t> frame);
  // Has `build(i, slot)` write up to `count` frames of `bytes`
  // each into the next free slots (Transport::SendBuilt); returns how many.
  size_t PushBuilt(size_t count, size_t bytes,
                   absl::FunctionRef<void(size_t, absl::Span<uint8_t>)> build);
  // Calls `on_frame` on up to `max` frames in place, then frees their slots.
  size_t Pop(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame);
  bool Empty() const {
    return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_acquire);
  }
  // Consumer: sleeps until a Wake after frames were pushed, or `timeout`.
  void Wait(absl::Duration timeout);
  // Producer, after a batch of pushes: wakes a sleeping consumer.
  void Wake();

 private:
  struct Slot {
    uint32_t length;
    uint8_t bytes[wire::kMaxFrameBytes];
  };
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the producer
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the consumer
  alignas(64) std::atomic<uint32_t> futex_{0};
  std::atomic<bool> sleeping_{false};
};

// The rank W, its switch S and the root R of a one-rank job, with S and R
// run by one network thread. Only W's transports leave the fabric: one per
// progress thread of the rank, each with its own pair of rings, results
// steered by slot (transport/lanes.h) as a NIC's queues would be.
class HandoffFabric {
 public:
  // `worker` and `root` must both hang off `config`'s switch; `worker_port`
  // and `root_port` are the switch's ports toward them.
  static absl::StatusOr<std::unique_ptr<HandoffFabric>> Create(const sw::SwitchConfig& config,
                                                               uint16_t worker_port,
                                                               uint16_t root_port,
                                                               const host_config::RootConfig& root,
                                                               uint32_t lanes = 1);
  ~HandoffFabric();

  // The rank's transports, one per lane (once).
  std::vector<std::unique_ptr<Transport>> TakeWorkerLanes();
  // CPU time the network thread has used so far.
  absl::Duration NetworkCpu() const;

 private:
  class WorkerPort;
  class RootPort;
  HandoffFabric() = default;
  void Run();
  void Switch(absl::Span<const uint8_t> frame, uint16_t in_port);

  std::unique_ptr<sw::Pipeline> pipeline_;
  sw::Output out_;
  std::vector<uint8_t> frame_;
  uint16_t worker_port_ = 0, root_port_ = 0;
  int64_t last_ns_ = 0;
  std::vector<std::unique_ptr<FrameRing>> up_, down_;  // by lane
  std::vector<bool> woken_;                            // lanes with results this round
  FrameRing to_root_;
  std::unique_ptr<RootPort> root_transport_;
  std::vector<std::unique_ptr<Transport>> worker_lanes_;
  std::unique_ptr<root::RootEngine> root_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace grid::bench

#endif  // GRID_BENCH_HANDOFF_FABRIC_H_
