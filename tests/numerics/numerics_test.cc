#include "grid/numerics.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "grid/wire.h"
#include "gtest/gtest.h"

namespace grid::numerics {
namespace {

using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

uint8_t ExponentOf(std::vector<float> v) {
  auto e = BlockExponent(v);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.value_or(0);
}

TEST(BlockExponent, KnownValues) {
  EXPECT_EQ(ExponentOf({}), 0);
  EXPECT_EQ(ExponentOf({0.0f, -0.0f}), 0);
  EXPECT_EQ(ExponentOf({1.0f}), 128);   // 1 < 2^1
  EXPECT_EQ(ExponentOf({0.99f}), 127);  // 0.99 < 2^0
  EXPECT_EQ(ExponentOf({0.5f, -3.0f, 2.0f}), 129);
  EXPECT_EQ(ExponentOf({0x1.fffffep126f}), 254);  // the largest value below 2^127
  EXPECT_EQ(ExponentOf({std::numeric_limits<float>::denorm_min()}), 1);
  EXPECT_EQ(ExponentOf({std::numeric_limits<float>::min()}), 2);  // 2^-126 < 2^-125
}

TEST(BlockExponent, IsTheSmallestValidExponent) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7effffffu);  // below 2^127
  for (int i = 0; i < 100000; ++i) {
    uint32_t b = bits(rng);
    float x;
    std::memcpy(&x, &b, 4);
    const uint8_t e = ExponentOf({x, -x / 2});
    ASSERT_LT(std::fabs(double{x}), std::ldexp(1.0, e - kExponentBias)) << x;
    if (e > 1) {
      ASSERT_GE(std::fabs(double{x}), std::ldexp(1.0, e - 1 - kExponentBias)) << x;
    }
  }
}

TEST(BlockExponent, ReportsNonFinite) {
  std::vector<float> v(100, 1.0f);
  v[57] = kNaN;
  v[80] = kInf;
  auto e = BlockExponent(v);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("element 57 is NaN"));
  v[57] = 1;
  EXPECT_THAT(BlockExponent(v).status().message(), HasSubstr("element 80 is +Inf"));
  v[80] = -kInf;
  EXPECT_THAT(BlockExponent(v).status().message(), HasSubstr("element 80 is -Inf"));
  // From 2^127 on, finite values are refused too: their exponent, 255, is
  // the mark of a block that is not finite (kNotFiniteExponent).
  v[80] = 0x1p127f;
  EXPECT_THAT(BlockExponent(v).status().message(),
              HasSubstr("element 80 = 1.70141e+38 is not below 2^127"));
  v[80] = -std::numeric_limits<float>::max();
  EXPECT_EQ(BlockExponent(v).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Scale, HeadroomAndShift) {
  EXPECT_EQ(HeadroomBits(1), 0);
  EXPECT_EQ(HeadroomBits(2), 1);
  EXPECT_EQ(HeadroomBits(3), 2);
  EXPECT_EQ(HeadroomBits(4), 2);
  EXPECT_EQ(HeadroomBits(5), 3);
  EXPECT_EQ(HeadroomBits(256), 8);
  EXPECT_EQ(HeadroomBits(257), 9);
  EXPECT_EQ(HeadroomBits(kMaxFanIn), 16);
  EXPECT_EQ(ScaleShift(128, 1), 29);  // |x| < 2 -> |q| <= 2^30
  EXPECT_EQ(ScaleShift(255, kMaxFanIn), -114);
  EXPECT_EQ(ScaleShift(0, 1), 157);
  EXPECT_DOUBLE_EQ(QuantizationStep(128, 1), std::ldexp(1.0, -29));
}

// The worst case for overflow: every contributor sends the largest value its
// exponent allows, with the same sign.
TEST(Quantize, WorstCaseSumFitsInt32) {
  for (int fan_in : {1, 2, 3, 8, 255, 256, 257, 1000, kMaxFanIn}) {
    for (int e = 1; e <= 255; ++e) {
      const float top =
          std::nextafter(static_cast<float>(std::ldexp(1.0, e - kExponentBias)), 0.0f);
      const std::vector<float> in = {top, -top};
      std::vector<int32_t> q(2);
      ASSERT_TRUE(Quantize(in, static_cast<uint8_t>(e), fan_in, absl::MakeSpan(q)).ok());
      const int64_t sum = int64_t{q[0]} * fan_in;
      ASSERT_LE(sum, std::numeric_limits<int32_t>::max()) << "e=" << e << " fan_in=" << fan_in;
      ASSERT_EQ(q[1], -q[0]);
    }
  }
}

TEST(Quantize, RejectsBadArguments) {
  std::vector<float> in(4, 1.0f);
  std::vector<int32_t> out(4);
  EXPECT_THAT(Quantize(in, 130, 0, absl::MakeSpan(out)).message(), HasSubstr("fan_in 0"));
  EXPECT_THAT(Quantize(in, 130, kMaxFanIn + 1, absl::MakeSpan(out)).message(),
              HasSubstr("fan_in 65536"));
  EXPECT_THAT(Quantize(in, 130, 4, absl::MakeSpan(out.data(), 3)).message(),
              HasSubstr("4 inputs but room for 3"));
  std::vector<float> sums(4);
  EXPECT_THAT(Dequantize(out, 130, 0, absl::MakeSpan(sums)).message(), HasSubstr("fan_in"));
}

TEST(Quantize, SaturatesAndReportsWhenExponentTooSmall) {
  std::vector<float> in(20, 0.25f);
  in[13] = 8.0f;
  in[17] = -8.0f;
  std::vector<int32_t> out(in.size());
  const uint8_t e = 127;  // promises |x| < 1
  absl::Status s = Quantize(in, e, 4, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("element 13"));
  const int32_t limit = 1 << (30 - 2);
  EXPECT_EQ(out[13], limit);
  EXPECT_EQ(out[17], -limit);
  EXPECT_EQ(out[0], limit / 4);  // the others are still quantized
}

TEST(Quantize, NaNIsReportedNotWrapped) {
  std::vector<float> in(9, 1.0f);
  in[8] = kNaN;
  std::vector<int32_t> out(in.size());
  absl::Status s = Quantize(in, 255, 2, absl::MakeSpan(out));
  EXPECT_THAT(s.message(), HasSubstr("element 8 is NaN"));
  EXPECT_EQ(out[8], -(1 << 29));  // saturated, deterministic
}

TEST(Quantize, WireIsBigEndianOfHost) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 100);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000}) {
    std::vector<float> in(n);
    for (float& x : in) x = normal(rng);
    const uint8_t e = ExponentOf(in);
    std::vector<int32_t> host(n);
    std::vector<uint8_t> net(n * 4 + 1);
    ASSERT_TRUE(Quantize(in, e, 8, absl::MakeSpan(host)).ok());
    ASSERT_TRUE(QuantizeToWire(in, e, 8, net.data() + 1).ok());  // unaligned on purpose
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(wire::LoadElement(net.data() + 1, i), host[i]);

    std::vector<float> a(n), b(n);
    ASSERT_TRUE(Dequantize(host, e, 8, absl::MakeSpan(a)).ok());
    ASSERT_TRUE(DequantizeFromWire(net.data() + 1, e, 8, absl::MakeSpan(b)).ok());
    EXPECT_EQ(a, b);
  }
}

TEST(Dequantize, OverflowToInfIsReported) {
  std::vector<int32_t> sums(10, 0);
  sums[6] = 1 << 30;
  std::vector<float> out(sums.size());
  absl::Status s = Dequantize(sums, 255, 256, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("element 6"));
  EXPECT_TRUE(std::isinf(out[6]));
}

// Draws |x| log-uniformly in [1e-30, 1e30] with a random sign.
float WildValue(std::mt19937& rng) {
  std::uniform_real_distribution<double> log_mag(-30, 30);
  const double mag = std::pow(10.0, log_mag(rng));
  return static_cast<float>(rng() & 1 ? mag : -mag);
}

// The float32 pipeline end to end, against a float64 reference: local
// exponents, max, quantize with headroom, int32 sum as a switch does it
// (wrapping), dequantize. The int32 sum must never overflow and every element
// must be within SumErrorBound.
void CheckErrorBound(int fan_in, size_t block, bool shared_scale, std::mt19937& rng) {
  std::vector<std::vector<float>> workers(fan_in, std::vector<float>(block));
  std::uniform_real_distribution<double> spread(-2, 2);
  const float block_scale = WildValue(rng);
  uint8_t shared = 0;
  for (auto& w : workers) {
    for (float& x : w) {
      x = shared_scale
              ? static_cast<float>(block_scale * std::pow(10.0, spread(rng)) * (rng() & 1 ? 1 : -1))
              : WildValue(rng);
    }
    shared = std::max(shared, ExponentOf(w));  // what the switches compute
  }
  std::vector<uint32_t> wrapped(block, 0);
  std::vector<int64_t> exact(block, 0);
  std::vector<double> reference(block, 0.0);
  std::vector<int32_t> q(block);
  for (const auto& w : workers) {
    ASSERT_TRUE(Quantize(w, shared, fan_in, absl::MakeSpan(q)).ok());
    for (size_t i = 0; i < block; ++i) {
      wrapped[i] += static_cast<uint32_t>(q[i]);
      exact[i] += q[i];
      reference[i] += w[i];
    }
  }
  std::vector<int32_t> sums(block);
  for (size_t i = 0; i < block; ++i) {
    ASSERT_LE(std::llabs(exact[i]), int64_t{1} << 30);
    sums[i] = static_cast<int32_t>(wrapped[i]);
    ASSERT_EQ(int64_t{sums[i]}, exact[i]);
  }
  std::vector<float> result(block);
  ASSERT_TRUE(Dequantize(sums, shared, fan_in, absl::MakeSpan(result)).ok());
  // The float64 reference has its own rounding, far below the bound.
  const double reference_slack = fan_in * std::ldexp(1.0, shared - kExponentBias - 50);
  for (size_t i = 0; i < block; ++i) {
    const double bound = SumErrorBound(shared, fan_in, fan_in, std::fabs(reference[i]));
    ASSERT_LE(std::fabs(result[i] - reference[i]), bound + reference_slack)
        << "fan_in=" << fan_in << " element " << i << " exponent " << int{shared};
  }
}

TEST(Quantize, ErrorBoundHoldsForWildMagnitudes) {
  std::mt19937 rng(11);
  for (int fan_in : {1, 2, 3, 5, 8, 16, 31, 64, 100, 128, 255, 256}) {
    for (int trial = 0; trial < 20; ++trial) {
      CheckErrorBound(fan_in, 64, /*shared_scale=*/false, rng);
      CheckErrorBound(fan_in, 67, /*shared_scale=*/true, rng);
    }
  }
}

TEST(Quantize, ErrorBoundIsTightEnoughToMatter) {
  // A single worker (fan-in 1) with values in [1, 2): step 2^-29, so the
  // result must agree with the input to about 9 decimal digits, i.e. exactly
  // in float32.
  std::vector<float> in = {1.0f, 1.5f, 1.9999999f, 1.1234567f};
  std::vector<int32_t> q(in.size());
  std::vector<float> out(in.size());
  ASSERT_TRUE(Quantize(in, 128, 1, absl::MakeSpan(q)).ok());
  ASSERT_TRUE(Dequantize(q, 128, 1, absl::MakeSpan(out)).ok());
  EXPECT_EQ(in, out);
}

TEST(Int32, PassesThroughExactly) {
  std::vector<int32_t> in = {0,
                             1,
                             -1,
                             std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max(),
                             123456789,
                             -987654321};
  std::vector<uint8_t> wire_bytes(in.size() * 4);
  Int32ToWire(in, wire_bytes.data());
  EXPECT_EQ(wire_bytes[0 * 4 + 3], 0);
  EXPECT_EQ(wire_bytes[1 * 4 + 3], 1);
  EXPECT_EQ(wire_bytes[3 * 4 + 0], 0x80);
  std::vector<int32_t> out(in.size());
  Int32FromWire(wire_bytes.data(), absl::MakeSpan(out));
  EXPECT_EQ(in, out);
}

TEST(SixteenBit, QuantizedSumOfHalvesWithinBound) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 3);
  const int fan_in = 8;
  const size_t n = 129;
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16}) {
    std::vector<double> reference(n, 0);
    std::vector<std::vector<uint16_t>> inputs(fan_in, std::vector<uint16_t>(n));
    std::vector<std::vector<float>> widened(fan_in, std::vector<float>(n));
    uint8_t shared = 0;
    for (int w = 0; w < fan_in; ++w) {
      std::vector<float> values(n);
      for (float& x : values) x = normal(rng);
      ASSERT_TRUE(NarrowFromFloat(type, values.data(), n, inputs[w].data()).ok());
      ASSERT_TRUE(WidenToFloat(type, inputs[w].data(), n, widened[w].data()).ok());
      for (size_t i = 0; i < n; ++i) reference[i] += widened[w][i];
      shared = std::max(shared, ExponentOf(widened[w]));
    }
    std::vector<int32_t> sum(n, 0), q(n);
    for (int w = 0; w < fan_in; ++w) {
      ASSERT_TRUE(Quantize(widened[w], shared, fan_in, absl::MakeSpan(q)).ok());
      for (size_t i = 0; i < n; ++i) sum[i] += q[i];
    }
    std::vector<float> result(n);
    ASSERT_TRUE(Dequantize(sum, shared, fan_in, absl::MakeSpan(result)).ok());
    std::vector<uint16_t> narrowed(n);
    ASSERT_TRUE(NarrowFromFloat(type, result.data(), n, narrowed.data()).ok());
    std::vector<float> back(n);
    ASSERT_TRUE(WidenToFloat(type, narrowed.data(), n, back.data()).ok());
    // Narrowing adds half an ulp of the 16-bit type: 2^-8 (bf16) or 2^-11 (fp16), relative.
    const double narrow_rel = type == DataType::kBFloat16 ? 0x1p-8 : 0x1p-11;
    for (size_t i = 0; i < n; ++i) {
      const double bound = SumErrorBound(shared, fan_in, fan_in, std::fabs(reference[i]));
      EXPECT_LE(std::fabs(back[i] - reference[i]),
                bound + narrow_rel * (std::fabs(reference[i]) + bound) + 0x1p-24)
          << DataTypeName(type) << " element " << i;
    }
  }
}

TEST(SixteenBit, Int32IsNotAFloatType) {
  float f[1];
  int32_t i[1] = {3};
  EXPECT_THAT(WidenToFloat(DataType::kInt32, i, 1, f).message(), HasSubstr("int32"));
  EXPECT_THAT(NarrowFromFloat(DataType::kInt32, f, 1, i).message(), HasSubstr("int32"));
}

}  // namespace
}  // namespace grid::numerics
