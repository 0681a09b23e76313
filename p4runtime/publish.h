// A job published to its P4Runtime switches, and deleted from them
// (docs/deploy.md, "P4Runtime"). Both first connect to every switch as
// primary and read what it holds, touching nothing, so a switch that is down,
// runs another program or (for a deletion) holds another job stops the whole
// operation before any write. Publishing commits the program where a switch
// runs none, then writes only what differs from what the switch holds, reads
// it all back and compares it entity by entity; a failure midway puts back
// what every switch held before. Deleting removes the job's entities and
// clears its registers by committing the program again: BMv2's P4Runtime
// server refuses register writes, and a commit resets every register of the
// switch, so a switch that holds another job is refused, saying so.
#ifndef GRID_P4RUNTIME_PUBLISH_H_
#define GRID_P4RUNTIME_PUBLISH_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "p4runtime/client.h"
#include "p4runtime/entries.h"
#include "p4runtime/p4info.h"

namespace grid::p4rt {

// A program as grid-controller deploys it, and the cookie that tells a
// switch runs it (ProgramCookie).
struct Program {
  const P4InfoIndex* info = nullptr;
  std::string device_config;  // BMv2: the compiled JSON
  uint64_t cookie = 0;
};

// FNV-1a over the P4Info text and the device config; never 0 (0 is a
// program committed without a cookie).
uint64_t ProgramCookie(std::string_view p4info_text, std::string_view device_config);

struct SwitchJob {
  SwitchTarget target;
  SwitchEntities want;  // the job's share of the switch (EntriesToEntities)
};

// Publishes job `job`, switch by switch in the order given. One line per
// switch on success ("switch S1 at ADDR: program committed; wrote 21
// entries, ...; read back equal"). The error names the switch and what
// failed, then what became of the others: put back as they were, or why a
// switch could not be, and which were not touched.
absl::StatusOr<std::vector<std::string>> PublishJob(const std::vector<SwitchJob>& switches,
                                                    const Program& program, uint32_t job);

// Deletes `jobs` from every switch and clears their registers. Refused
// before any write when a switch holds a job besides them, runs another
// program, or is down. A switch running no program holds nothing to delete.
absl::StatusOr<std::vector<std::string>> DeleteJobs(const std::vector<SwitchTarget>& switches,
                                                    const Program& program,
                                                    const std::set<uint32_t>& jobs);

}  // namespace grid::p4rt

#endif  // GRID_P4RUNTIME_PUBLISH_H_
