#include "p4runtime/holding.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace grid::p4rt {
namespace {

// The field that makes an entry a job's (docs/switch.md, "P4").
constexpr char kJobField[] = "hdr.grid.job_id";

bool IsDefault(const p4::v1::Entity& e) {
  return e.has_table_entry() && e.table_entry().is_default_action();
}

// A value-for-value reading of an entity, equal exactly when the switch
// would behave the same.
std::string Normalized(const p4::v1::Entity& e) {
  if (e.has_table_entry()) return NormalizedEntry(e.table_entry());
  return NormalizedGroup(e.packet_replication_engine_entry().multicast_group_entry());
}

p4::v1::Update MakeUpdate(p4::v1::Update::Type type, const p4::v1::Entity& e) {
  p4::v1::Update u;
  u.set_type(type);
  *u.mutable_entity() = e;
  return u;
}

// The keys `jobs` may change on a switch holding `held`: their own
// entities, and the shared ones (default actions aside) when no other job
// is held.
std::set<std::string> JobScope(const Holding& held, const std::set<uint32_t>& jobs,
                               const P4InfoIndex& info) {
  bool others = false;
  for (uint32_t j : JobsIn(held, info)) others = others || !jobs.count(j);
  std::set<std::string> out;
  for (const auto& [key, e] : held) {
    const std::optional<uint32_t> owner = JobOf(e, info);
    if (owner ? jobs.count(*owner) != 0 : !others && !IsDefault(e)) out.insert(key);
  }
  return out;
}

}  // namespace

std::string KeyOf(const p4::v1::Entity& e) {
  if (e.has_table_entry()) return EntryKey(e.table_entry());
  return absl::StrCat(
      "group/", e.packet_replication_engine_entry().multicast_group_entry().multicast_group_id());
}

Holding HoldingOf(const std::vector<p4::v1::Entity>& read) {
  Holding out;
  for (const p4::v1::Entity& e : read) {
    if (e.has_table_entry() || (e.has_packet_replication_engine_entry() &&
                                e.packet_replication_engine_entry().has_multicast_group_entry())) {
      out[KeyOf(e)] = e;
    }
  }
  return out;
}

Holding HoldingOf(const SwitchEntities& entities) {
  Holding out;
  for (const auto& list : {&entities.defaults, &entities.entries}) {
    for (const p4::v1::TableEntry& t : *list) {
      p4::v1::Entity e;
      *e.mutable_table_entry() = t;
      out[KeyOf(e)] = e;
    }
  }
  for (const p4::v1::MulticastGroupEntry& g : entities.groups) {
    p4::v1::Entity e;
    *e.mutable_packet_replication_engine_entry()->mutable_multicast_group_entry() = g;
    out[KeyOf(e)] = e;
  }
  return out;
}

std::string Describe(const p4::v1::Entity& e, const P4InfoIndex& info) {
  if (e.has_table_entry()) return DescribeEntry(e.table_entry(), info);
  return absl::StrCat(
      "multicast group ",
      e.packet_replication_engine_entry().multicast_group_entry().multicast_group_id());
}

std::optional<uint32_t> JobOf(const p4::v1::Entity& e, const P4InfoIndex& info) {
  if (e.has_packet_replication_engine_entry()) {
    return e.packet_replication_engine_entry().multicast_group_entry().multicast_group_id();
  }
  if (!e.has_table_entry() || e.table_entry().is_default_action()) return std::nullopt;
  const P4Table* table = info.TableById(e.table_entry().table_id());
  if (table == nullptr) return std::nullopt;
  auto field = table->fields.find(kJobField);
  if (field == table->fields.end()) return std::nullopt;
  for (const p4::v1::FieldMatch& m : e.table_entry().match()) {
    if (m.field_id() != field->second.id) continue;
    uint32_t job = 0;
    for (unsigned char c : m.exact().value()) job = (job << 8) | c;
    return job;
  }
  return std::nullopt;
}

std::set<uint32_t> JobsIn(const Holding& held, const P4InfoIndex& info) {
  std::set<uint32_t> out;
  for (const auto& [key, e] : held) {
    if (auto job = JobOf(e, info)) out.insert(*job);
  }
  return out;
}

std::vector<p4::v1::Update> Reconcile(const Holding& held, const Holding& want,
                                      const std::set<std::string>& scope) {
  std::vector<p4::v1::Update> deletes, modifies, inserts;
  for (const std::string& key : scope) {
    auto h = held.find(key);
    auto w = want.find(key);
    if (w == want.end()) {
      if (h != held.end() && !IsDefault(h->second)) {
        deletes.push_back(MakeUpdate(p4::v1::Update::DELETE, h->second));
      }
    } else if (h == held.end()) {
      inserts.push_back(MakeUpdate(
          IsDefault(w->second) ? p4::v1::Update::MODIFY : p4::v1::Update::INSERT, w->second));
    } else if (Normalized(h->second) != Normalized(w->second)) {
      modifies.push_back(MakeUpdate(p4::v1::Update::MODIFY, w->second));
    }
  }
  std::vector<p4::v1::Update> out = std::move(deletes);
  out.insert(out.end(), modifies.begin(), modifies.end());
  out.insert(out.end(), inserts.begin(), inserts.end());
  return out;
}

std::vector<p4::v1::Update> PublishUpdates(const Holding& held, const SwitchEntities& want,
                                           uint32_t job, const P4InfoIndex& info) {
  const Holding wanted = HoldingOf(want);
  std::set<std::string> scope = JobScope(held, {job}, info);
  for (const auto& [key, e] : wanted) scope.insert(key);
  return Reconcile(held, wanted, scope);
}

std::vector<p4::v1::Update> DeleteUpdates(const Holding& held, const std::set<uint32_t>& jobs,
                                          const P4InfoIndex& info) {
  return Reconcile(held, Holding{}, JobScope(held, jobs, info));
}

Holding Apply(Holding held, const std::vector<p4::v1::Update>& updates) {
  for (const p4::v1::Update& u : updates) {
    if (u.type() == p4::v1::Update::DELETE) {
      held.erase(KeyOf(u.entity()));
    } else {
      held[KeyOf(u.entity())] = u.entity();
    }
  }
  return held;
}

absl::Status Compare(const Holding& expected, const Holding& read, const P4InfoIndex& info,
                     const std::string& who) {
  for (const auto& [key, e] : expected) {
    auto it = read.find(key);
    if (it == read.end()) {
      return absl::DataLossError(absl::StrFormat("%s: read back without %s, which it should hold",
                                                 who, Describe(e, info)));
    }
    if (Normalized(it->second) != Normalized(e)) {
      return absl::DataLossError(absl::StrFormat("%s: %s reads back as %s, not %s", who,
                                                 Describe(e, info), Normalized(it->second),
                                                 Normalized(e)));
    }
  }
  for (const auto& [key, e] : read) {
    if (!expected.count(key) && !IsDefault(e)) {
      return absl::DataLossError(absl::StrFormat(
          "%s: holds %s, which was neither written nor there before", who, Describe(e, info)));
    }
  }
  return absl::OkStatus();
}

std::string CountUpdates(const std::vector<p4::v1::Update>& updates) {
  int entries = 0, defaults = 0, groups = 0;
  for (const p4::v1::Update& u : updates) {
    if (IsDefault(u.entity())) {
      ++defaults;
    } else if (u.entity().has_table_entry()) {
      ++entries;
    } else {
      ++groups;
    }
  }
  return absl::StrFormat(
      "%d %s, %d default %s, %d multicast %s", entries, entries == 1 ? "entry" : "entries",
      defaults, defaults == 1 ? "action" : "actions", groups, groups == 1 ? "group" : "groups");
}

}  // namespace grid::p4rt
