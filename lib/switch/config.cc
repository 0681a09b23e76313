// Switch table entries in the "grid-switch/1" JSON form (docs/switch.md);
// validate.cc checks them.
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/switch.h"
#include "switch/counter_fields.h"
#include "util/json.h"

namespace grid::sw {

namespace {

using Json = nlohmann::json;
using Ordered = nlohmann::ordered_json;

Ordered EndpointJson(const Endpoint& e) {
  return {{"port", e.port}, {"ip", wire::IpToString(e.ip)}, {"mac", wire::MacToString(e.mac)}};
}

absl::Status Error(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrFormat("switch config %s: %s", where, what));
}

// Reads an unsigned integer field in [0, max].
absl::StatusOr<uint64_t> Uint(const Json& o, const char* key, const std::string& where,
                              uint64_t max, std::optional<uint64_t> fallback = std::nullopt) {
  if (!o.is_object()) return Error(where, "must be an object");
  auto it = o.find(key);
  if (it == o.end()) {
    if (fallback) return *fallback;
    return Error(where + "." + key, "is required");
  }
  const bool whole =
      it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0);
  if (!whole || it->get<uint64_t>() > max) {
    return Error(where + "." + key, absl::StrFormat("must be a whole number in [0, %d]", max));
  }
  return it->get<uint64_t>();
}

absl::StatusOr<std::string> Str(const Json& o, const char* key, const std::string& where) {
  if (!o.is_object()) return Error(where, "must be an object");
  auto it = o.find(key);
  if (it == o.end()) return Error(where + "." + key, "is required");
  if (!it->is_string()) return Error(where + "." + key, "must be a string");
  return it->get<std::string>();
}

absl::StatusOr<Endpoint> ParseEndpoint(const Json& o, const std::string& where) {
  Endpoint e;
  auto port = Uint(o, "port", where, 65535);
  if (!port.ok()) return port.status();
  e.port = static_cast<uint16_t>(*port);
  auto ip = Str(o, "ip", where);
  if (!ip.ok()) return ip.status();
  auto ip_value = wire::ParseIp(*ip);
  if (!ip_value.ok()) return Error(where + ".ip", std::string(ip_value.status().message()));
  e.ip = *ip_value;
  auto mac = Str(o, "mac", where);
  if (!mac.ok()) return mac.status();
  auto mac_value = wire::ParseMac(*mac);
  if (!mac_value.ok()) return Error(where + ".mac", std::string(mac_value.status().message()));
  e.mac = *mac_value;
  return e;
}

// The switch's own fields: name, node id, addresses, ports and limits.
absl::Status ParseIdentity(const Json& doc, SwitchConfig& c) {
  auto name = Str(doc, "name", "");
  if (!name.ok()) return name.status();
  c.name = *name;
  auto node = Uint(doc, "node_id", "", 65535);
  if (!node.ok()) return node.status();
  c.node_id = static_cast<uint16_t>(*node);
  Json self = {{"port", 0}};
  for (const char* key : {"ip", "mac"}) {
    if (doc.contains(key)) self[key] = doc[key];
  }
  auto own = ParseEndpoint(self, "");
  if (!own.ok()) return own.status();
  c.ip = own->ip;
  c.mac = own->mac;
  auto ports = Uint(doc, "ports", "", 65535);
  if (!ports.ok()) return ports.status();
  c.num_ports = static_cast<uint16_t>(*ports);
  auto memory = Uint(doc, "slot_memory", "", 1u << 24, 0);
  if (!memory.ok()) return memory.status();
  c.slot_memory = static_cast<uint32_t>(*memory);
  constexpr uint64_t kDefaultCongestionThreshold = 64;
  auto threshold = Uint(doc, "congestion_threshold", "", 1u << 30, kDefaultCongestionThreshold);
  if (!threshold.ok()) return threshold.status();
  c.congestion_threshold = static_cast<uint32_t>(*threshold);
  if (auto it = doc.find("capacity_gbps"); it != doc.end()) {
    if (!it->is_number() || !(it->get<double>() >= 0) || !std::isfinite(it->get<double>())) {
      return Error("capacity_gbps", "must be a number >= 0 (0: unlimited)");
    }
    c.capacity_gbps = it->get<double>();
  }
  return absl::OkStatus();
}

// label_routes, ip_routes and hosts.
absl::Status ParseRoutes(const Json& doc, SwitchConfig& c) {
  const Json empty = Json::array();
  const Json& labels = doc.contains("label_routes") ? doc["label_routes"] : empty;
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string where = absl::StrFormat("label_routes[%d]", i);
    auto label = Uint(labels[i], "label", where, 65535);
    if (!label.ok()) return label.status();
    Json e = labels[i];
    if (!e.contains("ip")) e["ip"] = "0.0.0.0";
    auto ep = ParseEndpoint(e, where);
    if (!ep.ok()) return ep.status();
    if (!c.label_routes.emplace(static_cast<uint16_t>(*label), *ep).second) {
      return Error(where + ".label", "listed twice");
    }
  }
  const Json& ips = doc.contains("ip_routes") ? doc["ip_routes"] : empty;
  for (size_t i = 0; i < ips.size(); ++i) {
    const std::string where = absl::StrFormat("ip_routes[%d]", i);
    auto ep = ParseEndpoint(ips[i], where);
    if (!ep.ok()) return ep.status();
    if (!c.ip_routes.emplace(ep->ip, *ep).second) return Error(where + ".ip", "listed twice");
  }
  const Json& hosts = doc.contains("hosts") ? doc["hosts"] : empty;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string where = absl::StrFormat("hosts[%d]", i);
    Json e = hosts[i];
    if (!e.contains("mac")) e["mac"] = "00:00:00:00:00:00";
    auto ep = ParseEndpoint(e, where);
    if (!ep.ok()) return ep.status();
    if (!c.hosts.emplace(ep->port, ep->ip).second) return Error(where + ".port", "listed twice");
  }
  return absl::OkStatus();
}

absl::StatusOr<Member> ParseMember(const Json& mj, const std::string& mw) {
  Member member;
  auto rank = Uint(mj, "rank", mw, 65535);
  if (!rank.ok()) return rank.status();
  member.rank = static_cast<uint16_t>(*rank);
  auto bit = Uint(mj, "bit", mw, kMaxMembers - 1);
  if (!bit.ok()) return bit.status();
  member.bit = static_cast<uint8_t>(*bit);
  auto result = Uint(mj, "result_label", mw, 65535);
  if (!result.ok()) return result.status();
  member.result_label = static_cast<uint16_t>(*result);
  auto to = ParseEndpoint(mj, mw);
  if (!to.ok()) return to.status();
  member.to = *to;
  return member;
}

absl::StatusOr<JobEntry::Aggregate> ParseAggregate(const Json& a, const std::string& aw) {
  JobEntry::Aggregate agg;
  struct Field {
    const char* key;
    uint64_t max;
    uint64_t* out;
  };
  uint64_t fan_in = 0, elements = 0, base = 0, slots = 0, root_node = 0, root_fan_in = 0, label = 0;
  for (const Field& f :
       {Field{"fan_in", kMaxMembers, &fan_in}, Field{"elements", wire::kMaxElements, &elements},
        Field{"slot_base", 1u << 24, &base}, Field{"slots", wire::kMaxSlots, &slots},
        Field{"root_node", 65535, &root_node}, Field{"root_fan_in", 65535, &root_fan_in},
        Field{"to_root_label", 65535, &label}}) {
    auto v = Uint(a, f.key, aw, f.max);
    if (!v.ok()) return v.status();
    *f.out = *v;
  }
  agg.fan_in = static_cast<uint16_t>(fan_in);
  agg.elements = static_cast<uint16_t>(elements);
  agg.slot_base = static_cast<uint32_t>(base);
  agg.slots = static_cast<uint32_t>(slots);
  agg.root_node = static_cast<uint16_t>(root_node);
  agg.root_fan_in = static_cast<uint16_t>(root_fan_in);
  agg.to_root_label = static_cast<uint16_t>(label);
  if (auto it = a.find("best_effort"); it != a.end()) {
    if (!it->is_boolean()) return Error(aw + ".best_effort", "must be true or false");
    agg.best_effort = it->get<bool>();
  }
  if (!a.contains("root")) return Error(aw + ".root", "is required");
  auto root = ParseEndpoint(a["root"], aw + ".root");
  if (!root.ok()) return root.status();
  agg.root = *root;
  if (!a.contains("members") || !a["members"].is_array()) {
    return Error(aw + ".members", "must be an array");
  }
  for (size_t m = 0; m < a["members"].size(); ++m) {
    auto member = ParseMember(a["members"][m], absl::StrFormat("%s.members[%d]", aw, m));
    if (!member.ok()) return member.status();
    agg.members.push_back(*member);
  }
  return agg;
}

absl::StatusOr<JobEntry> ParseJob(const Json& j, const std::string& where) {
  JobEntry job;
  auto id = Uint(j, "job_id", where, 65535);
  if (!id.ok()) return id.status();
  job.job_id = static_cast<uint16_t>(*id);
  auto token = Uint(j, "token", where, 0xffffffffu);
  if (!token.ok()) return token.status();
  job.token = static_cast<uint32_t>(*token);
  if (j.contains("aggregate")) {
    auto agg = ParseAggregate(j["aggregate"], where + ".aggregate");
    if (!agg.ok()) return agg.status();
    job.aggregate = *std::move(agg);
  }
  if (j.contains("proxies")) {
    if (!j["proxies"].is_array()) return Error(where + ".proxies", "must be an array");
    for (size_t i = 0; i < j["proxies"].size(); ++i) {
      const std::string pw = absl::StrFormat("%s.proxies[%d]", where, i);
      auto owner = Uint(j["proxies"][i], "owner", pw, 65535);
      if (!owner.ok()) return owner.status();
      auto agg = ParseAggregate(j["proxies"][i], pw);
      if (!agg.ok()) return agg.status();
      if (!job.proxies.emplace(static_cast<uint16_t>(*owner), *std::move(agg)).second) {
        return Error(pw + ".owner", "listed twice");
      }
    }
  }
  return job;
}

absl::StatusOr<SwitchConfig> ParseConfig(const Json& doc) {
  if (!doc.is_object()) return Error("", "must be a JSON object");
  if (!doc.contains("format") || doc["format"] != "grid-switch/1") {
    return Error("format", "must be \"grid-switch/1\"");
  }
  for (const char* section : {"label_routes", "ip_routes", "jobs", "hosts"}) {
    if (doc.contains(section) && !doc[section].is_array()) {
      return Error(section, "must be an array");
    }
  }
  SwitchConfig c;
  if (absl::Status s = ParseIdentity(doc, c); !s.ok()) return s;
  if (absl::Status s = ParseRoutes(doc, c); !s.ok()) return s;
  const Json empty = Json::array();
  const Json& jobs = doc.contains("jobs") ? doc["jobs"] : empty;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string where = absl::StrFormat("jobs[%d]", i);
    auto job = ParseJob(jobs[i], where);
    if (!job.ok()) return job.status();
    const uint16_t id = job->job_id;
    if (!c.jobs.emplace(id, *std::move(job)).second) {
      return Error(where + ".job_id", "listed twice");
    }
  }
  if (absl::Status s = ValidateConfig(c); !s.ok()) return s;
  return c;
}

}  // namespace

std::string ConfigToJson(const SwitchConfig& c) {
  Ordered doc;
  doc["format"] = "grid-switch/1";
  doc["name"] = c.name;
  doc["node_id"] = c.node_id;
  doc["ip"] = wire::IpToString(c.ip);
  doc["mac"] = wire::MacToString(c.mac);
  doc["ports"] = c.num_ports;
  doc["slot_memory"] = c.slot_memory;
  doc["congestion_threshold"] = c.congestion_threshold;
  if (c.capacity_gbps > 0) doc["capacity_gbps"] = c.capacity_gbps;
  doc["label_routes"] = Ordered::array();
  for (const auto& [label, e] : c.label_routes) {
    doc["label_routes"].push_back(
        {{"label", label}, {"port", e.port}, {"mac", wire::MacToString(e.mac)}});
  }
  doc["ip_routes"] = Ordered::array();
  for (const auto& [ip, e] : c.ip_routes) doc["ip_routes"].push_back(EndpointJson(e));
  doc["hosts"] = Ordered::array();
  for (const auto& [port, ip] : c.hosts) {
    doc["hosts"].push_back({{"port", port}, {"ip", wire::IpToString(ip)}});
  }
  doc["jobs"] = Ordered::array();
  for (const auto& [id, job] : c.jobs) {
    Ordered j;
    j["job_id"] = id;
    j["token"] = job.token;
    auto aggregate_json = [](const JobEntry::Aggregate& a, Ordered agg) {
      agg["fan_in"] = a.fan_in;
      agg["elements"] = a.elements;
      agg["slot_base"] = a.slot_base;
      agg["slots"] = a.slots;
      agg["root_node"] = a.root_node;
      agg["root_fan_in"] = a.root_fan_in;
      agg["to_root_label"] = a.to_root_label;
      if (a.best_effort) agg["best_effort"] = true;
      agg["root"] = EndpointJson(a.root);
      agg["members"] = Ordered::array();
      for (const Member& m : a.members) {
        Ordered mj = EndpointJson(m.to);
        mj["rank"] = m.rank;
        mj["bit"] = m.bit;
        mj["result_label"] = m.result_label;
        agg["members"].push_back(mj);
      }
      return agg;
    };
    if (job.aggregate) j["aggregate"] = aggregate_json(*job.aggregate, Ordered::object());
    if (!job.proxies.empty()) {
      j["proxies"] = Ordered::array();
      for (const auto& [owner, a] : job.proxies) {
        j["proxies"].push_back(aggregate_json(a, Ordered{{"owner", owner}}));
      }
    }
    doc["jobs"].push_back(j);
  }
  return doc.dump(2) + "\n";
}

std::string CountersToJson(const Counters& counters) {
  Ordered doc;
  Ordered drops = Ordered::object();
  for (int i = 0; i < kNumDrops; ++i) {
    if (counters.drops[i] != 0) drops[DropName(i)] = counters.drops[i];
  }
  doc["drops"] = drops;
  doc["forwarded"] = counters.forwarded;
  doc["other_forwarded"] = counters.other_forwarded;
  Ordered jobs = Ordered::object();
  for (const auto& [id, j] : counters.jobs) {
    Ordered fields = Ordered::object();
    for (const JobCounterField& f : kJobCounterFields) fields[f.name] = j.*f.member;
    jobs[std::to_string(id)] = fields;
  }
  doc["jobs"] = jobs;
  Ordered ports = Ordered::array();
  for (const PortCounters& p : counters.ports) {
    ports.push_back({{"rx_packets", p.rx_packets},
                     {"rx_bytes", p.rx_bytes},
                     {"tx_packets", p.tx_packets},
                     {"tx_bytes", p.tx_bytes}});
  }
  doc["ports"] = ports;
  return doc.dump();
}

absl::StatusOr<SwitchConfig> ParseConfigJson(std::string_view text) {
  // No exceptions: the parse does not throw, and every field is
  // type-checked before it is read.
  auto doc = util::ParseJson<Json>(text, "switch config JSON");
  if (!doc.ok()) return doc.status();
  return ParseConfig(*doc);
}

}  // namespace grid::sw
