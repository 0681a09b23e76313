// grid-controller's emulated fabrics: the store keys that tell switches and
// hosts on one machine how they are wired (docs/worker.md, "Bootstrap"), and
// the loading of BMv2 switches' tables.
#ifndef GRID_TOOLS_EMULATION_H_
#define GRID_TOOLS_EMULATION_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grid/control.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "tools/flags.h"

namespace grid::tools {

// Store keys and values, in the order they are published.
using Keys = std::vector<std::pair<std::string, std::string>>;

// What every emulation needs from the planned job.
struct Fabric {
  const topology::Topology& topology;
  const std::map<topology::NodeId, sw::SwitchConfig>& switches;
  const std::vector<host_config::WorkerConfig>& workers;
  const host_config::RootConfig& root;
  uint16_t job_id;
};

// Which switch program runs the switches.
enum class SwitchKind { kGrid, kBmv2, kP4Runtime };

struct EmulationOptions {
  SwitchKind kind = SwitchKind::kGrid;
  // Faults on every link (hosts' transports and switch ports), and a rate
  // limit at every switch port (grid-switch only).
  std::string impairment;  // loss=P,dup=P,reorder=P
  std::string link_gbps;   // the same rate on every port; empty: see scale
  // Every switch port shaped to its link's rate in the topology times
  // `scale`, and every switch's C_s scaled alike (grid-switch --rate-scale):
  // the topology's fabric on one machine. 0: no shaping (unless link_gbps).
  double scale = 0;
  int eal_memory_mb = 128;
  // Queue pairs per memif link: each grid-switch runs this many pipeline
  // lcores (one transmit queue each), and each host's DPDK transport opens
  // as many, one per progress thread (GRID_THREADS, grid-root --threads).
  int memif_queues = 1;
  int bmv2_thrift_base = 9090;  // switch i (in node order) listens on base + i
  // --switch=p4runtime:ADDR[,ADDR...]: running P4 switches' P4Runtime servers,
  // in node order; grid-controller programs them (tools/p4runtime_load.h).
  std::vector<std::string> p4runtime;
};

// The options grid-controller's flags ask for (--switch, --link-impairment,
// --link-gbps, --emulation-scale, ...); a bad one exits naming the flag.
EmulationOptions EmulationOptionsFrom(const Flags& flags);

// Kernel UDP: link i is a pair of sockets on `host` from `base_port`.
Keys UdpEmulation(const Fabric& fabric, const EmulationOptions& options, int base_port,
                  const std::string& host);
// DPDK memif: one socket per link under `dir`.
Keys MemifEmulation(const Fabric& fabric, const EmulationOptions& options, const std::string& dir);
// Network namespaces: every host in its own namespace `<prefix>-<host>` with
// an eth0 veth, switches' ends (and switch-to-switch veths) in the caller's
// namespace, named `<prefix><switch id>p<port>`. Hosts reach the fabric
// through `host_transport`: "udp" (kernel sockets on eth0's address) or
// "af_packet" (DPDK on eth0, whole frames). Switches: simple_switch or
// grid-switch on af_packet ports. scripts/netns_fabric.sh builds it.
Keys NetnsEmulation(const Fabric& fabric, const EmulationOptions& options,
                    const std::string& prefix, const std::string& host_transport);

// Loads every switch's tables into its running simple_switch (thrift port
// options.bmv2_thrift_base + its index) through simple_switch_CLI at `cli`,
// waiting at most `wait` for each switch to come up.
absl::Status LoadBmv2(const Fabric& fabric, const EmulationOptions& options, const std::string& cli,
                      absl::Duration wait);

}  // namespace grid::tools

#endif  // GRID_TOOLS_EMULATION_H_
