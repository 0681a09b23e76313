// Arbitrary bytes as topology JSON and as a generator spec. Whatever loads
// must be a valid topology that survives a JSON round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "grid/topology.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// Generator specs can ask for tens of thousands of nodes; keep each run fast
// by skipping numbers above 32 (the parser's own limits are tested elsewhere).
bool Small(const std::string& s) {
  long value = 0;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      if (value > 32) return false;
    } else {
      value = 0;
    }
  }
  return true;
}

void RoundTrip(const grid::topology::Topology& topo) {
  Check(topo.Validate().ok());
  const std::string json = grid::topology::TopologyToJson(topo);
  auto again = grid::topology::ParseTopologyJson(json);
  Check(again.ok());
  Check(grid::topology::TopologyToJson(*again) == json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto topo = grid::topology::ParseTopologyJson(text); topo.ok()) {
    RoundTrip(*topo);
  } else {
    Check(!topo.status().message().empty());
  }
  if (Small(text) && text.find('/') == std::string::npos) {
    if (auto topo = grid::topology::GenerateTopology(text); topo.ok()) RoundTrip(*topo);
  }
  return 0;
}
