// Packet I/O for the worker and root engines. A transport moves whole
// Ethernet frames in the GRID wire format (docs/wire-protocol.md), in
// batches: one virtual call moves many frames, so the choice of transport
// (DPDK, kernel UDP, in-process) is made at run time without a virtual call
// per packet.
#ifndef GRID_TRANSPORT_H_
#define GRID_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grid/export.h"

GRID_API_BEGIN

namespace grid {

class Transport {
 public:
  virtual ~Transport() = default;

  // Hands frames to the transport. Returns how many it took, in order; the
  // caller keeps the rest and tries again later (back-pressure, not loss).
  virtual size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) = 0;

  // Sends up to `count` frames of `bytes` bytes each, which `build(i, frame)`
  // writes whole (every byte) for i = 0, 1, ... in order, straight into the
  // buffers the transport sends from (a DPDK mbuf, a ring slot): the copy
  // Send makes is saved. Returns how many it took, which are the first ones;
  // `build` may have been called for more (a queue that refused part of a
  // burst). The default builds the frames in a buffer and calls Send.
  virtual size_t SendBuilt(size_t count, size_t bytes,
                           absl::FunctionRef<void(size_t, absl::Span<uint8_t>)> build);
  // Calls `on_frame` for up to `max` received frames and returns how many.
  // A frame's bytes are valid only during its call.
  virtual size_t Receive(size_t max,
                         absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) = 0;

  // Blocks until a frame may have arrived or `timeout` passes, so an idle
  // progress thread does not spin. Spurious returns are allowed.
  virtual void WaitReadable(absl::Duration timeout) = 0;

  // One line for logs and errors: the kind and its endpoint.
  virtual std::string Describe() const = 0;

  // A file descriptor that poll() reports readable when frames arrive, so
  // one thread can wait on several transports; -1 when there is none.
  virtual int PollFd() const { return -1; }

  // True when received frames are rebuilt from datagrams (kernel UDP): their
  // IPv4 source is the sender the kernel saw, and their MACs are not real.
  // False for transports of whole frames, whose source MAC is the link's
  // other end (docs/security.md).
  virtual bool datagrams() const { return false; }

  // Frames dropped on arrival because they did not come from the transport's
  // one peer (a point-to-point link's other end); 0 where there is no peer.
  virtual uint64_t foreign_frames() const { return 0; }

  // For a rank of several progress threads (EngineOptions::threads): a
  // transport that can give each thread its own queue returns `lanes`
  // transports, lane k receiving the frames of slots k mod lanes
  // (wire::PeekSlot), and is not used afterwards. Unimplemented (the
  // default): the threads share this one instead (docs/worker.md,
  // "Threads").
  virtual absl::StatusOr<std::vector<std::unique_ptr<Transport>>> OpenLanes(uint32_t lanes);
};

// A kind of transport: opens the whole spec string "SCHEME:..." it was
// registered for, or says what is wrong with it.
using TransportFactory =
    std::function<absl::StatusOr<std::unique_ptr<Transport>>(std::string_view spec)>;

// Transports by scheme, as planners by name (grid/planner.h): a program adds
// its own kind next to the built-in ones and hands the registry to the
// communicator (BootstrapOptions::transports).
class TransportRegistry {
 public:
  // The built-in kinds (docs/worker.md, "Transports"):
  //   udp:bind=IP:PORT[,route=IP@HOST:PORT]...
  //       kernel UDP sockets; a GRID datagram goes to its frame's
  //       destination IP (or where a route sends that IP), and what arrives
  //       is given back as a frame.
  //   udp-link:bind=HOST:PORT,peer=HOST:PORT
  //       whole frames over one kernel UDP socket to one neighbour: a point
  //       to point link, for emulated fabrics (grid-switch --udp-port).
  //   Both take fault injection for emulated links: loss=P, dup=P,
  //   reorder=P (probabilities per frame sent) and seed=N.
  //   dpdk:EAL ARGUMENTS [-- port=N queues=N loss=P dup=P reorder=P seed=N]
  //       a DPDK port (memif, af_packet, net_ring, NICs), the EAL arguments
  //       passed through (space-separated). One per process.
  //   verbs:[device=NAME,][port=N,]mac=MAC
  //       an RDMA NIC through libibverbs, with a raw-packet queue pair
  //       (whole frames; frames for MAC are steered to it). Unavailable where
  //       there is no RDMA device; Unimplemented where the build lacked
  //       libibverbs.
  static TransportRegistry WithBuiltins();

  // `scheme`: letters, digits and '-'; one factory per scheme.
  absl::Status Register(std::string scheme, TransportFactory factory);
  // Opens `spec` with the factory of its scheme (the text before the first
  // ':'). The error names the spec and the part at fault.
  absl::StatusOr<std::unique_ptr<Transport>> Open(std::string_view spec) const;
  std::vector<std::string> Schemes() const;

 private:
  std::map<std::string, TransportFactory, std::less<>> factories_;
};

// TransportRegistry::WithBuiltins().Open(spec).
absl::StatusOr<std::unique_ptr<Transport>> OpenTransport(std::string_view spec);

}  // namespace grid

GRID_API_END

#endif  // GRID_TRANSPORT_H_
