// Writes the fuzzers' seed corpora into DIR/wire, DIR/topology and DIR/plan:
// valid inputs of each kind, for the fuzzers to mutate.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "grid/planner.h"
#include "grid/topology.h"
#include "grid/wire.h"

namespace {

bool Write(const std::filesystem::path& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

bool Write(const std::filesystem::path& path, const std::string& text) {
  return Write(path, text.data(), text.size());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code error;
  for (const char* sub : {"wire", "topology", "plan"}) {
    std::filesystem::create_directories(dir / sub, error);
    if (error) return 1;
  }
  for (uint8_t t = wire::kMinMessageType; t <= wire::kMaxMessageType; ++t) {
    wire::Header h;
    h.type = static_cast<wire::MessageType>(t);
    h.flags = wire::flags::kCopy;
    h.job_id = 7;
    h.job_token = 0x01020304;
    h.fan_in = 3;
    h.num_elements = t <= 3 ? 4 : 0;
    std::vector<uint8_t> payload(h.num_elements * wire::kElementBytes, 0x11);
    std::vector<uint8_t> frame(wire::FrameBytes(h.num_elements));
    if (!wire::EncodeFrame({}, h, payload, absl::MakeSpan(frame)).ok()) return 1;
    const std::string n = std::to_string(t);
    if (!Write(dir / "wire" / ("frame_" + n), frame.data(), frame.size()) ||
        !Write(dir / "wire" / ("datagram_" + n), frame.data() + wire::kGridOffset,
               frame.size() - wire::kGridOffset)) {
      return 1;
    }
  }
  const char* specs[] = {"testbed", "fattree:k=4,prog=random:0.5,seed=3",
                         "leafspine:spines=2,leaves=3,hosts=2,prog=tor,cap=fixed:400"};
  int i = 0;
  for (const char* spec : specs) {
    auto topo = topology::GenerateTopology(spec);
    if (!topo.ok()) return 1;
    if (!Write(dir / "topology" / ("spec_" + std::to_string(i)), std::string(spec)) ||
        !Write(dir / "topology" / ("json_" + std::to_string(i)), topology::TopologyToJson(*topo))) {
      return 1;
    }
    ++i;
  }
  auto testbed = topology::GenerateTopology("testbed");
  auto job = planner::MakeJob(*testbed, 8, std::nullopt, 1);
  if (!job.ok()) return 1;
  const auto registry = planner::PlannerRegistry::WithBuiltins();
  for (const std::string& name : registry.Names()) {
    auto plan = (*registry.Create(name))->Plan(*testbed, *job);
    if (!plan.ok() || !Write(dir / "plan" / name, planner::PlanToJson(*testbed, *plan))) return 1;
  }
  return 0;
}
