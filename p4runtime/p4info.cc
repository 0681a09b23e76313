#include "p4runtime/p4info.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace grid::p4rt {
namespace {

// Collects the parser's first error, so it can be returned.
class Collector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty())
      first = absl::StrFormat("line %d, column %d: %s", line + 1, column + 1, message);
  }
  std::string first;
};

template <typename Map>
std::string Names(const Map& m) {
  std::vector<std::string> names;
  for (const auto& [name, v] : m) names.push_back(name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<P4InfoIndex> P4InfoIndex::FromText(std::string_view text, std::string_view what) {
  P4InfoIndex index;
  index.what_ = std::string(what);
  google::protobuf::TextFormat::Parser parser;
  Collector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &index.p4info_)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": not a P4Info: ", errors.first));
  }
  for (const auto& a : index.p4info_.actions()) {
    P4Action action;
    action.id = a.preamble().id();
    action.name = a.preamble().name();
    for (const auto& p : a.params()) action.params[p.name()] = {p.id(), p.bitwidth()};
    index.action_ids_[action.id] = action.name;
    if (!a.preamble().alias().empty())
      index.aliases_["action:" + a.preamble().alias()] = action.name;
    index.actions_[action.name] = std::move(action);
  }
  for (const auto& t : index.p4info_.tables()) {
    P4Table table;
    table.id = t.preamble().id();
    table.name = t.preamble().name();
    for (const auto& f : t.match_fields()) {
      if (f.match_type() != p4::config::v1::MatchField::EXACT) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: table %s field %s: only exact matches are written by grid-controller", what,
            table.name, f.name()));
      }
      table.fields[f.name()] = {f.id(), f.bitwidth()};
    }
    for (const auto& ref : t.action_refs()) {
      table.actions[ref.id()] = ref.scope() == p4::config::v1::ActionRef::DEFAULT_ONLY;
    }
    index.table_ids_[table.id] = table.name;
    if (!t.preamble().alias().empty()) index.aliases_["table:" + t.preamble().alias()] = table.name;
    index.tables_[table.name] = std::move(table);
  }
  return index;
}

namespace {

// By full name, then by alias ("table:NAME" or "action:NAME" in `aliases`);
// NotFound names what is missing and what `what` has.
template <typename Map>
absl::StatusOr<const typename Map::mapped_type*> Find(
    const Map& by_name, const std::map<std::string, std::string, std::less<>>& aliases,
    const char* kind, std::string_view name, const std::string& what) {
  auto it = by_name.find(name);
  if (it == by_name.end()) {
    if (auto a = aliases.find(absl::StrCat(kind, ":", std::string(name))); a != aliases.end()) {
      it = by_name.find(a->second);
    }
  }
  if (it == by_name.end()) {
    return absl::NotFoundError(absl::StrFormat("%s has no %s %s (the program changed?); it has: %s",
                                               what, kind, name, Names(by_name)));
  }
  return &it->second;
}

}  // namespace

absl::StatusOr<const P4Table*> P4InfoIndex::Table(std::string_view name) const {
  return Find(tables_, aliases_, "table", name, what_);
}

absl::StatusOr<const P4Action*> P4InfoIndex::Action(std::string_view name) const {
  return Find(actions_, aliases_, "action", name, what_);
}

const P4Table* P4InfoIndex::TableById(uint32_t id) const {
  auto it = table_ids_.find(id);
  return it == table_ids_.end() ? nullptr : &tables_.find(it->second)->second;
}

const P4Action* P4InfoIndex::ActionById(uint32_t id) const {
  auto it = action_ids_.find(id);
  return it == action_ids_.end() ? nullptr : &actions_.find(it->second)->second;
}

}  // namespace grid::p4rt
