// What grid-switch's two port kinds share (tools/switch_dpdk.cc,
// tools/switch_udp.cc): its flags, its tables and their reloading, and its
// signals. The runtime itself (queues, rates, faults, capacity) is the
// library's (lib/switch/runtime.h).
#ifndef GRID_TOOLS_SWITCH_FLAGS_H_
#define GRID_TOOLS_SWITCH_FLAGS_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "grid/switch.h"
#include "node/status.h"
#include "switch/runtime.h"

namespace grid::tools {

// A usage error (exit status 2) or a failed start (1), on stderr.
[[noreturn]] void Fail(const std::string& message, int status = 2);

struct SwitchFlags {
  std::string config_path;    // a file, or "store:SPEC#NAME"
  std::string store, name;    // --store and --name: the store mode
  double capacity_gbps = -1;  // C_s instead of the table's; -1: the table's
  double rate_scale = 1;      // an emulation's scale: C_s times this
  int idle_us = 50;
  std::string metrics;  // --metrics=ADDR:PORT: serve Prometheus metrics (tools/switch_metrics.h)
  std::vector<std::pair<uint16_t, sw::PortShaping>> impairments;  // --impair, by port
  std::vector<std::string> udp_ports;                             // BIND@PEER, in port order
};

// grid-switch --help (before the EAL, which would print only its own).
extern const char kSwitchUsage[];
bool WantsSwitchUsage(int argc, char** argv);
// The flags after the EAL arguments (DPDK mode) or all of them (UDP mode).
SwitchFlags ParseSwitchFlags(int argc, char** argv);

// The tables from the flags' source, with the aggregation capacity of one
// of `shares` lanes (sw::CapacityShare). Fails the process on error.
sw::SwitchConfig LoadConfig(const SwitchFlags& flags, unsigned shares);
// From a store, the switch tells the job's ranks it is alive and what it
// drops against their job (lib/node/status.h): the reporter writes
// grid/node/NAME, with the drops of every pipeline (lane) summed, until it
// is stopped. Null with --config. The pipelines must outlive it; their
// ledgers are read from the reporter's thread, which they allow.
std::unique_ptr<node::NodeReporter> StartReporter(const SwitchFlags& flags,
                                                  std::vector<const sw::Pipeline*> pipelines);
// SIGHUP: the tables again, into a running pipeline; says how it went.
void Reload(sw::Pipeline& pipeline, const SwitchFlags& flags, unsigned shares);
// Every port's shaping, each rate split over `shares` lanes. Fails the process on a port the switch
// does not have.
std::vector<sw::PortShaping> PortShapings(const SwitchFlags& flags, uint16_t ports,
                                          unsigned shares);

// SIGUSR1 dumps the counters, SIGHUP reloads the tables, SIGINT and SIGTERM
// stop.
extern std::atomic<bool> g_stop, g_dump, g_reload;
void InstallSignals();

// A steady clock in nanoseconds: the time the runtime is given.
int64_t SteadyNs();

// The two port modes; kHaveDpdk says whether this build has the second.
int RunUdpSwitch(int argc, char** argv);
int RunDpdkSwitch(int argc, char** argv);
extern const bool kHaveDpdk;

}  // namespace grid::tools

#endif  // GRID_TOOLS_SWITCH_FLAGS_H_
