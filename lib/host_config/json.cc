// "grid-worker/1" and "grid-root/1": the configs the controller publishes
// for workers and the root (docs/worker.md).
#include "util/json.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "grid/host_config.h"

namespace grid::host_config {
namespace {

using Json = nlohmann::ordered_json;

absl::Status Error(const std::string& what, const std::string& where, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("%s config: %s: %s", what, where, why));
}

// A reader that remembers the first error, so field lists stay flat.
class Reader {
 public:
  Reader(const Json& doc, std::string what, std::string prefix = "")
      : doc_(doc), what_(std::move(what)), prefix_(std::move(prefix)) {}

  template <typename T>
  void Uint(const char* key, uint64_t max, T* out) {
    if (!status_.ok()) return;
    if (!doc_.contains(key)) {
      status_ = Error(what_, prefix_ + key, "missing");
      return;
    }
    const Json& v = doc_[key];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > max) {
      status_ = Error(what_, prefix_ + key, absl::StrFormat("must be an integer in [0, %d]", max));
      return;
    }
    *out = static_cast<T>(v.get<uint64_t>());
  }
  void Node(const char* key, topology::NodeId* out) {
    uint64_t v = 0;
    Uint(key, topology::kMaxNodes - 1, &v);
    *out = static_cast<topology::NodeId>(v);
  }
  void Ip(const char* key, uint32_t* out) {
    std::string text;
    if (!String(key, &text)) return;
    auto ip = wire::ParseIp(text);
    if (!ip.ok())
      status_ = Error(what_, prefix_ + key, std::string(ip.status().message()));
    else
      *out = *ip;
  }
  void Mac(const char* key, wire::MacAddress* out) {
    std::string text;
    if (!String(key, &text)) return;
    auto mac = wire::ParseMac(text);
    if (!mac.ok())
      status_ = Error(what_, prefix_ + key, std::string(mac.status().message()));
    else
      *out = *mac;
  }
  void Bool(const char* key, bool* out) {
    if (!status_.ok()) return;
    if (!doc_.contains(key) || !doc_[key].is_boolean()) {
      status_ = Error(what_, prefix_ + key, "must be true or false");
      return;
    }
    *out = doc_[key].get<bool>();
  }
  // A string that may be absent (then `out` is left alone).
  void OptionalString(const char* key, std::string* out) {
    if (status_.ok() && doc_.contains(key)) String(key, out);
  }
  // A list of strings that may be absent (then `out` is left alone).
  void OptionalStrings(const char* key, std::vector<std::string>* out) {
    if (!status_.ok() || !doc_.contains(key)) return;
    const auto& list = doc_[key];
    bool ok = list.is_array();
    for (size_t i = 0; ok && i < list.size(); ++i) ok = list[i].is_string();
    if (!ok) {
      status_ = Error(what_, prefix_ + key, "must be a list of strings");
      return;
    }
    out->clear();
    for (const auto& e : list) out->push_back(e.get<std::string>());
  }
  void Fail(const std::string& key, const std::string& why) {
    if (status_.ok()) status_ = Error(what_, prefix_ + key, why);
  }
  const absl::Status& status() const { return status_; }

 private:
  bool String(const char* key, std::string* out) {
    if (!status_.ok()) return false;
    if (!doc_.contains(key) || !doc_[key].is_string()) {
      status_ = Error(what_, prefix_ + key, "must be a string");
      return false;
    }
    *out = doc_[key].get<std::string>();
    return true;
  }

  const Json& doc_;
  std::string what_, prefix_;
  absl::Status status_;
};

absl::StatusOr<Json> Document(std::string_view text, const char* what, const char* format) {
  auto parsed = util::ParseJson<Json>(text, std::string(what) + " config");
  if (!parsed.ok()) return parsed.status();
  Json doc = *std::move(parsed);
  if (!doc.is_object()) return Error(what, "(document)", "not a JSON object");
  if (!doc.contains("format") || doc["format"] != format) {
    return Error(what, "format", absl::StrFormat("must be \"%s\"", format));
  }
  return doc;
}

}  // namespace

std::string WorkerConfigToJson(const WorkerConfig& c) {
  Json doc;
  doc["format"] = "grid-worker/1";
  doc["job_id"] = c.job_id;
  doc["token"] = c.token;
  doc["rank"] = c.rank;
  doc["world"] = c.world;
  doc["node"] = c.node;
  doc["aggregator"] = c.aggregator;
  doc["root"] = c.root;
  doc["up_label"] = c.up_label;
  doc["next_path"] = c.next_path;
  doc["fan_in"] = c.fan_in;
  doc["slots"] = c.slots;
  doc["elements"] = c.elements;
  doc["ip"] = wire::IpToString(c.ip);
  doc["aggregator_ip"] = wire::IpToString(c.aggregator_ip);
  doc["mac"] = wire::MacToString(c.mac);
  doc["next_hop_mac"] = wire::MacToString(c.next_hop_mac);
  if (!c.aggregator_name.empty()) doc["aggregator_name"] = c.aggregator_name;
  if (!c.root_name.empty()) doc["root_name"] = c.root_name;
  if (!c.nodes.empty()) doc["nodes"] = c.nodes;
  return doc.dump(2) + "\n";
}

absl::StatusOr<WorkerConfig> ParseWorkerConfigJson(std::string_view text) {
  auto doc = Document(text, "worker", "grid-worker/1");
  if (!doc.ok()) return doc.status();
  WorkerConfig c;
  Reader r(*doc, "worker");
  r.Uint("job_id", 65535, &c.job_id);
  r.Uint("token", 0xffffffffu, &c.token);
  if (r.status().ok() && c.token == 0) r.Fail("token", "0 is refused (docs/security.md)");
  r.Uint("rank", 65534, &c.rank);
  r.Uint("world", 65535, &c.world);
  r.Node("node", &c.node);
  r.Node("aggregator", &c.aggregator);
  r.Node("root", &c.root);
  r.Uint("up_label", 65535, &c.up_label);
  r.Uint("next_path", 65535, &c.next_path);
  r.Uint("fan_in", 65535, &c.fan_in);
  r.Uint("slots", wire::kMaxSlots, &c.slots);
  r.Uint("elements", wire::kMaxElements, &c.elements);
  r.Ip("ip", &c.ip);
  r.Ip("aggregator_ip", &c.aggregator_ip);
  r.Mac("mac", &c.mac);
  r.Mac("next_hop_mac", &c.next_hop_mac);
  r.OptionalString("aggregator_name", &c.aggregator_name);
  r.OptionalString("root_name", &c.root_name);
  r.OptionalStrings("nodes", &c.nodes);
  if (!r.status().ok()) return r.status();
  if (c.world == 0 || c.rank >= c.world) r.Fail("rank", "must be below world");
  if (c.slots == 0) r.Fail("slots", "must be at least 1");
  if (c.elements == 0) r.Fail("elements", "must be at least 1");
  if (c.fan_in == 0) r.Fail("fan_in", "must be at least 1");
  if (c.up_label == 0) r.Fail("up_label", "labels start at 1");
  if (!r.status().ok()) return r.status();
  return c;
}

std::string RootConfigToJson(const RootConfig& c) {
  Json doc;
  doc["format"] = "grid-root/1";
  doc["job_id"] = c.job_id;
  doc["token"] = c.token;
  doc["world"] = c.world;
  doc["node"] = c.node;
  doc["slots"] = c.slots;
  doc["elements"] = c.elements;
  doc["ip"] = wire::IpToString(c.ip);
  doc["mac"] = wire::MacToString(c.mac);
  if (!c.name.empty()) doc["name"] = c.name;
  Json list = Json::array();
  for (const RootConfig::Contributor& k : c.contributors) {
    Json e;
    e["node"] = k.node;
    e["is_switch"] = k.is_switch;
    e["rank"] = k.rank;
    e["result_label"] = k.result_label;
    e["ip"] = wire::IpToString(k.ip);
    e["next_hop_mac"] = wire::MacToString(k.next_hop_mac);
    if (!k.members.empty()) {
      Json members = Json::array();
      for (const RootConfig::Contributor::Member& m : k.members) {
        members.push_back({{"rank", m.rank}, {"ip", wire::IpToString(m.ip)}});
      }
      e["members"] = members;
    }
    if (k.proxy_ip != 0) e["proxy_ip"] = wire::IpToString(k.proxy_ip);
    list.push_back(e);
  }
  doc["contributors"] = list;
  return doc.dump(2) + "\n";
}

namespace {

// A switch contributor's members (best effort: the ranks whose DATA it may
// pass on), each below world and listed once among all switches.
absl::Status ParseMembers(const Json& members, const std::string& where, const RootConfig& c,
                          RootConfig::Contributor& k) {
  if (!k.is_switch || !members.is_array() || members.size() > 65535) {
    return Error("root", where + "members", "must be an array, and only on a switch");
  }
  for (size_t m = 0; m < members.size(); ++m) {
    const std::string mw = absl::StrFormat("%smembers[%d].", where, m);
    if (!members[m].is_object()) return Error("root", mw, "must be an object");
    RootConfig::Contributor::Member member;
    Reader mr(members[m], "root", mw);
    mr.Uint("rank", 65534, &member.rank);
    mr.Ip("ip", &member.ip);
    if (mr.status().ok() && member.rank >= c.world) mr.Fail("rank", "must be below world");
    // A rank is one switch's member at most: its passed DATA must count
    // for one share of one chunk.
    auto listed = [&](const RootConfig::Contributor& other) {
      for (const auto& o : other.members) {
        if (o.rank == member.rank) return true;
      }
      return false;
    };
    if (mr.status().ok() &&
        (listed(k) || std::any_of(c.contributors.begin(), c.contributors.end(), listed))) {
      mr.Fail("rank", "listed twice among the switches' members");
    }
    if (!mr.status().ok()) return mr.status();
    k.members.push_back(member);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RootConfig> ParseRootConfigJson(std::string_view text) {
  auto doc = Document(text, "root", "grid-root/1");
  if (!doc.ok()) return doc.status();
  RootConfig c;
  Reader r(*doc, "root");
  r.Uint("job_id", 65535, &c.job_id);
  r.Uint("token", 0xffffffffu, &c.token);
  if (r.status().ok() && c.token == 0) r.Fail("token", "0 is refused (docs/security.md)");
  r.Uint("world", 65535, &c.world);
  r.Node("node", &c.node);
  r.Uint("slots", wire::kMaxSlots, &c.slots);
  r.Uint("elements", wire::kMaxElements, &c.elements);
  r.Ip("ip", &c.ip);
  r.Mac("mac", &c.mac);
  r.OptionalString("name", &c.name);
  if (!r.status().ok()) return r.status();
  if (c.slots == 0) r.Fail("slots", "must be at least 1");
  if (c.elements == 0) r.Fail("elements", "must be at least 1");
  if (!doc->contains("contributors") || !(*doc)["contributors"].is_array() ||
      (*doc)["contributors"].empty() || (*doc)["contributors"].size() > 65535) {
    r.Fail("contributors", "must be an array of 1 to 65535 entries");
  }
  if (!r.status().ok()) return r.status();
  const Json& list = (*doc)["contributors"];
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = absl::StrFormat("contributors[%d].", i);
    if (!list[i].is_object()) return Error("root", where, "must be an object");
    RootConfig::Contributor k;
    Reader e(list[i], "root", where);
    e.Node("node", &k.node);
    e.Bool("is_switch", &k.is_switch);
    e.Uint("rank", 65534, &k.rank);
    e.Uint("result_label", 65535, &k.result_label);
    e.Ip("ip", &k.ip);
    e.Mac("next_hop_mac", &k.next_hop_mac);
    if (e.status().ok() && !k.is_switch && k.rank >= c.world) e.Fail("rank", "must be below world");
    if (e.status().ok() && k.result_label == 0) e.Fail("result_label", "labels start at 1");
    if (!e.status().ok()) return e.status();
    if (list[i].contains("members")) {
      if (absl::Status st = ParseMembers(list[i]["members"], where, c, k); !st.ok()) return st;
    }
    if (list[i].contains("proxy_ip")) {
      if (k.members.empty()) {
        return Error("root", where + "proxy_ip", "only on a switch with members (best effort)");
      }
      e.Ip("proxy_ip", &k.proxy_ip);
      if (!e.status().ok()) return e.status();
    }
    for (const RootConfig::Contributor& other : c.contributors) {
      if (k.is_switch ? other.is_switch && other.ip == k.ip
                      : !other.is_switch && other.rank == k.rank) {
        return Error("root", where + (k.is_switch ? "ip" : "rank"), "listed twice");
      }
    }
    c.contributors.push_back(k);
  }
  return c;
}

}  // namespace grid::host_config
