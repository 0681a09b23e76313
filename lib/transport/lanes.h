// Lanes over one transport: a rank with several progress threads gives each
// its own lane of the pool's slots (docs/worker.md, "Threads"). Where a
// transport has no queue per lane, SplitIntoLanes shares it: whichever lane
// receives a batch keeps the frames of its slots and hands the others to
// their lanes' inboxes (a copy each), and no two calls into the transport
// overlap (it need not be thread-safe).
#ifndef GRID_LIB_TRANSPORT_LANES_H_
#define GRID_LIB_TRANSPORT_LANES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "grid/transport.h"
#include "grid/wire.h"

namespace grid::transport {

inline constexpr uint32_t kMaxLanes = 64;

// The lane a frame belongs to: its slot mod `lanes`. Frames without a slot
// field (too short to be GRID frames) go to lane 0, whose engine counts them.
inline uint32_t LaneOf(absl::Span<const uint8_t> frame, uint32_t lanes) {
  const int slot = wire::PeekSlot(frame);
  return slot < 0 ? 0 : static_cast<uint32_t>(slot) % lanes;
}

// `lanes` transports (1 to kMaxLanes) sharing `transport`; lane k receives
// the frames of slots k mod lanes. Each lane is used by one thread at a
// time, different lanes by different threads. One lane: `transport` itself.
std::vector<std::unique_ptr<Transport>> SplitIntoLanes(std::unique_ptr<Transport> transport,
                                                       uint32_t lanes);

// `lanes` lanes of `transport`: its own queues where it has them
// (Transport::OpenLanes), else SplitIntoLanes. Errors other than
// Unimplemented from OpenLanes are returned.
absl::StatusOr<std::vector<std::unique_ptr<Transport>>> LanesOf(
    std::unique_ptr<Transport> transport, uint32_t lanes);

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_LANES_H_
