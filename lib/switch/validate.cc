// Switch table entries: the checks ValidateConfig makes before a pipeline
// takes them (docs/switch.md). Each error names the switch and the entry.
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "grid/switch.h"

namespace grid::sw {
namespace {

absl::Status Bad(const SwitchConfig& c, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrFormat("switch \"%s\": %s", c.name, what));
}

absl::Status CheckPort(const SwitchConfig& c, const Endpoint& e, const std::string& where) {
  if (e.port >= c.num_ports) {
    return Bad(c,
               absl::StrFormat("%s: port %d is not below ports (%d)", where, e.port, c.num_ports));
  }
  return absl::OkStatus();
}

absl::Status CheckRoutes(const SwitchConfig& c) {
  for (const auto& [label, e] : c.label_routes) {
    if (label == 0) return Bad(c, "label_routes: label 0 is reserved");
    if (absl::Status s = CheckPort(c, e, absl::StrFormat("label %d", label)); !s.ok()) return s;
  }
  for (const auto& [ip, e] : c.ip_routes) {
    if (absl::Status s = CheckPort(c, e, "ip route " + wire::IpToString(ip)); !s.ok()) return s;
  }
  for (const auto& [port, ip] : c.hosts) {
    if (absl::Status s = CheckPort(c, {port, ip, {}}, "host " + wire::IpToString(ip)); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status CheckMembers(const SwitchConfig& c, const JobEntry::Aggregate& a,
                          const std::string& where) {
  std::set<uint16_t> ranks;
  std::set<uint8_t> bits;
  for (const Member& m : a.members) {
    const std::string mw = absl::StrFormat("%s member rank %d", where, m.rank);
    if (m.rank == wire::kAllRanks) return Bad(c, mw + ": rank 65535 is reserved");
    if (!ranks.insert(m.rank).second) return Bad(c, mw + ": listed twice");
    if (!bits.insert(m.bit).second)
      return Bad(c, absl::StrFormat("%s: bit %d used twice", mw, m.bit));
    if (m.result_label == 0) return Bad(c, mw + ": result_label must be set");
    if (absl::Status s = CheckPort(c, m.to, mw); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// `pools`: the slot ranges of the aggregates checked so far, which this
// one's must not overlap; it joins them.
absl::Status CheckAggregate(const SwitchConfig& c, const JobEntry::Aggregate& a,
                            const std::string& where,
                            std::vector<std::pair<uint32_t, uint32_t>>& pools) {
  if (a.members.empty() || a.members.size() > kMaxMembers) {
    return Bad(c, absl::StrFormat("%s: %d members; an aggregating switch takes 1 to %d per job",
                                  where, a.members.size(), kMaxMembers));
  }
  if (a.fan_in != a.members.size()) {
    return Bad(c,
               absl::StrFormat("%s: fan_in %d but %d members", where, a.fan_in, a.members.size()));
  }
  if (a.elements == 0 || a.elements > wire::kMaxElements) {
    return Bad(c, absl::StrFormat("%s: elements %d outside [1, %d]", where, a.elements,
                                  wire::kMaxElements));
  }
  if (a.slots == 0 || a.slots > wire::kMaxSlots) {
    return Bad(c, absl::StrFormat("%s: slots %d outside [1, %d]", where, a.slots, wire::kMaxSlots));
  }
  if (uint64_t{a.slot_base} + a.slots > c.slot_memory) {
    return Bad(c, absl::StrFormat("%s: slots [%d, %d) exceed the switch's slot memory (%d)", where,
                                  a.slot_base, uint64_t{a.slot_base} + a.slots, c.slot_memory));
  }
  for (const auto& [base, size] : pools) {
    if (a.slot_base < base + size && base < a.slot_base + a.slots) {
      return Bad(c, absl::StrFormat("%s: slots [%d, %d) overlap another pool", where, a.slot_base,
                                    a.slot_base + a.slots));
    }
  }
  pools.emplace_back(a.slot_base, a.slots);
  if (a.root_fan_in == 0) return Bad(c, where + ": root_fan_in must be >= 1");
  if (a.to_root_label == 0) return Bad(c, where + ": to_root_label must be set");
  if (absl::Status s = CheckPort(c, a.root, where + " root"); !s.ok()) return s;
  return CheckMembers(c, a, where);
}

absl::Status CheckProxy(const SwitchConfig& c, uint16_t owner, const JobEntry::Aggregate& a,
                        const std::string& pw, std::vector<std::pair<uint32_t, uint32_t>>& pools) {
  if (owner == c.node_id) return Bad(c, pw + ": a switch is no proxy for itself");
  if (a.root_node != owner) {
    return Bad(c, absl::StrFormat("%s: root_node %d; a proxy's partial stands for its owner", pw,
                                  a.root_node));
  }
  if (a.root_fan_in != a.fan_in) {
    return Bad(c, absl::StrFormat("%s: root_fan_in %d but fan_in %d; a proxy's partial carries "
                                  "the owner's fan-in",
                                  pw, a.root_fan_in, a.fan_in));
  }
  if (!a.best_effort) return Bad(c, pw + ": a proxy is best effort");
  return CheckAggregate(c, a, pw, pools);
}

}  // namespace

absl::Status ValidateConfig(const SwitchConfig& c) {
  if (c.num_ports == 0) return Bad(c, "ports must be >= 1");
  if (!(c.capacity_gbps >= 0) || !std::isfinite(c.capacity_gbps)) {
    return Bad(c, "capacity_gbps must be a number >= 0 (0: unlimited)");
  }
  if (absl::Status s = CheckRoutes(c); !s.ok()) return s;
  std::vector<std::pair<uint32_t, uint32_t>> pools;
  for (const auto& [id, job] : c.jobs) {
    const std::string where = absl::StrFormat("job %d", id);
    if (job.job_id != id) return Bad(c, where + ": keyed under a different job id");
    if (job.token == 0) return Bad(c, where + ": token 0 is refused (docs/security.md)");
    if (job.aggregate) {
      if (absl::Status s = CheckAggregate(c, *job.aggregate, where, pools); !s.ok()) return s;
    }
    for (const auto& [owner, a] : job.proxies) {
      const std::string pw = absl::StrFormat("%s proxy for node %d", where, owner);
      if (absl::Status s = CheckProxy(c, owner, a, pw, pools); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace grid::sw
