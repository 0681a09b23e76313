// grid-controller --switch=p4runtime:ADDR[,ADDR...] (docs/deploy.md,
// "P4Runtime"): the job published to every switch through its P4Runtime
// server (p4runtime/publish.h: the program committed where a switch runs
// none, only what differs written, all of it read back), and --delete-job,
// which takes jobs off them and clears their registers. Built where the
// P4Runtime client is (p4runtime/); elsewhere both fail saying why
// (p4runtime_unavailable.cc).
#ifndef GRID_TOOLS_P4RUNTIME_LOAD_H_
#define GRID_TOOLS_P4RUNTIME_LOAD_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/switch.h"
#include "grid/topology.h"

namespace grid::tools {

struct P4RuntimeOptions {
  // HOST:PORT[/DEVICE] per switch, in node order, or NAME=HOST:PORT[/DEVICE]
  // for each switch in any order; DEVICE is the P4Runtime device id (0 when
  // left out; BMv2's --device-id).
  std::vector<std::string> addresses;
  std::string p4info;         // the program's P4Info (text format), a path
  std::string device_config;  // the target's program (BMv2: its JSON), a path
  uint64_t election_id = 1;
  absl::Duration timeout = absl::Seconds(10);
};

// One line per switch on success. The error names the switch, and what
// became of the others (p4rt::PublishJob).
absl::StatusOr<std::vector<std::string>> LoadP4Runtime(
    const std::map<topology::NodeId, sw::SwitchConfig>& switches, uint16_t job_id,
    const P4RuntimeOptions& options);

// `jobs` deleted from the switches at options.addresses, their registers
// cleared (p4rt::DeleteJobs). Switches are named by their place in the
// list, from 1.
absl::StatusOr<std::vector<std::string>> DeleteP4RuntimeJobs(const std::set<uint32_t>& jobs,
                                                             const P4RuntimeOptions& options);

}  // namespace grid::tools

#endif  // GRID_TOOLS_P4RUNTIME_LOAD_H_
