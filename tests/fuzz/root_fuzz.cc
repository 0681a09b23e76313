// Arbitrary frames into the root engine of a configured job (the testbed
// under SwitchML's plan, job 1, token 0). State carries over between inputs,
// so sequences are explored. Every frame the root sends must be a valid
// RESULT of the job.
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "grid/control.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "root/engine.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// Checks what the root sends instead of sending it.
class CheckingTransport final : public grid::Transport {
 public:
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    for (absl::Span<const uint8_t> f : frames) {
      grid::wire::FrameView v;
      Check(grid::wire::ParseFrame(f, &v) == grid::wire::WireError::kOk);
      Check(v.header.type == grid::wire::MessageType::kResult && v.header.job_id == 1);
    }
    return frames.size();
  }
  size_t Receive(size_t, absl::FunctionRef<void(absl::Span<const uint8_t>)>) override { return 0; }
  void WaitReadable(absl::Duration) override {}
  std::string Describe() const override { return "fuzz"; }
};

grid::root::RootEngine& Root() {
  static CheckingTransport transport;
  static grid::root::RootEngine* root = [] {
    using namespace grid;
    const topology::Topology topo = *topology::GenerateTopology("testbed");
    const planner::JobSpec job = *planner::MakeJob(topo, 8, std::nullopt, 1);
    const planner::Plan plan =
        *(*planner::PlannerRegistry::WithBuiltins().Create("switchml"))->Plan(topo, job);
    host_config::JobParams params;
    params.job_id = 1;
    params.token = 1;  // easy to hit: 0 is refused
    params.slots = 4;
    return new root::RootEngine(*control::BuildRootConfig(topo, plan, params), &transport);
  }();
  return *root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grid::root::RootEngine& root = Root();
  root.OnFrame({data, size});
  root.Flush();
  return 0;
}
