// Internal: the DPDK transport ("dpdk:EAL ARGS [-- port=N]").
#ifndef GRID_LIB_TRANSPORT_DPDK_H_
#define GRID_LIB_TRANSPORT_DPDK_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/transport.h"

namespace grid::transport {

absl::StatusOr<std::unique_ptr<Transport>> OpenDpdk(std::string_view spec);

// A memif client cannot connect before its server's socket exists, and the
// processes of an emulated fabric start in any order: waits (at most
// `timeout`) for the socket file of every `--vdev=net_memif...,role=client`
// among the EAL arguments. Abstract sockets are not waited for.
absl::Status WaitForMemifServers(int argc, char** argv, absl::Duration timeout);

// The data room of an mbuf that holds the largest GRID frame (1024
// elements) in one segment: the transport and grid-switch read a frame
// from its first segment only.
uint16_t GridMbufDataRoom();

// Raises a started port's MTU to fit the largest GRID frame where the device
// allows it (NICs need it above 493 elements); devices that cannot
// (af_packet's 1518 bytes) are left alone, with nothing logged.
void FitMtuToGridFrames(uint16_t port);

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_DPDK_H_
