// The DPDK transport where the build has no DPDK (GRID_WITH_DPDK=OFF, or
// libdpdk-dev was not found): kernel UDP carries every job instead.
#include "absl/strings/str_format.h"
#include "transport/dpdk.h"

namespace grid::transport {

absl::StatusOr<std::unique_ptr<Transport>> OpenDpdk(std::string_view spec) {
  return absl::UnimplementedError(absl::StrFormat(
      "transport \"%s\": this build has no DPDK transport (built with GRID_WITH_DPDK=OFF or "
      "without libdpdk-dev); use udp: or udp-link: (docs/worker.md, \"Transports\")",
      spec));
}

}  // namespace grid::transport
