// Arbitrary bytes as a plan file for the paper's testbed. Whatever parses
// must be a valid plan that evaluates and survives a JSON round trip.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "grid/planner.h"
#include "grid/topology.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

const grid::topology::Topology& Testbed() {
  static const grid::topology::Topology topo = *grid::topology::GenerateTopology("testbed");
  return topo;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grid::planner;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto plan = ParsePlanJson(Testbed(), text);
  if (!plan.ok()) {
    Check(!plan.status().message().empty());
    return 0;
  }
  Check(ValidatePlan(Testbed(), *plan).ok());
  for (Model m : {Model::kPaper, Model::kLinks}) {
    auto e = Evaluate(Testbed(), *plan, m);
    Check(e.ok());
    for (double r : e->worker_gbps) Check(r >= 0 && r <= 1e6);
  }
  const std::string json = PlanToJson(Testbed(), *plan);
  auto again = ParsePlanJson(Testbed(), json);
  Check(again.ok());
  Check(PlanToJson(Testbed(), *again) == json);
  return 0;
}
