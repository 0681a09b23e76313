#include "p4runtime/entries.h"

#include <arpa/inet.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/json.h"

namespace grid::p4rt {
namespace {

using Json = nlohmann::ordered_json;

// The bits a canonical value needs: 0 for zero.
int64_t BitLength(std::string_view canonical) {
  int64_t top = 0;
  for (uint8_t b = static_cast<uint8_t>(canonical[0]); b != 0; b >>= 1) ++top;
  return static_cast<int64_t>(canonical.size() - 1) * 8 + top;
}

// A value the entries hold: a number, a dotted IPv4 address or a MAC, as
// big-endian bytes no wider than `bitwidth`.
absl::StatusOr<std::string> Encode(const Json& v, int32_t bitwidth, const std::string& where) {
  std::string bytes;
  if (v.is_number_unsigned()) {
    uint64_t n = v.get<uint64_t>();
    for (int i = 0; i < 8; ++i, n >>= 8) bytes.insert(bytes.begin(), static_cast<char>(n & 0xff));
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    in_addr ip{};
    if (::inet_pton(AF_INET, s.c_str(), &ip) == 1) {
      bytes.assign(reinterpret_cast<const char*>(&ip), 4);  // network order
    } else {
      const std::vector<std::string> parts = absl::StrSplit(s, ':');
      if (parts.size() != 6) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: \"%s\" is neither a number, an IPv4 address nor a MAC", where, s));
      }
      for (const std::string& p : parts) {
        char* end = nullptr;
        const long b = std::strtol(p.c_str(), &end, 16);
        if (p.empty() || p.size() > 2 || *end != '\0' || b < 0) {
          return absl::InvalidArgumentError(absl::StrFormat("%s: \"%s\" is not a MAC", where, s));
        }
        bytes.push_back(static_cast<char>(b));
      }
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected a number or an address", where));
  }
  bytes = Canonical(bytes);
  if (BitLength(bytes) > bitwidth) {
    return absl::OutOfRangeError(
        absl::StrFormat("%s: %s does not fit the field's %d bits", where, v.dump(), bitwidth));
  }
  return bytes;
}

// A replica's port. P4Runtime 1.4 deprecates the integer `egress_port` for
// the bytes `port`; BMv2's PI server takes the integer, and a switch may
// answer either.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void SetPort(p4::v1::Replica& r, uint32_t port) { r.set_egress_port(port); }
uint32_t PortOf(const p4::v1::Replica& r) {
  if (r.port_kind_case() != p4::v1::Replica::kPort) return r.egress_port();
  uint32_t port = 0;
  for (unsigned char c : r.port()) port = (port << 8) | c;
  return port;
}
#pragma GCC diagnostic pop

std::string Hex(std::string_view bytes) {
  std::string out = "0x";
  for (unsigned char c : bytes) absl::StrAppendFormat(&out, "%02x", c);
  return out;
}

// One entry of the document into a TableEntry.
absl::StatusOr<p4::v1::TableEntry> Entry(const Json& e, const P4InfoIndex& info,
                                         const std::string& where, bool is_default) {
  if (!e.is_object() || !e.contains("table") || !e["table"].is_string() || !e.contains("action") ||
      !e["action"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": needs a table and an action"));
  }
  auto table = info.Table(e["table"].get<std::string>());
  if (!table.ok()) return absl::NotFoundError(absl::StrCat(where, ": ", table.status().message()));
  auto action = info.Action(e["action"].get<std::string>());
  if (!action.ok())
    return absl::NotFoundError(absl::StrCat(where, ": ", action.status().message()));
  if (!(*table)->actions.count((*action)->id)) {
    return absl::NotFoundError(absl::StrFormat("%s: table %s has no action %s in %s", where,
                                               (*table)->name, (*action)->name, info.what()));
  }
  p4::v1::TableEntry out;
  out.set_table_id((*table)->id);
  const Json match = e.value("match", Json::object());
  if (is_default) {
    out.set_is_default_action(true);
  } else {
    if (!match.is_object() || match.size() != (*table)->fields.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: table %s matches %d fields, the entry gives %d", where, (*table)->name,
          (*table)->fields.size(), match.is_object() ? match.size() : 0));
    }
    for (const auto& [name, value] : match.items()) {
      auto f = (*table)->fields.find(name);
      if (f == (*table)->fields.end()) {
        return absl::NotFoundError(absl::StrFormat("%s: table %s has no match field %s in %s",
                                                   where, (*table)->name, name, info.what()));
      }
      auto bytes = Encode(value, f->second.bitwidth, absl::StrCat(where, ".match.", name));
      if (!bytes.ok()) return bytes.status();
      p4::v1::FieldMatch* m = out.add_match();
      m->set_field_id(f->second.id);
      m->mutable_exact()->set_value(*bytes);
    }
  }
  p4::v1::Action* a = out.mutable_action()->mutable_action();
  a->set_action_id((*action)->id);
  const Json params = e.value("params", Json::object());
  if (!params.is_object() || params.size() != (*action)->params.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: action %s takes %d parameters, the entry gives %d", where, (*action)->name,
        (*action)->params.size(), params.is_object() ? params.size() : 0));
  }
  for (const auto& [name, value] : params.items()) {
    auto p = (*action)->params.find(name);
    if (p == (*action)->params.end()) {
      return absl::NotFoundError(absl::StrFormat("%s: action %s has no parameter %s in %s", where,
                                                 (*action)->name, name, info.what()));
    }
    auto bytes = Encode(value, p->second.bitwidth, absl::StrCat(where, ".params.", name));
    if (!bytes.ok()) return bytes.status();
    p4::v1::Action::Param* param = a->add_params();
    param->set_param_id(p->second.id);
    param->set_value(*bytes);
  }
  return out;
}

}  // namespace

std::string Canonical(std::string_view bytes) {
  size_t first = 0;
  while (first + 1 < bytes.size() && bytes[first] == 0) ++first;
  return bytes.empty() ? std::string(1, '\0') : std::string(bytes.substr(first));
}

absl::StatusOr<SwitchEntities> EntriesToEntities(std::string_view entries_json,
                                                 const P4InfoIndex& info, std::string_view what) {
  auto parsed = util::ParseJson<Json>(entries_json, std::string(what));
  if (!parsed.ok()) return parsed.status();
  const Json& doc = *parsed;
  if (!doc.is_object() || doc.value("format", "") != "grid-p4-entries/1") {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": not a grid-p4-entries/1 document"));
  }
  SwitchEntities out;
  for (const auto& [list, is_default] :
       {std::pair{"default_actions", true}, std::pair{"table_entries", false}}) {
    const Json items = doc.contains(list) ? doc[list] : Json::array();
    if (!items.is_array())
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(what), ": ", list, " must be a list"));
    for (size_t i = 0; i < items.size(); ++i) {
      auto e = Entry(items[i], info, absl::StrFormat("%s: %s[%d]", what, list, i), is_default);
      if (!e.ok()) return e.status();
      (is_default ? out.defaults : out.entries).push_back(*std::move(e));
    }
  }
  const Json groups = doc.contains("multicast_groups") ? doc["multicast_groups"] : Json::array();
  if (!groups.is_array())
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": multicast_groups must be a list"));
  for (size_t g = 0; g < groups.size(); ++g) {
    const Json& group = groups[g];
    if (!group.is_object() || !group.contains("group") || !group["group"].is_number_unsigned() ||
        !group.contains("replicas") || !group["replicas"].is_array()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: multicast_groups[%d]: needs group and replicas", what, g));
    }
    p4::v1::MulticastGroupEntry m;
    m.set_multicast_group_id(group["group"].get<uint32_t>());
    for (const Json& r : group["replicas"]) {
      if (!r.is_object() || !r.contains("rid") || !r["rid"].is_number_unsigned() ||
          !r.contains("port") || !r["port"].is_number_unsigned()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: multicast_groups[%d]: a replica needs rid and port", what, g));
      }
      p4::v1::Replica* replica = m.add_replicas();
      SetPort(*replica, r["port"].get<uint32_t>());
      replica->set_instance(r["rid"].get<uint32_t>());
    }
    out.groups.push_back(std::move(m));
  }
  return out;
}

std::string EntryKey(const p4::v1::TableEntry& e) {
  std::vector<std::pair<uint32_t, std::string>> match;
  for (const auto& m : e.match()) match.push_back({m.field_id(), Canonical(m.exact().value())});
  std::sort(match.begin(), match.end());
  std::string key = absl::StrCat(e.table_id(), e.is_default_action() ? "/default" : "");
  for (const auto& [id, v] : match) absl::StrAppend(&key, "/", id, "=", Hex(v));
  return key;
}

std::string DescribeEntry(const p4::v1::TableEntry& e, const P4InfoIndex& info) {
  const P4Table* t = info.TableById(e.table_id());
  std::vector<std::string> fields;
  for (const auto& m : e.match()) {
    std::string name = absl::StrCat("field ", m.field_id());
    if (t != nullptr) {
      for (const auto& [n, f] : t->fields) {
        if (f.id == m.field_id()) name = n;
      }
    }
    fields.push_back(absl::StrCat(name, "=", Hex(Canonical(m.exact().value()))));
  }
  return absl::StrCat(t != nullptr ? t->name : absl::StrCat("table ", e.table_id()),
                      e.is_default_action() ? " (default action)" : "", "{",
                      absl::StrJoin(fields, ", "), "}");
}

std::string NormalizedEntry(const p4::v1::TableEntry& e) {
  std::string s = EntryKey(e);
  const p4::v1::Action& a = e.action().action();
  std::vector<std::pair<uint32_t, std::string>> params;
  for (const auto& p : a.params()) params.push_back({p.param_id(), Canonical(p.value())});
  std::sort(params.begin(), params.end());
  absl::StrAppend(&s, " -> ", a.action_id());
  for (const auto& [id, v] : params) absl::StrAppend(&s, " ", id, "=", Hex(v));
  return s;
}

std::string NormalizedGroup(const p4::v1::MulticastGroupEntry& g) {
  std::vector<std::pair<uint32_t, uint32_t>> replicas;
  for (const auto& r : g.replicas()) replicas.push_back({PortOf(r), r.instance()});
  std::sort(replicas.begin(), replicas.end());
  std::string s = absl::StrCat("group ", g.multicast_group_id(), ":");
  for (const auto& [port, rid] : replicas) absl::StrAppend(&s, " ", port, "/", rid);
  return s;
}

}  // namespace grid::p4rt
