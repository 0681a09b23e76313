// grid-switch built without DPDK (GRID_WITH_DPDK=OFF, or no libdpdk-dev):
// only the kernel UDP ports (--udp-port) are there.
#include "tools/switch_flags.h"

namespace grid::tools {

const bool kHaveDpdk = false;

int RunDpdkSwitch(int, char**) {
  Fail(
      "this grid-switch was built without DPDK (GRID_WITH_DPDK=OFF or no libdpdk-dev): give "
      "its ports as --udp-port=BIND@PEER, one per port in the tables' order (grid-controller "
      "--udp-base-port publishes them)");
}

}  // namespace grid::tools
