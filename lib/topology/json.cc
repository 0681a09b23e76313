// Topology <-> JSON (docs/topology.md).
#include "util/json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "grid/topology.h"

namespace grid::topology {
namespace {

using Json = nlohmann::json;

absl::Status FieldError(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(where + ": " + what);
}

// Rejects fields not in `allowed`, so a typo is an error rather than a
// silently ignored setting.
absl::Status CheckFields(const Json& object, const std::string& where,
                         std::initializer_list<const char*> allowed) {
  if (!object.is_object()) return FieldError(where, "must be an object");
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) return FieldError(where, absl::StrFormat("unknown field \"%s\"", key));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GetString(const Json& object, const std::string& where,
                                      const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return FieldError(where + "." + key, "is required");
  if (!it->is_string()) return FieldError(where + "." + key, "must be a string");
  return it->get<std::string>();
}

absl::StatusOr<double> GetNumber(const Json& object, const std::string& where, const char* key,
                                 std::optional<double> fallback) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (fallback) return *fallback;
    return FieldError(where + "." + key, "is required");
  }
  if (!it->is_number()) return FieldError(where + "." + key, "must be a number");
  return it->get<double>();
}

absl::StatusOr<bool> GetBool(const Json& object, const std::string& where, const char* key,
                             bool fallback) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_boolean()) return FieldError(where + "." + key, "must be true or false");
  return it->get<bool>();
}

absl::StatusOr<Tier> ParseTier(const std::string& s, const std::string& where) {
  for (Tier t : {Tier::kNone, Tier::kTor, Tier::kAgg, Tier::kCore}) {
    if (s == TierName(t)) return t;
  }
  if (s == "edge" || s == "leaf") return Tier::kTor;
  if (s == "spine") return Tier::kCore;
  return FieldError(where, absl::StrFormat("unknown tier \"%s\" (tor, agg, core, none)", s));
}

absl::StatusOr<HostRole> ParseRole(const std::string& s, const std::string& where) {
  for (HostRole r : {HostRole::kIdle, HostRole::kWorker, HostRole::kRoot}) {
    if (s == HostRoleName(r)) return r;
  }
  return FieldError(where, absl::StrFormat("unknown role \"%s\" (worker, root, idle)", s));
}

absl::Status Rewhere(absl::Status s, const std::string& where) {
  return absl::InvalidArgumentError(where + ": " + std::string(s.message()));
}

absl::StatusOr<Topology> ParseTopology(const Json& doc);

}  // namespace

absl::StatusOr<Topology> ParseTopologyJson(std::string_view text) {
  // No exceptions: the parse does not throw, and every field is
  // type-checked before it is read.
  auto doc = util::ParseJson<Json>(text, "topology JSON");
  if (!doc.ok()) return doc.status();
  return ParseTopology(*doc);
}

namespace {

absl::StatusOr<Node> ParseSwitch(const Json& s, const std::string& where) {
  if (absl::Status st =
          CheckFields(s, where, {"name", "tier", "programmable", "capacity_gbps", "slots"});
      !st.ok()) {
    return st;
  }
  Node node;
  node.kind = NodeKind::kSwitch;
  auto n = GetString(s, where, "name");
  if (!n.ok()) return n.status();
  node.name = *n;
  if (s.contains("tier")) {
    auto t = GetString(s, where, "tier");
    if (!t.ok()) return t.status();
    auto tier = ParseTier(*t, where + ".tier");
    if (!tier.ok()) return tier.status();
    node.tier = *tier;
  }
  auto prog = GetBool(s, where, "programmable", false);
  if (!prog.ok()) return prog.status();
  node.programmable = *prog;
  auto cap = GetNumber(s, where, "capacity_gbps", 0.0);
  if (!cap.ok()) return cap.status();
  if (*cap < 0) {
    return FieldError(where + ".capacity_gbps", absl::StrFormat("must be >= 0 (got %g)", *cap));
  }
  node.capacity_gbps = *cap;
  auto slots = GetNumber(s, where, "slots", 0.0);
  if (!slots.ok()) return slots.status();
  // Range first: converting a double outside int32 is undefined.
  if (!(*slots >= 0 && *slots <= std::numeric_limits<int32_t>::max()) ||
      *slots != std::floor(*slots)) {
    return FieldError(where + ".slots",
                      absl::StrFormat("must be a whole number >= 0 (got %g)", *slots));
  }
  node.slots = static_cast<int32_t>(*slots);
  return node;
}

absl::StatusOr<Node> ParseHost(const Json& h, const std::string& where) {
  if (absl::Status st = CheckFields(h, where, {"name", "role"}); !st.ok()) return st;
  Node node;
  node.kind = NodeKind::kHost;
  auto n = GetString(h, where, "name");
  if (!n.ok()) return n.status();
  node.name = *n;
  if (h.contains("role")) {
    auto r = GetString(h, where, "role");
    if (!r.ok()) return r.status();
    auto role = ParseRole(*r, where + ".role");
    if (!role.ok()) return role.status();
    node.role = *role;
  }
  return node;
}

struct LinkDefaults {
  double gbps = 100;
  double latency_us = 1;
};

absl::Status AddLink(const Json& l, const std::string& where, const LinkDefaults& defaults,
                     Topology& topo) {
  if (absl::Status st = CheckFields(l, where, {"a", "b", "gbps", "latency_us"}); !st.ok()) {
    return st;
  }
  auto a = GetString(l, where, "a");
  if (!a.ok()) return a.status();
  auto b = GetString(l, where, "b");
  if (!b.ok()) return b.status();
  for (const auto& [field, end] : {std::pair{"a", *a}, std::pair{"b", *b}}) {
    if (!topo.Find(end)) {
      return FieldError(where + "." + field, absl::StrFormat("unknown node \"%s\"", end));
    }
  }
  auto gbps = GetNumber(l, where, "gbps", defaults.gbps);
  if (!gbps.ok()) return gbps.status();
  auto lat = GetNumber(l, where, "latency_us", defaults.latency_us);
  if (!lat.ok()) return lat.status();
  if (auto id = topo.AddLink(*a, *b, *gbps, *lat); !id.ok()) return Rewhere(id.status(), where);
  return absl::OkStatus();
}

absl::StatusOr<LinkDefaults> ParseDefaults(const Json& doc) {
  LinkDefaults d;
  auto it = doc.find("defaults");
  if (it == doc.end()) return d;
  if (absl::Status s = CheckFields(*it, "defaults", {"link_gbps", "latency_us"}); !s.ok()) {
    return s;
  }
  auto g = GetNumber(*it, "defaults", "link_gbps", d.gbps);
  if (!g.ok()) return g.status();
  auto l = GetNumber(*it, "defaults", "latency_us", d.latency_us);
  if (!l.ok()) return l.status();
  return LinkDefaults{*g, *l};
}

absl::StatusOr<Topology> ParseTopology(const Json& doc) {
  if (absl::Status s =
          CheckFields(doc, "topology", {"name", "defaults", "switches", "hosts", "links"});
      !s.ok()) {
    return s;
  }
  std::string name = "topology";
  if (doc.contains("name")) {
    auto n = GetString(doc, "topology", "name");
    if (!n.ok()) return n.status();
    name = *n;
  }
  auto defaults = ParseDefaults(doc);
  if (!defaults.ok()) return defaults.status();
  for (const char* section : {"switches", "hosts", "links"}) {
    if (!doc.contains(section)) return FieldError(section, "is required");
    if (!doc[section].is_array()) return FieldError(section, "must be an array");
  }
  Topology topo(name);
  for (const char* section : {"switches", "hosts"}) {
    const Json& nodes = doc[section];
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string where = absl::StrFormat("%s[%d]", section, i);
      auto node = std::string_view(section) == "switches" ? ParseSwitch(nodes[i], where)
                                                          : ParseHost(nodes[i], where);
      if (!node.ok()) return node.status();
      if (auto id = topo.AddNode(*std::move(node)); !id.ok()) return Rewhere(id.status(), where);
    }
  }
  const Json& links = doc["links"];
  for (size_t i = 0; i < links.size(); ++i) {
    if (absl::Status s = AddLink(links[i], absl::StrFormat("links[%d]", i), *defaults, topo);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = topo.Validate(); !s.ok()) return s;
  return topo;
}

}  // namespace

std::string TopologyToJson(const Topology& topo) {
  nlohmann::ordered_json doc;
  doc["name"] = topo.name();
  doc["switches"] = nlohmann::ordered_json::array();
  doc["hosts"] = nlohmann::ordered_json::array();
  doc["links"] = nlohmann::ordered_json::array();
  for (const Node& n : topo.nodes()) {
    nlohmann::ordered_json j;
    j["name"] = n.name;
    if (n.is_switch()) {
      j["tier"] = TierName(n.tier);
      j["programmable"] = n.programmable;
      j["capacity_gbps"] = n.capacity_gbps;
      j["slots"] = n.slots;
      doc["switches"].push_back(std::move(j));
    } else {
      j["role"] = HostRoleName(n.role);
      doc["hosts"].push_back(std::move(j));
    }
  }
  for (const Link& l : topo.links()) {
    nlohmann::ordered_json j;
    j["a"] = topo.node(l.a).name;
    j["b"] = topo.node(l.b).name;
    j["gbps"] = l.gbps;
    j["latency_us"] = l.latency_us;
    doc["links"].push_back(std::move(j));
  }
  return doc.dump(2) + "\n";
}

}  // namespace grid::topology
