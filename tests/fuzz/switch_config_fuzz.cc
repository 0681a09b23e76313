// Arbitrary bytes as a grid-switch/1 table-entry file. Whatever parses must
// validate, build a pipeline, and survive a JSON round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "grid/switch.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = grid::sw::ParseConfigJson(text);
  if (!config.ok()) {
    Check(!config.status().message().empty());
    return 0;
  }
  Check(grid::sw::ValidateConfig(*config).ok());
  // Pools are bounded by the parser (slots <= 65536, elements <= 1024).
  Check(grid::sw::Pipeline::Create(*config).ok());
  const std::string json = grid::sw::ConfigToJson(*config);
  auto again = grid::sw::ParseConfigJson(json);
  Check(again.ok());
  Check(grid::sw::ConfigToJson(*again) == json);
  return 0;
}
