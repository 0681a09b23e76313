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

absl::StatusOr<const P4Table*> P4InfoIndex::Table(std::string_view name) const {
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    if (auto alias = aliases_.find(absl::StrCat("table:", std::string(name)));
        alias != aliases_.end()) {
      it = tables_.find(alias->second);
    }
  }
  if (it == tables_.end()) {
    return absl::NotFoundError(absl::StrFormat(
        "%s has no table %s (the program changed?); it has: %s", what_, name, Names(tables_)));
  }
  return &it->second;
}

absl::StatusOr<const P4Action*> P4InfoIndex::Action(std::string_view name) const {
  auto it = actions_.find(name);
  if (it == actions_.end()) {
    if (auto alias = aliases_.find(absl::StrCat("action:", std::string(name)));
        alias != aliases_.end()) {
      it = actions_.find(alias->second);
    }
  }
  if (it == actions_.end()) {
    return absl::NotFoundError(absl::StrFormat(
        "%s has no action %s (the program changed?); it has: %s", what_, name, Names(actions_)));
  }
  return &it->second;
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
