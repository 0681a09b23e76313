// Packet I/O for the worker and root engines. A transport moves whole
// Ethernet frames in the GRID wire format (docs/wire-protocol.md), in
// batches: one virtual call moves many frames, so the choice of transport
// (DPDK, kernel UDP, in-process) is made at run time without a virtual call
// per packet.
#ifndef GRID_TRANSPORT_H_
#define GRID_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace grid {

class Transport {
 public:
  virtual ~Transport() = default;

  // Hands frames to the transport. Returns how many it took, in order; the
  // caller keeps the rest and tries again later (back-pressure, not loss).
  virtual size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) = 0;

  // Calls `on_frame` for up to `max` received frames and returns how many.
  // A frame's bytes are valid only during its call.
  virtual size_t Receive(size_t max,
                         absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) = 0;

  // Blocks until a frame may have arrived or `timeout` passes, so an idle
  // progress thread does not spin. Spurious returns are allowed.
  virtual void WaitReadable(absl::Duration timeout) = 0;

  // One line for logs and errors: the kind and its endpoint.
  virtual std::string Describe() const = 0;
};

}  // namespace grid

#endif  // GRID_TRANSPORT_H_
