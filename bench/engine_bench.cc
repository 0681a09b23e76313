// The whole worker path, per core: a float32 tensor is quantized into chunks,
// sent through the transport to an aggregating switch and the root, and the
// results are dequantized back into the tensor. One rank's Communicator runs
// over the in-process loopback fabric (tests/support/loopback.h), with the
// reference switch pipeline and the root engine in the same process.
//
// "Per core" is gradient bytes over the CPU time of the whole process: the
// rank's progress thread, the switch pipeline it drives, the root's thread
// and the caller. A host that runs only the worker spends less; this is the
// cost of the path with nothing left out. BM_QuantizePacketize, the worker's
// inner loop alone (quantize into frames in memory), runs in the same binary
// and is the baseline every rate is printed against.
//
//   build/release/bench/engine_bench                 # 1 MiB and 16 MiB tensors
//   build/release/bench/engine_bench --sizes=small   # what the smoke test runs
#include <benchmark/benchmark.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench_common.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "grid/wire.h"
#include "ratio_reporter.h"
#include "root/engine.h"
#include "support/loopback.h"

namespace {

// One rank of a planned job on the loopback fabric, with its root running on
// a thread. The paper's testbed: W1 and the root (PS) hang off S1, so W1's
// chunks are summed at S1 and completed by the root, one hop each way.
class OneRankJob {
 public:
  static absl::StatusOr<std::unique_ptr<OneRankJob>> Create(uint32_t slots, uint16_t elements) {
    auto job = std::unique_ptr<OneRankJob>(new OneRankJob);
    absl::Status s = job->Start(slots, elements);
    if (!s.ok()) return s;
    return job;
  }

  ~OneRankJob() {
    comm_.reset();
    stop_.store(true);
    if (root_thread_.joinable()) root_thread_.join();
  }

  grid::Communicator& comm() { return *comm_; }

 private:
  OneRankJob() = default;

  absl::Status Start(uint32_t slots, uint16_t elements) {
    auto topo = grid::topology::GenerateTopology("testbed");
    if (!topo.ok()) return topo.status();
    topo_ = *std::move(topo);
    auto job = grid::planner::MakeJob(topo_, 1, std::nullopt, 1);
    if (!job.ok()) return job.status();
    auto planner = grid::planner::PlannerRegistry::WithBuiltins().Create("grid", {});
    if (!planner.ok()) return planner.status();
    auto plan = (*planner)->Plan(topo_, *job);
    if (!plan.ok()) return plan.status();
    grid::control::JobParams params;
    params.job_id = 3;
    params.token = 0x5eed;
    params.slots = slots;
    params.elements = elements;
    auto switches = grid::control::BuildSwitchConfigs(topo_, *plan, params);
    if (!switches.ok()) return switches.status();
    auto workers = grid::control::BuildWorkerConfigs(topo_, *plan, params);
    if (!workers.ok()) return workers.status();
    auto root = grid::control::BuildRootConfig(topo_, *plan, params);
    if (!root.ok()) return root.status();
    auto fabric = grid::testing::LoopbackFabric::Create(topo_, *switches);
    if (!fabric.ok()) return fabric.status();
    fabric_ = *std::move(fabric);
    auto root_transport = fabric_->Attach(root->node);
    if (!root_transport.ok()) return root_transport.status();
    root_transport_ = *std::move(root_transport);
    root_ = std::make_unique<grid::root::RootEngine>(*root, root_transport_.get());
    root_thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_relaxed)) {
        if (!root_->Poll()) root_transport_->WaitReadable(absl::Milliseconds(1));
      }
    });
    auto transport = fabric_->Attach((*workers)[0].node);
    if (!transport.ok()) return transport.status();
    auto comm = grid::Communicator::Create((*workers)[0], *std::move(transport), {});
    if (!comm.ok()) return comm.status();
    comm_ = *std::move(comm);
    return absl::OkStatus();
  }

  grid::topology::Topology topo_;
  std::unique_ptr<grid::testing::LoopbackFabric> fabric_;
  std::unique_ptr<grid::Transport> root_transport_;
  std::unique_ptr<grid::root::RootEngine> root_;
  std::thread root_thread_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<grid::Communicator> comm_;
};

// Tensor -> chunks -> switch -> root -> results -> tensor.
void BM_Allreduce(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto elements = static_cast<uint16_t>(state.range(1));
  auto job = OneRankJob::Create(/*slots=*/256, elements);
  if (!job.ok()) {
    state.SkipWithError(job.status().ToString().c_str());
    return;
  }
  const std::vector<float> in = grid::bench::Gradient(n);
  std::vector<float> out(n);
  for (auto _ : state) {
    absl::Status s = (*job)->comm().AllReduce(in.data(), out.data(), n, grid::DataType::kFloat32);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
  if (state.error_occurred()) return;
  // One rank: the sum is the input, to within the quantization step.
  for (size_t i = 0; i < n; i += 997) {
    if (std::abs(out[i] - in[i]) > 1e-6f + 1e-3f * std::abs(in[i])) {
      state.SkipWithError(absl::StrFormat("element %d: %g, expected %g", i, out[i], in[i]).c_str());
      break;
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * sizeof(float));
}

// The worker's inner loop alone (bench_common.h), at the same frame size.
void BM_QuantizePacketize(benchmark::State& state) {
  grid::bench::QuantizePacketize(state, state.range(0), static_cast<uint16_t>(state.range(1)),
                                 /*fan_in=*/1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  const bool small = grid::bench::TakeSizesFlag(argc, argv, args);
  // 256 Ki floats (1 MiB) and 4 Mi floats (16 MiB), the sizes allreduce_perf
  // and the comparisons use.
  const std::vector<int64_t> sizes =
      small ? std::vector<int64_t>{4096} : std::vector<int64_t>{1 << 18, 1 << 22};
  for (auto [name, fn] : {std::pair{"engine/QuantizePacketize", &BM_QuantizePacketize},
                          std::pair{"engine/Allreduce", &BM_Allreduce}}) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    // Every thread of the process counts: the rate is per core of it.
    b->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
    for (int64_t s : sizes) {
      for (int64_t e : {int64_t{grid::wire::kDefaultElements}, int64_t{grid::wire::kMaxElements}})
        b->Args({s, e});
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  grid::bench::RatioReporter reporter(grid::bench::RatioReporter::Measure::kRate,
                                      {"QuantizePacketize"});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return reporter.ExitCode("engine_bench");
}
