// Arbitrary bytes as the host side's textual inputs. The first byte picks the
// parser: 'W' a grid-worker/1 config, 'R' a grid-root/1 config, anything else
// a transport spec (udp, udp-link; parsed, never opened). Whatever parses
// must survive a JSON round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "grid/control.h"
#include "transport/udp.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'W') {
    auto c = grid::host_config::ParseWorkerConfigJson(text);
    if (!c.ok()) {
      Check(!c.status().message().empty());
      return 0;
    }
    const std::string json = grid::host_config::WorkerConfigToJson(*c);
    auto again = grid::host_config::ParseWorkerConfigJson(json);
    Check(again.ok() && grid::host_config::WorkerConfigToJson(*again) == json);
  } else if (data[0] == 'R') {
    auto c = grid::host_config::ParseRootConfigJson(text);
    if (!c.ok()) {
      Check(!c.status().message().empty());
      return 0;
    }
    const std::string json = grid::host_config::RootConfigToJson(*c);
    auto again = grid::host_config::ParseRootConfigJson(json);
    Check(again.ok() && grid::host_config::RootConfigToJson(*again) == json);
  } else {
    auto spec = grid::transport::ParseUdpSpec(text);
    if (!spec.ok()) Check(!spec.status().message().empty());
  }
  return 0;
}
