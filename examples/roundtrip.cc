// Sends random gradients of N simulated workers through the numerics and the
// wire format and back, summing them the way a switch does (int32, per slot),
// and prints the error against a float64 reference beside the bound that
// docs/numerics.md derives. No network: this exercises the two contracts
// every component shares, end to end.
//
//   grid_roundtrip [--workers=8] [--elements=1048579] [--per-packet=64] [--seed=1]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "grid/numerics.h"
#include "grid/wire.h"

namespace {

struct Options {
  int workers = 8;
  size_t elements = (1u << 20) + 3;
  int per_packet = grid::wire::kDefaultElements;
  unsigned seed = 1;
};

bool ParseFlag(const std::string& arg, const char* name, long long* value) {
  const std::string prefix = std::string("--") + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  char* end = nullptr;
  *value = std::strtoll(arg.c_str() + prefix.size(), &end, 10);
  if (*end != '\0') {
    std::fprintf(stderr, "grid_roundtrip: %s is not a number\n", arg.c_str());
    std::exit(2);
  }
  return true;
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    long long v = 0;
    if (ParseFlag(arg, "workers", &v) && v >= 1 && v <= grid::numerics::kMaxFanIn) {
      o.workers = static_cast<int>(v);
    } else if (ParseFlag(arg, "elements", &v) && v >= 0) {
      o.elements = static_cast<size_t>(v);
    } else if (ParseFlag(arg, "per-packet", &v) && v >= 1 && v <= grid::wire::kMaxElements) {
      o.per_packet = static_cast<int>(v);
    } else if (ParseFlag(arg, "seed", &v)) {
      o.seed = static_cast<unsigned>(v);
    } else {
      std::fprintf(stderr,
                   "usage: grid_roundtrip [--workers=1..65535] [--elements=N] "
                   "[--per-packet=1..%d] [--seed=S]\n(bad argument: %s)\n",
                   grid::wire::kMaxElements, arg.c_str());
      std::exit(2);
    }
  }
  return o;
}

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "grid_roundtrip: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const Options o = ParseOptions(argc, argv);

  // Gradients: normal values whose scale varies by block, as layers differ.
  std::mt19937 rng(o.seed);
  std::vector<std::vector<float>> grads(o.workers, std::vector<float>(o.elements));
  std::vector<double> reference(o.elements, 0.0);
  std::lognormal_distribution<double> layer_scale(-6, 3);
  std::normal_distribution<float> normal(0, 1);
  for (size_t start = 0; start < o.elements; start += 4096) {
    const double scale = layer_scale(rng);
    for (size_t i = start; i < std::min(o.elements, start + 4096); ++i) {
      for (int w = 0; w < o.workers; ++w) {
        grads[w][i] = static_cast<float>(scale * normal(rng));
        reference[i] += grads[w][i];
      }
    }
  }

  const size_t per = static_cast<size_t>(o.per_packet);
  const size_t chunks = (o.elements + per - 1) / per;
  std::vector<uint8_t> frame(wire::kMaxFrameBytes);
  std::vector<int32_t> slot(per);
  std::vector<float> result(o.elements);
  uint64_t packets = 0, bytes = 0;
  double max_error = 0, max_ratio = 0;
  int64_t max_abs_sum = 0;

  for (size_t c = 0; c < chunks; ++c) {
    const size_t begin = c * per;
    const size_t n = std::min(per, o.elements - begin);
    // Each worker proposes its block exponent; the switches keep the max.
    uint8_t exponent = 0;
    for (int w = 0; w < o.workers; ++w) {
      auto e = numerics::BlockExponent({grads[w].data() + begin, n});
      if (!e.ok()) return Fail("block exponent", e.status());
      exponent = std::max(exponent, *e);
    }
    wire::Header h;
    h.type = wire::MessageType::kData;
    h.fan_in = static_cast<uint16_t>(std::min(o.workers, 65535));
    h.chunk = static_cast<uint32_t>(c);
    h.slot = static_cast<uint16_t>(c % 256);
    h.exponent = exponent;
    h.num_elements = static_cast<uint16_t>(n);
    std::fill(slot.begin(), slot.end(), 0);
    for (int w = 0; w < o.workers; ++w) {
      h.rank = static_cast<uint16_t>(w);
      auto size = wire::WriteFrameHeaders({}, h, absl::MakeSpan(frame));
      if (!size.ok()) return Fail("write frame", size.status());
      absl::Status s = numerics::QuantizeToWire({grads[w].data() + begin, n}, exponent, o.workers,
                                                frame.data() + wire::kPayloadOffset);
      if (!s.ok()) return Fail("quantize", s);
      ++packets;
      bytes += *size;
      // The aggregation node: parse, validate, add (int32, wrapping like a switch ALU).
      auto view = wire::DecodeFrame({frame.data(), *size});
      if (!view.ok()) return Fail("decode data", view.status());
      for (size_t i = 0; i < n; ++i) {
        slot[i] = static_cast<int32_t>(static_cast<uint32_t>(slot[i]) +
                                       static_cast<uint32_t>(wire::LoadElement(view->payload, i)));
      }
    }
    // The result travels back as one RESULT packet per chunk.
    h.type = wire::MessageType::kResult;
    h.rank = wire::kAllRanks;
    std::vector<uint8_t> payload(n * wire::kElementBytes);
    numerics::Int32ToWire({slot.data(), n}, payload.data());
    auto size = wire::EncodeFrame({}, h, payload, absl::MakeSpan(frame));
    if (!size.ok()) return Fail("encode result", size.status());
    auto view = wire::DecodeFrame({frame.data(), *size});
    if (!view.ok()) return Fail("decode result", view.status());
    absl::Status s = numerics::DequantizeFromWire(view->payload, view->header.exponent, o.workers,
                                                  {result.data() + begin, n});
    if (!s.ok()) return Fail("dequantize", s);
    for (size_t i = 0; i < n; ++i) {
      max_abs_sum = std::max<int64_t>(max_abs_sum, std::llabs(int64_t{slot[i]}));
      const double err = std::fabs(double{result[begin + i]} - reference[begin + i]);
      const double bound =
          numerics::SumErrorBound(exponent, o.workers, o.workers, std::fabs(reference[begin + i]));
      max_error = std::max(max_error, err);
      max_ratio = std::max(max_ratio, err / bound);
    }
  }

  std::printf("grid_roundtrip: %d workers, %zu float32 elements, %d per packet\n", o.workers,
              o.elements, o.per_packet);
  std::printf("  data packets           %llu (%llu bytes on the wire)\n",
              static_cast<unsigned long long>(packets), static_cast<unsigned long long>(bytes));
  std::printf("  largest |int32 sum|    %lld (limit 2^31-1 = 2147483647; headroom %d bits)\n",
              static_cast<long long>(max_abs_sum), numerics::HeadroomBits(o.workers));
  std::printf("  largest |error|        %.3g\n", max_error);
  std::printf("  largest error / bound  %.3f  (must be <= 1)\n", max_ratio);
  if (max_ratio > 1.0) {
    std::printf("FAILED: an element exceeded its error bound\n");
    return 1;
  }
  std::printf("OK: every element within its bound\n");
  return 0;
}
