// What the Google Benchmark tools share: the synthetic gradient, the
// worker's inner loop (headers plus quantizing into frames, the baseline
// several tools compare with) and the --sizes flag.
#ifndef GRID_BENCH_BENCH_COMMON_H_
#define GRID_BENCH_BENCH_COMMON_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "grid/numerics.h"
#include "grid/wire.h"

namespace grid::bench {

// Normal, sd 1e-3: the scale of a gradient. Seeded, so runs compare.
inline std::vector<float> Gradient(size_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0, 1e-3f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Quantization fused with packetization, as a worker sends: per frame of
// `per` elements, write the Ethernet/IPv4/UDP/GRID headers, then quantize
// straight into the payload (big-endian).
inline void QuantizePacketize(benchmark::State& state, size_t n, uint16_t per, int fan_in) {
  const std::vector<float> in = Gradient(n);
  const size_t packets = n / per;
  const size_t frame_bytes = wire::FrameBytes(per);
  std::vector<uint8_t> frames(packets * frame_bytes);
  auto e = numerics::BlockExponent(in);
  if (!e.ok()) {
    state.SkipWithError(e.status().ToString().c_str());
    return;
  }
  wire::Header h;
  h.num_elements = per;
  h.fan_in = static_cast<uint16_t>(fan_in);
  h.exponent = *e;
  const wire::FrameAddress address;
  for (auto _ : state) {
    for (size_t p = 0; p < packets; ++p) {
      uint8_t* frame = frames.data() + p * frame_bytes;
      h.chunk = static_cast<uint32_t>(p);
      h.slot = static_cast<uint16_t>(p % 512);
      if (!wire::WriteFrameHeaders(address, h, {frame, frame_bytes}).ok() ||
          !numerics::QuantizeToWire({in.data() + p * per, per}, *e, fan_in,
                                    frame + wire::kPayloadOffset)
               .ok()) {
        state.SkipWithError("packetize");
        break;
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * packets * per * sizeof(float));
}

// Takes --sizes=small|all out of argv (what is left goes to Google
// Benchmark) and says whether it was small: the smoke tests' setting.
inline bool TakeSizesFlag(int argc, char** argv, std::vector<char*>& rest) {
  bool small = false;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--sizes=small") {
      small = true;
    } else if (std::string(argv[i]) != "--sizes=all") {
      rest.push_back(argv[i]);
    }
  }
  return small;
}

}  // namespace grid::bench

#endif  // GRID_BENCH_BENCH_COMMON_H_
