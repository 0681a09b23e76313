// grid-switch: the GRID switch pipeline on DPDK ports (any PMD) or, with
// --udp-port, on kernel UDP sockets (docs/switch.md). Its runtime (queues,
// rate limits, faults, the aggregation capacity) is the library's
// (lib/switch/runtime.h); tools/switch_dpdk.cc and tools/switch_udp.cc move
// frames between it and the ports.
//
//   grid-switch [EAL arguments] -- --config=switch.json [flags]
//   grid-switch --udp-port=BIND@PEER... --config=switch.json [flags]
//
// Signals: SIGUSR1 prints the counters (JSON, stderr), SIGHUP reloads the
// table file, SIGINT/SIGTERM stop and print the final counters on stdout.
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/switch_flags.h"

int main(int argc, char** argv) {
  if (grid::tools::WantsSwitchUsage(argc, argv)) {
    std::printf("%s", grid::tools::kSwitchUsage);
    if (!grid::tools::kHaveDpdk) {
      std::printf("This grid-switch was built without DPDK (GRID_WITH_DPDK): UDP ports only.\n");
    }
    return 0;
  }
  // Ports over kernel UDP sockets need no DPDK at all.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--udp-port=", 0) == 0) {
      return grid::tools::RunUdpSwitch(argc, argv);
    }
  }
  // DPDK mode hands everything before "--" to the EAL: without it the
  // switch's own flags reach the EAL, which prints its whole usage and dies.
  bool separator = false;
  for (int i = 1; i < argc; ++i) separator = separator || std::strcmp(argv[i], "--") == 0;
  if (!separator) {
    std::fprintf(stderr,
                 "grid-switch: no ports: give each port as --udp-port=BIND@PEER (kernel UDP), or "
                 "DPDK's EAL arguments, then --, then the switch's flags. grid-controller "
                 "publishes each switch's port arguments in its store under "
                 "grid/switch-ports/SWITCH (scripts/fabric.sh reads them).\n%s",
                 grid::tools::kSwitchUsage);
    return 2;
  }
  return grid::tools::RunDpdkSwitch(argc, argv);
}
