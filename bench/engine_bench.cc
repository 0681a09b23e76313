// The whole worker path, per core: a float32 tensor is quantized into chunks,
// sent through a transport to an aggregating switch and the root, and the
// results are dequantized back into the tensor. One rank's Communicator runs
// over a handoff fabric (handoff_fabric.h): lock-free rings to a network
// thread that runs the reference switch pipeline and the root engine.
//
// "Per core" is gradient bytes over the CPU time of the rank's threads (its
// progress threads and the caller): the process's CPU time less the network
// thread's, which stands for the switch and the root, elsewhere on a real
// fabric. The counter "process" divides by all of it, and "wall" is bytes
// over elapsed time: Allreduce_2t's "wall" over Allreduce_1t's is what a
// second progress thread (EngineOptions::threads, each with its own queue of
// the fabric) buys, and Allreduce_1t_poll's what polling before sleeping
// (EngineOptions::busy_poll) does, and Allreduce_1t_traced's what GRID_TRACE
// costs. BM_QuantizePacketize, the worker's inner loop alone
// (quantize into frames in memory), runs in the same binary and is the
// baseline every rate is printed against; Allreduce_1t is the second.
// RankFloor is the least a rank must do per chunk (scan, quantize,
// dequantize; nothing else), the bound on Allreduce_1t's ratio.
//
//   build/release/bench/engine_bench                 # 1 MiB and 16 MiB tensors
//   build/release/bench/engine_bench --sizes=small   # what the smoke test runs
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
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
#include "handoff_fabric.h"
#include "ratio_reporter.h"

namespace {

// One rank of a planned job: W1 of the paper's testbed, whose chunks are
// summed at S1 and completed by the root (the PS), one hop each way. S1 and
// the root run on the fabric's network thread.
class OneRankJob {
 public:
  // `trace_dir`: GRID_TRACE's directory ("": off).
  static absl::StatusOr<std::unique_ptr<OneRankJob>> Create(uint32_t slots, uint16_t elements,
                                                            uint32_t threads,
                                                            absl::Duration busy_poll,
                                                            const std::string& trace_dir) {
    auto job = std::unique_ptr<OneRankJob>(new OneRankJob);
    absl::Status s = job->Start(slots, elements, threads, busy_poll, trace_dir);
    if (!s.ok()) return s;
    return job;
  }

  ~OneRankJob() {
    comm_.reset();
    fabric_.reset();
  }

  grid::Communicator& comm() { return *comm_; }
  grid::bench::HandoffFabric& fabric() { return *fabric_; }

 private:
  OneRankJob() = default;

  absl::Status Start(uint32_t slots, uint16_t elements, uint32_t threads, absl::Duration busy_poll,
                     const std::string& trace_dir) {
    auto topo = grid::topology::GenerateTopology("testbed");
    if (!topo.ok()) return topo.status();
    topo_ = *std::move(topo);
    auto job = grid::planner::MakeJob(topo_, 1, std::nullopt, 1);
    if (!job.ok()) return job.status();
    auto planner = grid::planner::PlannerRegistry::WithBuiltins().Create("grid", {});
    if (!planner.ok()) return planner.status();
    auto plan = (*planner)->Plan(topo_, *job);
    if (!plan.ok()) return plan.status();
    grid::host_config::JobParams params;
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
    const grid::topology::NodeId worker = (*workers)[0].node;
    const grid::topology::NodeId s = topo_.neighbors(worker)[0].node;
    auto config = switches->find(s);
    if (config == switches->end()) return absl::InternalError("the rank's switch has no tables");
    int worker_port = -1, root_port = -1;
    const auto links = topo_.neighbors(s);
    for (size_t p = 0; p < links.size(); ++p) {
      if (links[p].node == worker) worker_port = static_cast<int>(p);
      if (links[p].node == root->node) root_port = static_cast<int>(p);
    }
    if (worker_port < 0 || root_port < 0) {
      return absl::InternalError("the rank and the root do not share a switch");
    }
    auto fabric =
        grid::bench::HandoffFabric::Create(config->second, static_cast<uint16_t>(worker_port),
                                           static_cast<uint16_t>(root_port), *root, threads);
    if (!fabric.ok()) return fabric.status();
    fabric_ = *std::move(fabric);
    grid::CommunicatorOptions options;
    options.engine.threads = threads;
    options.engine.busy_poll = busy_poll;
    options.engine.trace_dir = trace_dir;
    auto comm = grid::Communicator::Create((*workers)[0], fabric_->TakeWorkerLanes(), options);
    if (!comm.ok()) return comm.status();
    comm_ = *std::move(comm);
    return absl::OkStatus();
  }

  grid::topology::Topology topo_;
  std::unique_ptr<grid::bench::HandoffFabric> fabric_;
  std::unique_ptr<grid::Communicator> comm_;
};

absl::Duration ProcessCpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return absl::DurationFromTimespec(ts);
}

// Tensor -> chunks -> switch -> root -> results -> tensor. The time of an
// iteration is the CPU the rank's threads used (the process's, less the
// network thread's), so the rate is gradient bytes per second of a rank's
// core; the counter "process" is the same bytes over the whole process's
// CPU, the network thread included; "wall" over elapsed time.
void Allreduce(benchmark::State& state, uint32_t threads,
               absl::Duration busy_poll = absl::ZeroDuration(), const std::string& trace_dir = "") {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto elements = static_cast<uint16_t>(state.range(1));
  auto job = OneRankJob::Create(/*slots=*/256, elements, threads, busy_poll, trace_dir);
  if (!job.ok()) {
    state.SkipWithError(job.status().ToString().c_str());
    return;
  }
  const std::vector<float> in = grid::bench::Gradient(n);
  std::vector<float> out(n);
  absl::Duration all, wall;
  for (auto _ : state) {
    const absl::Duration cpu0 = ProcessCpu(), net0 = (*job)->fabric().NetworkCpu();
    const absl::Time start = absl::Now();
    absl::Status s = (*job)->comm().AllReduce(in.data(), out.data(), n, grid::DataType::kFloat32);
    wall += absl::Now() - start;
    const absl::Duration cpu = ProcessCpu() - cpu0;
    const absl::Duration rank = cpu - ((*job)->fabric().NetworkCpu() - net0);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
    benchmark::ClobberMemory();
    all += cpu;
    state.SetIterationTime(absl::ToDoubleSeconds(rank));
  }
  if (state.error_occurred()) return;
  // One rank: the sum is the input, to within the quantization step.
  for (size_t i = 0; i < n; i += 997) {
    if (std::abs(out[i] - in[i]) > 1e-6f + 1e-3f * std::abs(in[i])) {
      state.SkipWithError(absl::StrFormat("element %d: %g, expected %g", i, out[i], in[i]).c_str());
      break;
    }
  }
  const double bytes = static_cast<double>(state.iterations()) * n * sizeof(float);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["process"] = benchmark::Counter(bytes / absl::ToDoubleSeconds(all));
  state.counters["wall"] = benchmark::Counter(bytes / absl::ToDoubleSeconds(wall));
}

void BM_Allreduce_1t(benchmark::State& state) { Allreduce(state, 1); }
// Polling 20 µs before sleeping (EngineOptions::busy_poll).
void BM_Allreduce_1t_poll(benchmark::State& state) { Allreduce(state, 1, absl::Microseconds(20)); }
// With GRID_TRACE on: what recording a lane's timeline costs (the trace is
// written when the job ends, outside the timed allreduces).
void BM_Allreduce_1t_traced(benchmark::State& state) {
  const std::string dir = absl::StrFormat("/tmp/engine_bench_trace_%d", getpid());
  Allreduce(state, 1, absl::ZeroDuration(), dir);
  std::filesystem::remove_all(dir);
}
void BM_Allreduce_2t(benchmark::State& state) { Allreduce(state, 2); }
void BM_Allreduce_4t(benchmark::State& state) { Allreduce(state, 4); }

// The worker's inner loop alone (bench_common.h), at the same frame size.
void BM_QuantizePacketize(benchmark::State& state) {
  grid::bench::QuantizePacketize(state, state.range(0), static_cast<uint16_t>(state.range(1)),
                                 /*fan_in=*/1);
}

// What any rank must do per chunk under GRID's wire protocol, and nothing
// else: scan the chunk one pool ahead for the exponent it proposes, write the
// headers and quantize the chunk into a frame, and dequantize a result of the
// same size back into the tensor. There is no transport, no switch and no
// bookkeeping, and the "result" is the frame just written, still in L1, so
// this is an optimistic floor on the rank's CPU: Allreduce_1t can at best
// match it, and its ratio to QuantizePacketize bounds Allreduce_1t's.
void BM_RankFloor(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto per = static_cast<uint16_t>(state.range(1));
  constexpr size_t kPool = 256;  // Allreduce's slots
  constexpr size_t kRing = 512;  // frames in flight, as the handoff ring holds
  const std::vector<float> in = grid::bench::Gradient(n);
  std::vector<float> out(n);
  const size_t chunks = n / per, frame_bytes = grid::wire::FrameBytes(per);
  std::vector<uint8_t> ring(kRing * frame_bytes);
  const grid::wire::FrameAddress address;
  grid::wire::Header h;
  h.num_elements = per;
  h.fan_in = 1;
  auto exponent = [&](size_t c) {
    auto e = grid::numerics::BlockExponent({in.data() + c * per, per});
    return e.ok() ? *e : uint8_t{0};
  };
  std::vector<uint8_t> agreed(chunks);
  for (auto _ : state) {
    // The first pool's proposals go out in the probe round.
    for (size_t c = 0; c < std::min(chunks, kPool); ++c) agreed[c] = exponent(c);
    for (size_t c = 0; c < chunks; ++c) {
      h.exponent = agreed[c];
      h.next_exponent = 0;
      if (c + kPool < chunks) h.next_exponent = agreed[c + kPool] = exponent(c + kPool);
      h.chunk = static_cast<uint32_t>(c);
      h.slot = static_cast<uint16_t>(c % kPool);
      uint8_t* frame = ring.data() + (c % kRing) * frame_bytes;
      if (!grid::wire::WriteFrameHeaders(address, h, {frame, frame_bytes}).ok() ||
          !grid::numerics::QuantizeToWire({in.data() + c * per, per}, h.exponent, 1,
                                          frame + grid::wire::kPayloadOffset)
               .ok() ||
          !grid::numerics::DequantizeFromWire(frame + grid::wire::kPayloadOffset, h.exponent, 1,
                                              {out.data() + c * per, per})
               .ok()) {
        state.SkipWithError("rank floor");
        return;
      }
    }
    benchmark::ClobberMemory();
  }
  for (size_t i = 0; i < chunks * per; i += 997) {
    if (std::abs(out[i] - in[i]) > 1e-6f + 1e-3f * std::abs(in[i])) {
      state.SkipWithError(absl::StrFormat("element %d: %g, expected %g", i, out[i], in[i]).c_str());
      return;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * chunks * per * sizeof(float)));
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
                          std::pair{"engine/RankFloor", &BM_RankFloor},
                          std::pair{"engine/Allreduce_1t", &BM_Allreduce_1t},
                          std::pair{"engine/Allreduce_1t_poll", &BM_Allreduce_1t_poll},
                          std::pair{"engine/Allreduce_1t_traced", &BM_Allreduce_1t_traced},
                          std::pair{"engine/Allreduce_2t", &BM_Allreduce_2t},
                          std::pair{"engine/Allreduce_4t", &BM_Allreduce_4t}}) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    // The baseline is one thread; the allreduce times itself in CPU.
    if (fn == &BM_QuantizePacketize || fn == &BM_RankFloor) {
      b->MeasureProcessCPUTime();
    } else {
      b->UseManualTime();
    }
    b->Unit(benchmark::kMillisecond);
    for (int64_t s : sizes) {
      for (int64_t e : {int64_t{grid::wire::kDefaultElements}, int64_t{grid::wire::kMaxElements}})
        b->Args({s, e});
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  grid::bench::RatioReporter reporter(grid::bench::RatioReporter::Measure::kRate,
                                      {"QuantizePacketize", "Allreduce_1t"});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return reporter.ExitCode("engine_bench");
}
