// Arbitrary bytes as a grid-p4-entries/1 document (what grid-tables --p4
// writes). Whatever parses becomes simple_switch_CLI commands, one per line,
// each a command BMv2's CLI knows.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "grid/switch.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto commands = grid::sw::P4EntriesToBmv2Commands(text);
  if (!commands.ok()) {
    Check(!commands.status().message().empty());
    return 0;
  }
  for (absl::string_view line : absl::StrSplit(*commands, '\n', absl::SkipEmpty())) {
    Check(absl::StartsWith(line, "table_set_default ") || absl::StartsWith(line, "table_add ") ||
          absl::StartsWith(line, "mc_mgrp_create ") || absl::StartsWith(line, "mc_node_create ") ||
          absl::StartsWith(line, "mc_node_associate "));
  }
  return 0;
}
