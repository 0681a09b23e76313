// grid-switch/1 tables as entries for p4/v1model/grid.p4 (and the table and
// action names the TNA program uses).
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "grid/switch.h"

namespace grid::sw {

absl::StatusOr<std::string> ConfigToP4Entries(const SwitchConfig& c) {
  if (absl::Status s = ValidateConfig(c); !s.ok()) return s;
  using Ordered = nlohmann::ordered_json;
  auto entry = [](const char* table, Ordered match, const char* action, Ordered params) {
    Ordered e;
    e["table"] = table;
    e["match"] = std::move(match);
    e["action"] = action;
    e["params"] = std::move(params);
    return e;
  };
  Ordered doc;
  doc["format"] = "grid-p4-entries/1";
  doc["switch"] = c.name;
  doc["default_actions"] = Ordered::array(
      {entry("GridIngress.identity", Ordered::object(), "set_identity",
             {{"id", c.node_id}, {"ip", IpToString(c.ip)}, {"mac", MacToString(c.mac)}}),
       entry("GridEgress.egress_identity", Ordered::object(), "set_egress_identity",
             {{"ip", IpToString(c.ip)},
              {"mac", MacToString(c.mac)},
              {"threshold", c.congestion_threshold}})});
  Ordered entries = Ordered::array();
  for (const auto& [label, e] : c.label_routes) {
    entries.push_back(entry("GridIngress.label_route", {{"hdr.grid.path", label}}, "set_nhop",
                            {{"port", e.port}, {"mac", MacToString(e.mac)}}));
  }
  for (const auto& [ip, e] : c.ip_routes) {
    entries.push_back(entry("GridIngress.ip_route", {{"hdr.ipv4.dst", IpToString(ip)}}, "set_nhop",
                            {{"port", e.port}, {"mac", MacToString(e.mac)}}));
  }
  Ordered groups = Ordered::array();
  for (const auto& [id, job] : c.jobs) {
    if (!job.aggregate) {
      entries.push_back(
          entry("GridIngress.job", {{"hdr.grid.job_id", id}}, "job_only", {{"token", job.token}}));
      continue;
    }
    const JobEntry::Aggregate& a = *job.aggregate;
    if (a.elements != wire::kDefaultElements) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "switch \"%s\" job %d: the P4 targets aggregate %d elements per packet, not %d", c.name,
          id, wire::kDefaultElements, a.elements));
    }
    if (a.members.size() > static_cast<size_t>(kP4MaxMembers)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "switch \"%s\" job %d: %d members; the P4 targets take at most %d (a 32-bit bitmap)",
          c.name, id, a.members.size(), kP4MaxMembers));
    }
    if (uint64_t{a.slot_base} + a.slots > static_cast<uint64_t>(kP4MaxSlots)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("switch \"%s\" job %d: slots [%d, %d); the P4 targets have %d", c.name,
                          id, a.slot_base, uint64_t{a.slot_base} + a.slots, kP4MaxSlots));
    }
    entries.push_back(entry("GridIngress.job", {{"hdr.grid.job_id", id}}, "job_aggregate",
                            {{"token", job.token},
                             {"fan_in", a.fan_in},
                             {"slot_base", a.slot_base},
                             {"slots", a.slots},
                             {"root_port", a.root.port},
                             {"root_ip", IpToString(a.root.ip)},
                             {"root_mac", MacToString(a.root.mac)},
                             {"root_node", a.root_node},
                             {"root_fan_in", a.root_fan_in},
                             {"to_root_label", a.to_root_label},
                             {"mcast_group", id}}));
    Ordered replicas = Ordered::array();
    for (const Member& m : a.members) {
      if (m.bit >= kP4MaxMembers) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "switch \"%s\" job %d member rank %d: bit %d; the P4 targets use bits 0-%d", c.name, id,
            m.rank, m.bit, kP4MaxMembers - 1));
      }
      entries.push_back(entry("GridIngress.member",
                              {{"hdr.grid.job_id", id}, {"hdr.grid.rank", m.rank}}, "set_member",
                              {{"bit_mask", uint32_t{1} << m.bit},
                               {"bit_index", m.bit},
                               {"port", m.to.port},
                               {"ip", IpToString(m.to.ip)},
                               {"mac", MacToString(m.to.mac)},
                               {"label", m.result_label}}));
      entries.push_back(entry("GridEgress.replica",
                              {{"hdr.grid.job_id", id}, {"standard_metadata.egress_rid", m.bit}},
                              "set_replica",
                              {{"rank", m.rank},
                               {"ip", IpToString(m.to.ip)},
                               {"mac", MacToString(m.to.mac)},
                               {"label", m.result_label}}));
      replicas.push_back({{"port", m.to.port}, {"rid", m.bit}});
    }
    groups.push_back({{"group", id}, {"replicas", replicas}});
  }
  doc["table_entries"] = entries;
  doc["multicast_groups"] = groups;
  return doc.dump(2) + "\n";
}

}  // namespace grid::sw
