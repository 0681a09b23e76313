// Internal: the DPDK transport ("dpdk:EAL ARGS [-- port=N]").
#ifndef GRID_LIB_TRANSPORT_DPDK_H_
#define GRID_LIB_TRANSPORT_DPDK_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grid/transport.h"
#include "transport/doorbell.h"

struct rte_mempool;

namespace grid::transport {

absl::StatusOr<std::unique_ptr<Transport>> OpenDpdk(std::string_view spec);

// A memif client cannot connect before its server's socket exists, and the
// processes of an emulated fabric start in any order: waits (at most
// `timeout`) for the socket file of every `--vdev=net_memif...,role=client`
// among the EAL arguments. Abstract sockets are not waited for.
absl::Status WaitForMemifServers(int argc, char** argv, absl::Duration timeout);

// DPDK 22.11's memif client tries to connect once, when its port starts: a
// server whose socket exists but whose port has not started yet answers
// "ID not found", and the link stays down for good. After the ports started:
// restarts each memif client port among `ports` whose link is still down,
// backing off from 250 ms to 2 s (a restart must not cut a handshake short),
// until every one is up. The error names the
// ports whose link never came up within `timeout`.
absl::Status AwaitMemifClientLinks(int argc, char** argv, absl::Span<const uint16_t> ports,
                                   absl::Duration timeout);

// The data room of an mbuf that holds the largest GRID frame (1024
// elements) in one segment: the transport and grid-switch read a frame
// from its first segment only.
uint16_t GridMbufDataRoom();

// Descriptors per queue of a port this library starts: a burst of windows.
inline constexpr uint16_t kPortDescriptors = 1024;
// Configures `port` with `queues` receive and transmit queue pairs
// (kPortDescriptors each, receiving into `pool`), starts it in promiscuous
// mode and fits its MTU to GRID frames. The error names the port.
absl::Status StartQueues(uint16_t port, uint16_t queues, rte_mempool* pool);

// Raises a started port's MTU to fit the largest GRID frame where the device
// allows it (NICs need it above 493 elements); devices that cannot
// (af_packet's 1518 bytes) are left alone, with nothing logged.
void FitMtuToGridFrames(uint16_t port);

// The doorbells of a process's memif ports (transport/doorbell.h): its own,
// linked at every one of those ports' sockets, and each port's peer. A port
// that is not memif, or whose socket is abstract, has no peer bell; with no
// such port the process has no bell and naps instead.
struct MemifBells {
  std::unique_ptr<Doorbell> own;
  std::vector<std::unique_ptr<PeerBell>> peers;  // by port id; null: none

  PeerBell* peer(uint16_t port) const { return port < peers.size() ? peers[port].get() : nullptr; }
  // Whether every port's peer has a bell (PeerBell::Present).
  bool AllPresent() {
    for (auto& p : peers) {
      if (p != nullptr && !p->Present()) return false;
    }
    return own != nullptr;
  }
  // Pays every ring owed (PeerBell::Flush).
  void Flush() {
    for (auto& p : peers) {
      if (p != nullptr) p->Flush();
    }
  }
};

// After rte_eal_init: the bells of `ports`, from the memif vdevs among the
// EAL arguments, matched to ports by name. A bell that cannot be made is
// left out (the process naps), not an error.
MemifBells OpenMemifBells(int argc, char** argv, absl::Span<const uint16_t> ports);

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_DPDK_H_
