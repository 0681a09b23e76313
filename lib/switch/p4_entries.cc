// grid-switch/1 tables as entries for both P4 programs (one entry file, the
// same table, action and parameter names), and those entries as
// simple_switch_CLI commands for BMv2.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grid/switch.h"
#include "util/json.h"

namespace grid::sw {

namespace {

using Ordered = nlohmann::ordered_json;

Ordered Entry(const char* table, Ordered match, const char* action, Ordered params) {
  Ordered e;
  e["table"] = table;
  e["match"] = std::move(match);
  e["action"] = action;
  e["params"] = std::move(params);
  return e;
}

// What the P4 targets cannot hold: errors name the switch and the job.
absl::Status CheckP4Limits(const SwitchConfig& c, uint16_t id, const JobEntry::Aggregate& a) {
  if (id == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "switch \"%s\" job 0: the P4 targets multicast a job's results to group = job id, "
        "and group 0 means none; use job ids from 1",
        c.name));
  }
  if (a.elements != wire::kDefaultElements) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "switch \"%s\" job %d: the P4 targets aggregate %d elements per packet, not %d", c.name, id,
        wire::kDefaultElements, a.elements));
  }
  if (a.members.size() > static_cast<size_t>(kP4MaxMembers)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "switch \"%s\" job %d: %d members; the P4 targets take at most %d (a 32-bit bitmap)",
        c.name, id, a.members.size(), kP4MaxMembers));
  }
  if (a.slots > kP4MaxPool) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "switch \"%s\" job %d: a pool of %d slots; the P4 targets hold pools of at most %d, "
        "which the Tofino program's 11 bits of op_seq keep in order (docs/switch.md, \"Tofino\")",
        c.name, id, a.slots, kP4MaxPool));
  }
  if (uint64_t{a.slot_base} + a.slots > static_cast<uint64_t>(kP4MaxSlots)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("switch \"%s\" job %d: slots [%d, %d); the P4 targets have %d", c.name, id,
                        a.slot_base, uint64_t{a.slot_base} + a.slots, kP4MaxSlots));
  }
  for (const Member& m : a.members) {
    if (m.bit >= kP4MaxMembers) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "switch \"%s\" job %d member rank %d: bit %d; the P4 targets use bits 0-%d", c.name, id,
          m.rank, m.bit, kP4MaxMembers - 1));
    }
  }
  return absl::OkStatus();
}

void AddRoutes(const SwitchConfig& c, Ordered& entries) {
  for (const auto& [label, e] : c.label_routes) {
    entries.push_back(Entry("GridIngress.label_route", {{"hdr.grid.path", label}}, "set_nhop",
                            {{"port", e.port}, {"mac", wire::MacToString(e.mac)}}));
  }
  for (const auto& [ip, e] : c.ip_routes) {
    entries.push_back(Entry("GridIngress.ip_route", {{"hdr.ipv4.dst", wire::IpToString(ip)}},
                            "set_nhop", {{"port", e.port}, {"mac", wire::MacToString(e.mac)}}));
  }
  for (const auto& [port, ip] : c.hosts) {
    entries.push_back(Entry("GridIngress.edge", {{"standard_metadata.ingress_port", port}},
                            "set_edge", {{"ip", wire::IpToString(ip)}}));
  }
}

// An aggregating job: its job entry, a member and a replica entry per member,
// and its multicast group (group = job id, one replica per member).
void AddAggregate(uint16_t id, const JobEntry& job, Ordered& entries, Ordered& groups) {
  const JobEntry::Aggregate& a = *job.aggregate;
  entries.push_back(Entry("GridIngress.job", {{"hdr.grid.job_id", id}}, "job_aggregate",
                          {{"token", job.token},
                           {"fan_in", a.fan_in},
                           {"slot_base", a.slot_base},
                           {"slots", a.slots},
                           {"root_port", a.root.port},
                           {"root_ip", wire::IpToString(a.root.ip)},
                           {"root_mac", wire::MacToString(a.root.mac)},
                           {"root_node", a.root_node},
                           {"root_fan_in", a.root_fan_in},
                           {"to_root_label", a.to_root_label},
                           {"mcast_group", id}}));
  Ordered replicas = Ordered::array();
  for (const Member& m : a.members) {
    entries.push_back(Entry("GridIngress.member",
                            {{"hdr.grid.job_id", id}, {"hdr.grid.rank", m.rank}}, "set_member",
                            {{"bit_index", m.bit},
                             {"port", m.to.port},
                             {"ip", wire::IpToString(m.to.ip)},
                             {"mac", wire::MacToString(m.to.mac)},
                             {"label", m.result_label}}));
    entries.push_back(Entry("GridEgress.replica",
                            {{"hdr.grid.job_id", id}, {"standard_metadata.egress_rid", m.bit}},
                            "set_replica",
                            {{"rank", m.rank},
                             {"ip", wire::IpToString(m.to.ip)},
                             {"mac", wire::MacToString(m.to.mac)},
                             {"label", m.result_label}}));
    replicas.push_back({{"port", m.to.port}, {"rid", m.bit}});
  }
  groups.push_back({{"group", id}, {"replicas", replicas}});
}

// The threshold in the target's queue units: packets, or cells of
// `cell_bytes` with every queued packet as wide as the switch's widest frame
// (a queue of full frames marks at the same depth as on grid-switch).
absl::StatusOr<uint32_t> P4Threshold(const SwitchConfig& c, uint32_t cell_bytes) {
  uint64_t threshold = c.congestion_threshold;
  if (cell_bytes > 0) {
    uint16_t widest = wire::kDefaultElements;
    for (const auto& [id, job] : c.jobs) {
      if (job.aggregate) widest = std::max(widest, job.aggregate->elements);
    }
    threshold *= (wire::FrameBytes(widest) + cell_bytes - 1) / cell_bytes;
  }
  if (threshold > kP4MaxThreshold) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "switch \"%s\": congestion_threshold %d packets is %d %s; the P4 programs' threshold "
        "holds at most %d",
        c.name, c.congestion_threshold, threshold, cell_bytes > 0 ? "cells" : "packets",
        kP4MaxThreshold));
  }
  return static_cast<uint32_t>(threshold);
}

}  // namespace

absl::StatusOr<std::string> ConfigToP4Entries(const SwitchConfig& c, uint32_t queue_cell_bytes) {
  if (absl::Status s = ValidateConfig(c); !s.ok()) return s;
  // A job's own limits first: the threshold in cells depends on the jobs'
  // widths, which a job beyond the targets' 64 elements would make the
  // less clear error.
  for (const auto& [id, job] : c.jobs) {
    if (!job.aggregate) continue;
    if (absl::Status s = CheckP4Limits(c, id, *job.aggregate); !s.ok()) return s;
  }
  auto threshold = P4Threshold(c, queue_cell_bytes);
  if (!threshold.ok()) return threshold.status();
  Ordered doc;
  doc["format"] = "grid-p4-entries/1";
  doc["switch"] = c.name;
  doc["default_actions"] = Ordered::array(
      {Entry(
           "GridIngress.identity", Ordered::object(), "set_identity",
           {{"id", c.node_id}, {"ip", wire::IpToString(c.ip)}, {"mac", wire::MacToString(c.mac)}}),
       Entry("GridEgress.egress_identity", Ordered::object(), "set_egress_identity",
             {{"ip", wire::IpToString(c.ip)},
              {"mac", wire::MacToString(c.mac)},
              {"threshold", *threshold}})});
  Ordered entries = Ordered::array();
  AddRoutes(c, entries);
  Ordered groups = Ordered::array();
  for (const auto& [id, job] : c.jobs) {
    if (!job.aggregate) {
      entries.push_back(
          Entry("GridIngress.job", {{"hdr.grid.job_id", id}}, "job_only", {{"token", job.token}}));
      continue;
    }
    AddAggregate(id, job, entries, groups);
  }
  doc["table_entries"] = entries;
  doc["multicast_groups"] = groups;
  return doc.dump(2) + "\n";
}

}  // namespace grid::sw

namespace grid::sw {
namespace {

// A parameter or match value as simple_switch_CLI reads it: numbers in
// decimal, addresses as written (the CLI parses dotted quads and MACs).
absl::StatusOr<std::string> CliValue(const nlohmann::ordered_json& v, const std::string& where) {
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_string()) return v.get<std::string>();
  return absl::InvalidArgumentError(
      absl::StrFormat("P4 entries: %s: expected a number or an address", where));
}

absl::StatusOr<std::string> CliValues(const nlohmann::ordered_json& object,
                                      const std::string& where) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(absl::StrFormat("P4 entries: %s: expected an object", where));
  }
  std::string out;
  for (const auto& [key, value] : object.items()) {
    auto v = CliValue(value, where + "." + key);
    if (!v.ok()) return v.status();
    absl::StrAppend(&out, " ", *v);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> P4EntriesToBmv2Commands(std::string_view entries_json) {
  auto parsed = util::ParseJson<Ordered>(entries_json, "P4 entries");
  if (!parsed.ok()) return parsed.status();
  const Ordered doc = *std::move(parsed);
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "grid-p4-entries/1") {
    return absl::InvalidArgumentError("P4 entries: not a grid-p4-entries/1 document");
  }
  std::string out;
  auto entries = [&](const char* list, bool defaults) -> absl::Status {
    const Ordered& items = doc.contains(list) ? doc[list] : Ordered::array();
    if (!items.is_array()) {
      return absl::InvalidArgumentError(absl::StrFormat("P4 entries: %s must be a list", list));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const Ordered& e = items[i];
      const std::string where = absl::StrFormat("%s[%d]", list, i);
      if (!e.is_object() || !e.contains("table") || !e["table"].is_string() ||
          !e.contains("action") || !e["action"].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("P4 entries: %s: needs a table and an action", where));
      }
      auto params = CliValues(e.value("params", Ordered::object()), where + ".params");
      if (!params.ok()) return params.status();
      if (defaults) {
        absl::StrAppend(&out, "table_set_default ", e["table"].get<std::string>(), " ",
                        e["action"].get<std::string>(), *params, "\n");
        continue;
      }
      auto match = CliValues(e.value("match", Ordered::object()), where + ".match");
      if (!match.ok()) return match.status();
      absl::StrAppend(&out, "table_add ", e["table"].get<std::string>(), " ",
                      e["action"].get<std::string>(), *match, " =>", *params, "\n");
    }
    return absl::OkStatus();
  };
  if (absl::Status s = entries("default_actions", true); !s.ok()) return s;
  if (absl::Status s = entries("table_entries", false); !s.ok()) return s;
  // Multicast: one node per replica (its rid and port). simple_switch
  // numbers node handles from 0 in creation order, so this list is for a
  // switch whose replication engine is still empty.
  int handle = 0;
  const Ordered& groups =
      doc.contains("multicast_groups") ? doc["multicast_groups"] : Ordered::array();
  if (!groups.is_array()) {
    return absl::InvalidArgumentError("P4 entries: multicast_groups must be a list");
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const Ordered& group = groups[g];
    if (!group.is_object() || !group.contains("group") || !group["group"].is_number_unsigned() ||
        !group.contains("replicas") || !group["replicas"].is_array()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("P4 entries: multicast_groups[%d]: needs group and replicas", g));
    }
    const uint64_t id = group["group"].get<uint64_t>();
    absl::StrAppend(&out, "mc_mgrp_create ", id, "\n");
    for (const Ordered& r : group["replicas"]) {
      if (!r.is_object() || !r.contains("rid") || !r["rid"].is_number_unsigned() ||
          !r.contains("port") || !r["port"].is_number_unsigned()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("P4 entries: multicast_groups[%d]: a replica needs rid and port", g));
      }
      absl::StrAppend(&out, "mc_node_create ", r["rid"].get<uint64_t>(), " ",
                      r["port"].get<uint64_t>(), "\n");
      absl::StrAppend(&out, "mc_node_associate ", id, " ", handle++, "\n");
    }
  }
  return out;
}

}  // namespace grid::sw
