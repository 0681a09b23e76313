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
  return grid::tools::RunDpdkSwitch(argc, argv);
}
