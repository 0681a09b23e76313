// What a P4Runtime switch holds, keyed entity by entity, and which job each
// entity belongs to: the ground that publishing a job again and deleting one
// stand on (docs/deploy.md, "P4Runtime"). A job owns the entries whose match
// has its hdr.grid.job_id (tables job, member, replica) and the multicast
// group numbered as the job; everything else (routes, edge ports, the
// switch's identity, default actions) is shared by the jobs on the switch.
// Nothing here talks to a switch: it computes updates and compares states.
#ifndef GRID_P4RUNTIME_HOLDING_H_
#define GRID_P4RUNTIME_HOLDING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "p4/v1/p4runtime.pb.h"
#include "p4runtime/entries.h"
#include "p4runtime/p4info.h"

namespace grid::p4rt {

// Entities by key: EntryKey for a table entry, "group/ID" for a multicast
// group.
using Holding = std::map<std::string, p4::v1::Entity>;

Holding HoldingOf(const std::vector<p4::v1::Entity>& read);
Holding HoldingOf(const SwitchEntities& entities);
std::string KeyOf(const p4::v1::Entity& e);
// "GridIngress.member{hdr.grid.job_id=0x07, hdr.grid.rank=0x03}",
// "multicast group 7".
std::string Describe(const p4::v1::Entity& e, const P4InfoIndex& info);

// The job `e` belongs to, or nullopt for what the jobs share.
std::optional<uint32_t> JobOf(const p4::v1::Entity& e, const P4InfoIndex& info);
// Every job with an entity in `held`.
std::set<uint32_t> JobsIn(const Holding& held, const P4InfoIndex& info);

// The updates that make a switch holding `held` hold `want` on every key of
// `scope`: deletions, modifications, insertions, in that order (a server
// may reorder one Write's updates: publish.cc writes deletions apart). A
// default action is modified, never deleted or inserted.
std::vector<p4::v1::Update> Reconcile(const Holding& held, const Holding& want,
                                      const std::set<std::string>& scope);

// Publishing job `job` where `held` is: every entity it wants written, and
// every entity of the job it no longer wants deleted. Shared entities it
// does not want are deleted only when no other job is held (another job may
// route through them).
std::vector<p4::v1::Update> PublishUpdates(const Holding& held, const SwitchEntities& want,
                                           uint32_t job, const P4InfoIndex& info);
// Deleting `jobs`: their entities, and the shared ones when no job besides
// them is held. Default actions stay.
std::vector<p4::v1::Update> DeleteUpdates(const Holding& held, const std::set<uint32_t>& jobs,
                                          const P4InfoIndex& info);

// What a switch holding `held` holds once it took every one of `updates`.
Holding Apply(Holding held, const std::vector<p4::v1::Update>& updates);

// Whether `read` is `expected`, entity by entity, value by value. Default
// actions that `expected` does not name are the program's and are not
// compared. The error names `who` and the first difference by table and key.
absl::Status Compare(const Holding& expected, const Holding& read, const P4InfoIndex& info,
                     const std::string& who);

// "38 entries, 6 default actions, 1 multicast group" of `updates`.
std::string CountUpdates(const std::vector<p4::v1::Update>& updates);

}  // namespace grid::p4rt

#endif  // GRID_P4RUNTIME_HOLDING_H_
