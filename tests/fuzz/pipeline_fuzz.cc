// Arbitrary frames into a configured switch (S2 of the testbed, aggregating
// three workers with SwitchML's plan). The first byte picks the ingress
// port, the rest is the frame. Every GRID packet the switch emits must be a
// valid frame, and state carries over between inputs, so sequences of
// packets are explored too.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "grid/control.h"
#include "grid/planner.h"
#include "grid/switch.h"
#include "grid/topology.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

grid::sw::Pipeline& Switch() {
  static grid::sw::Pipeline* pipeline = [] {
    using namespace grid;
    const topology::Topology topo = *topology::GenerateTopology("testbed");
    const planner::JobSpec job = *planner::MakeJob(topo, 8, std::nullopt, 1);
    const planner::Plan plan =
        *(*planner::PlannerRegistry::WithBuiltins().Create("switchml"))->Plan(topo, job);
    host_config::JobParams params;
    params.job_id = 1;  // easy for the fuzzer to hit
    params.token = 1;  // easy to hit: 0 is refused
    params.slots = 4;
    auto configs = *control::BuildSwitchConfigs(topo, plan, params);
    return new sw::Pipeline(*sw::Pipeline::Create(configs.at(*topo.Find("S2"))));
  }();
  return *pipeline;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  grid::sw::Pipeline& p = Switch();
  std::vector<uint8_t> frame(data + 1, data + size);
  grid::sw::Output out;
  const uint64_t before = p.counters().total_drops();
  p.Process(absl::MakeSpan(frame), data[0] % 8, &out);
  for (const grid::sw::OutFrame& f : out.frames) {
    Check(f.port < p.config().num_ports);
    const auto bytes = out.Bytes(f, frame);
    Check(bytes.size() == f.length);
    grid::wire::FrameView view;
    const grid::wire::WireError e = grid::wire::ParseFrame(bytes, &view);
    // What the switch builds itself is always valid GRID.
    if (!f.is_input) Check(e == grid::wire::WireError::kOk);
  }
  Check(p.counters().total_drops() >= before);
  return 0;
}
