// Throughput of the numerics on one core, each beside memcpy of the same
// buffer measured in the same run, and reported as a ratio to it (absolute
// GB/s on these shared machines mean little; the ratio does).
//
//   numerics_bench [--sizes=small|all] [google benchmark flags]
#include <benchmark/benchmark.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "grid/numerics.h"
#include "grid/wire.h"
#include "ratio_reporter.h"

namespace {

using grid::bench::Gradient;
using grid::numerics::BlockExponent;

constexpr int kFanIn = 8;

void BM_Memcpy(benchmark::State& state) {
  const size_t n = state.range(0);
  const std::vector<float> in = Gradient(n);
  std::vector<float> out(n);
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), n * sizeof(float));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * sizeof(float));
}

// A second baseline: a plain 32-byte vector copy loop. glibc's memcpy picks
// `rep movsb` for mid-sized buffers, which is slow on some virtual machines, so
// memcpy alone can flatter everything measured against it.
#if defined(__x86_64__)
__attribute__((target("avx2"))) void VectorCopy(const float* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_loadu_ps(in + i));
  for (; i < n; ++i) out[i] = in[i];
}
#else
void VectorCopy(const float* in, float* out, size_t n) { std::memcpy(out, in, n * sizeof(float)); }
#endif

void BM_CopyLoop(benchmark::State& state) {
  const size_t n = state.range(0);
  const std::vector<float> in = Gradient(n);
  std::vector<float> out(n);
  for (auto _ : state) {
    VectorCopy(in.data(), out.data(), n);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * sizeof(float));
}

void BM_BlockExponent(benchmark::State& state) {
  const size_t n = state.range(0);
  const std::vector<float> in = Gradient(n);
  for (auto _ : state) {
    auto e = BlockExponent(in);
    benchmark::DoNotOptimize(e);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * sizeof(float));
}

void BM_Quantize(benchmark::State& state) {
  const size_t n = state.range(0);
  const std::vector<float> in = Gradient(n);
  std::vector<int32_t> out(n);
  const uint8_t e = *BlockExponent(in);
  for (auto _ : state) {
    if (!grid::numerics::Quantize(in, e, kFanIn, absl::MakeSpan(out)).ok())
      state.SkipWithError("quantize");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * sizeof(float));
}

void BM_Dequantize(benchmark::State& state) {
  const size_t n = state.range(0);
  const std::vector<float> in = Gradient(n);
  std::vector<int32_t> q(n);
  std::vector<float> out(n);
  const uint8_t e = *BlockExponent(in);
  (void)grid::numerics::Quantize(in, e, kFanIn, absl::MakeSpan(q));
  for (auto _ : state) {
    if (!grid::numerics::Dequantize(q, e, kFanIn, absl::MakeSpan(out)).ok())
      state.SkipWithError("dequantize");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * sizeof(float));
}

// Quantization fused with packetization, as a worker sends (bench_common.h).
void BM_QuantizePacketize(benchmark::State& state) {
  grid::bench::QuantizePacketize(state, state.range(0), grid::wire::kDefaultElements, kFanIn);
}

// The receive side: parse and validate each result frame, dequantize its payload.
void BM_DepacketizeDequantize(benchmark::State& state) {
  const size_t n = state.range(0);
  const size_t per = grid::wire::kDefaultElements;
  const std::vector<float> in = Gradient(n);
  const size_t packets = n / per;
  const size_t frame_bytes = grid::wire::FrameBytes(per);
  std::vector<uint8_t> frames(packets * frame_bytes);
  const uint8_t e = *BlockExponent(in);
  grid::wire::Header h;
  h.type = grid::wire::MessageType::kResult;
  h.num_elements = static_cast<uint16_t>(per);
  h.fan_in = kFanIn;
  h.exponent = e;
  for (size_t p = 0; p < packets; ++p) {
    uint8_t* frame = frames.data() + p * frame_bytes;
    (void)grid::wire::WriteFrameHeaders({}, h, {frame, frame_bytes});
    (void)grid::numerics::QuantizeToWire({in.data() + p * per, per}, e, kFanIn,
                                         frame + grid::wire::kPayloadOffset);
  }
  std::vector<float> out(n);
  for (auto _ : state) {
    for (size_t p = 0; p < packets; ++p) {
      grid::wire::FrameView view;
      if (grid::wire::ParseFrame({frames.data() + p * frame_bytes, frame_bytes}, &view) !=
              grid::wire::WireError::kOk ||
          !grid::numerics::DequantizeFromWire(view.payload, view.header.exponent, kFanIn,
                                              {out.data() + p * per, per})
               .ok()) {
        state.SkipWithError("depacketize");
        break;
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * packets * per * sizeof(float));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  const bool small = grid::bench::TakeSizesFlag(argc, argv, args);
  // 64 Ki floats (256 KiB) stays in L2; 4 Mi floats (16 MiB) goes to memory.
  const std::vector<int64_t> sizes =
      small ? std::vector<int64_t>{4096} : std::vector<int64_t>{1 << 16, 1 << 22};
  for (auto [name, fn] :
       {std::pair{"BM_Memcpy", &BM_Memcpy}, std::pair{"BM_CopyLoop", &BM_CopyLoop},
        std::pair{"BM_BlockExponent", &BM_BlockExponent}, std::pair{"BM_Quantize", &BM_Quantize},
        std::pair{"BM_Dequantize", &BM_Dequantize},
        std::pair{"BM_QuantizePacketize", &BM_QuantizePacketize},
        std::pair{"BM_DepacketizeDequantize", &BM_DepacketizeDequantize}}) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    for (int64_t s : sizes) b->Arg(s);
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  grid::bench::RatioReporter reporter(grid::bench::RatioReporter::Measure::kRate,
                                      {"BM_Memcpy", "BM_CopyLoop"});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return reporter.ExitCode("numerics_bench");
}
