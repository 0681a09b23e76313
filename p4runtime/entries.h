// A switch's grid-p4-entries/1 document (sw::ConfigToP4Entries: the table
// entries, default actions and multicast groups of its jobs) as P4Runtime
// entities, every id looked up by name in the program's P4Info, every value
// in P4Runtime's canonical bytes. Nothing is written here: the client
// (client.h) sends what this makes, and holding.h compares what a switch
// reads back with it.
#ifndef GRID_P4RUNTIME_ENTRIES_H_
#define GRID_P4RUNTIME_ENTRIES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "p4/v1/p4runtime.pb.h"
#include "p4runtime/p4info.h"

namespace grid::p4rt {

struct SwitchEntities {
  std::vector<p4::v1::TableEntry> defaults;         // each table's default action (MODIFY)
  std::vector<p4::v1::TableEntry> entries;          // keyed entries (INSERT)
  std::vector<p4::v1::MulticastGroupEntry> groups;  // the results' replication (INSERT)
};

// Every name the document uses must be in `info`: a missing table, action,
// field or parameter is an error naming it and the entry, before anything
// is sent. `what` names the document in errors.
absl::StatusOr<SwitchEntities> EntriesToEntities(std::string_view entries_json,
                                                 const P4InfoIndex& info, std::string_view what);

// P4Runtime's canonical form of an unsigned value: big-endian without
// leading zero bytes, and one zero byte for zero.
std::string Canonical(std::string_view bytes);

// What identifies a table entry on a switch (its table and match, each
// value canonical), and a human reading of it for errors:
// "GridIngress.member{hdr.grid.job_id=7, hdr.grid.rank=3}".
std::string EntryKey(const p4::v1::TableEntry& e);
std::string DescribeEntry(const p4::v1::TableEntry& e, const P4InfoIndex& info);

// An entry's or group's values, each canonical, in a stable order: equal
// exactly when a switch would behave the same (holding.h compares by it).
std::string NormalizedEntry(const p4::v1::TableEntry& e);
std::string NormalizedGroup(const p4::v1::MulticastGroupEntry& g);

}  // namespace grid::p4rt

#endif  // GRID_P4RUNTIME_ENTRIES_H_
