// grid-controller --switch=p4runtime:ADDR[,ADDR...] (docs/deploy.md,
// "P4Runtime"): every switch of the job, in node order, programmed through
// its P4Runtime server: arbitration as primary, the program committed with
// its P4Info, the job's entries written, and read back entry by entry.
// Built where the P4Runtime client is (p4runtime/); elsewhere the flag
// fails saying why (p4runtime_unavailable.cc).
#ifndef GRID_TOOLS_P4RUNTIME_LOAD_H_
#define GRID_TOOLS_P4RUNTIME_LOAD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/switch.h"
#include "grid/topology.h"

namespace grid::tools {

struct P4RuntimeOptions {
  // HOST:PORT[/DEVICE] per switch, in node order; DEVICE is the P4Runtime
  // device id (0 when left out; BMv2's --device-id).
  std::vector<std::string> addresses;
  std::string p4info;         // the program's P4Info (text format), a path
  std::string device_config;  // the target's program (BMv2: its JSON), a path
  uint64_t election_id = 1;
  absl::Duration timeout = absl::Seconds(10);
};

// One line per switch on success ("S1 at ADDR: 21 entries, 6 default actions,
// 1 multicast group written and read back"). The error names the switch;
// switches before it in node order hold the job, those after it are untouched,
// and it says which.
absl::StatusOr<std::vector<std::string>> LoadP4Runtime(
    const std::map<topology::NodeId, sw::SwitchConfig>& switches, const P4RuntimeOptions& options);

extern const bool kHaveP4Runtime;

}  // namespace grid::tools

#endif  // GRID_TOOLS_P4RUNTIME_LOAD_H_
