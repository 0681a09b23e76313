// A compiled P4 program's P4Info (p4c-bm2-ss --p4runtime-files, bf-p4c for
// Tofino), indexed by name: the contract between a program and
// grid-controller. Every id an entry needs is looked up here by the name
// ConfigToP4Entries writes, so a program whose tables, actions or fields
// were renamed is refused before anything is written, with the name that
// is missing (docs/deploy.md, "P4Runtime").
#ifndef GRID_P4RUNTIME_P4INFO_H_
#define GRID_P4RUNTIME_P4INFO_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "p4/config/v1/p4info.pb.h"

namespace grid::p4rt {

struct P4Field {  // a match field or an action parameter
  uint32_t id = 0;
  int32_t bitwidth = 0;
};

struct P4Table {
  uint32_t id = 0;
  std::string name;
  std::map<std::string, P4Field, std::less<>> fields;  // exact match fields, by name
  std::map<uint32_t, bool> actions;                    // action id: default only
};

struct P4Action {
  uint32_t id = 0;
  std::string name;
  std::map<std::string, P4Field, std::less<>> params;
};

class P4InfoIndex {
 public:
  // `text` in protobuf text format (.p4info.txtpb); `what` names it in errors.
  static absl::StatusOr<P4InfoIndex> FromText(std::string_view text, std::string_view what);

  // By full name ("GridIngress.job") or alias ("job"). NotFound names the
  // table, the P4Info and what it does have.
  absl::StatusOr<const P4Table*> Table(std::string_view name) const;
  absl::StatusOr<const P4Action*> Action(std::string_view name) const;
  // By id, for what a switch reads back.
  const P4Table* TableById(uint32_t id) const;
  const P4Action* ActionById(uint32_t id) const;

  const p4::config::v1::P4Info& p4info() const { return p4info_; }
  const std::string& what() const { return what_; }

 private:
  p4::config::v1::P4Info p4info_;
  std::string what_;
  std::map<std::string, P4Table, std::less<>> tables_;  // by full name
  std::map<std::string, P4Action, std::less<>> actions_;
  std::map<std::string, std::string, std::less<>> aliases_;  // alias -> full name, per kind
  std::map<uint32_t, std::string> table_ids_, action_ids_;
};

}  // namespace grid::p4rt

#endif  // GRID_P4RUNTIME_P4INFO_H_
