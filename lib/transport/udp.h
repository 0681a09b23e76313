// Internal: the kernel UDP transport's spec (docs/worker.md, "Transports").
#ifndef GRID_LIB_TRANSPORT_UDP_H_
#define GRID_LIB_TRANSPORT_UDP_H_

#include <netinet/in.h>

#include <map>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "grid/transport.h"
#include "transport/faults.h"

namespace grid::transport {

struct UdpSpec {
  bool link = false;  // udp-link: whole frames to one peer
  sockaddr_in bind{};
  sockaddr_in peer{};
  std::map<uint32_t, sockaddr_in> routes;  // udp: node IP -> where it listens
  LinkFaults faults;                       // fault injection on send, for emulated links
};

absl::StatusOr<UdpSpec> ParseUdpSpec(std::string_view spec);
absl::StatusOr<std::unique_ptr<Transport>> OpenUdp(const UdpSpec& spec);

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_UDP_H_
