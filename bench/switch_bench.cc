// Switch pipeline throughput on one core: packets aggregated (DATA for which
// the switch is the aggregation node, 64 elements each) against packets the
// same pipeline only forwards by label, measured in the same run. Each packet
// is copied into a scratch buffer first in both cases (the forward path
// rewrites the frame in place), so the two differ only in the pipeline work.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "grid/control.h"
#include "grid/planner.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "ratio_reporter.h"

namespace {

using namespace grid;

struct Setup {
  sw::SwitchConfig config;
  std::vector<std::vector<uint8_t>> data;  // one template per member of S2
  std::vector<uint16_t> data_port;         // the port each member's chunks arrive on
  std::vector<uint8_t> transit;            // a PARTIAL that S2 forwards toward S1
  uint32_t slots = 256;
};

Setup Make() {
  const topology::Topology topo = *topology::GenerateTopology("testbed");
  const planner::JobSpec job = *planner::MakeJob(topo, 8, std::nullopt, 1);
  const planner::Plan plan =
      *(*planner::PlannerRegistry::WithBuiltins().Create("switchml"))->Plan(topo, job);
  host_config::JobParams params;
  params.job_id = 1;
  params.token = 42;
  params.slots = 256;
  const topology::NodeId s2 = *topo.Find("S2");
  Setup s;
  s.config = control::BuildSwitchConfigs(topo, plan, params)->at(s2);
  s.config.capacity_gbps = 0;  // no clock grants credit here: the pipeline alone
  const planner::PathLabels labels = planner::LabelPaths(plan);
  std::vector<uint8_t> payload(wire::kDefaultElements * 4, 1);
  for (int rank : {2, 3, 6}) {
    // A member's chunks count only from its own port and address
    // (docs/security.md).
    const sw::Member* member = nullptr;
    for (const sw::Member& m : s.config.jobs.at(1).aggregate->members) {
      if (m.rank == rank) member = &m;
    }
    wire::FrameAddress from;
    from.src_ip = member->to.ip;
    s.data_port.push_back(member->to.port);
    wire::Header h;
    h.job_id = 1;
    h.job_token = 42;
    h.rank = static_cast<uint16_t>(rank);
    h.agg_node = static_cast<uint16_t>(s2);
    h.path = labels.up[rank];
    h.fan_in = 3;
    h.num_elements = wire::kDefaultElements;
    std::vector<uint8_t> f(wire::FrameBytes(h.num_elements));
    (void)wire::EncodeFrame(from, h, payload, absl::MakeSpan(f));
    s.data.push_back(std::move(f));
  }
  wire::Header t;
  t.type = wire::MessageType::kPartial;
  t.job_id = 1;
  t.job_token = 42;
  t.agg_node = static_cast<uint16_t>(plan.job.root);
  t.path = labels.to_root.at(s2);
  t.fan_in = 3;
  t.num_elements = wire::kDefaultElements;
  s.transit.resize(wire::FrameBytes(t.num_elements));
  (void)wire::EncodeFrame({}, t, payload, absl::MakeSpan(s.transit));
  return s;
}

constexpr size_t kChunkOffset = wire::kGridOffset + offsetof(wire::WireHeader, chunk);
constexpr size_t kSlotOffset = wire::kGridOffset + offsetof(wire::WireHeader, slot);
constexpr size_t kFlagsOffset = wire::kGridOffset + offsetof(wire::WireHeader, flags);

void BM_Aggregate(benchmark::State& state) {
  Setup s = Make();
  sw::Pipeline p = *sw::Pipeline::Create(s.config);
  sw::Output out;
  std::vector<uint8_t> scratch(s.data[0].size());
  uint32_t chunk = 0;
  size_t member = 0;
  for (auto _ : state) {
    // Chunk k of the stream: slot k mod P, copy (k / P) mod 2.
    std::memcpy(scratch.data(), s.data[member].data(), scratch.size());
    const uint32_t c = wire::HostToNet32(chunk);
    std::memcpy(scratch.data() + kChunkOffset, &c, 4);
    const uint16_t slot = wire::HostToNet16(static_cast<uint16_t>(chunk % s.slots));
    std::memcpy(scratch.data() + kSlotOffset, &slot, 2);
    scratch[kFlagsOffset] = (chunk / s.slots) % 2 ? wire::flags::kCopy : 0;
    out.Clear();
    p.Process(absl::MakeSpan(scratch), s.data_port[member], &out);
    benchmark::DoNotOptimize(out.frames.data());
    if (++member == s.data.size()) {
      member = 0;
      ++chunk;
    }
  }
  if (p.counters().total_drops() != 0) state.SkipWithError("the pipeline dropped packets");
  state.SetItemsProcessed(state.iterations());
  state.counters["elements_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * wire::kDefaultElements,
                         benchmark::Counter::kIsRate);
}

void BM_Forward(benchmark::State& state) {
  Setup s = Make();
  sw::Pipeline p = *sw::Pipeline::Create(s.config);
  sw::Output out;
  std::vector<uint8_t> scratch(s.transit.size());
  for (auto _ : state) {
    std::memcpy(scratch.data(), s.transit.data(), scratch.size());
    out.Clear();
    p.Process(absl::MakeSpan(scratch), 0, &out);
    benchmark::DoNotOptimize(out.frames.data());
  }
  if (p.counters().forwarded != static_cast<uint64_t>(state.iterations())) {
    state.SkipWithError("not forwarded");
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("Switch/forward", BM_Forward);
  benchmark::RegisterBenchmark("Switch/aggregate", BM_Aggregate);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  grid::bench::RatioReporter reporter(grid::bench::RatioReporter::Measure::kTime, {"forward"});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return reporter.ExitCode("switch_bench");
}
