// Each data type's codec (lib/worker/codec.h): a chunk's elements to the
// wire and a result back, summed over ranks as the switches would, averaged
// and narrowed on the way; the wide path of fused operations ends in the
// same values.
#include "worker/codec.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "grid/numerics.h"
#include "grid/wire.h"
#include "gtest/gtest.h"
#include "util/random.h"

namespace grid::worker {
namespace {

using ::testing::HasSubstr;

constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kInt32, DataType::kBFloat16,
                               DataType::kFloat16};

// n values of `type`, from floats (ints for int32).
std::vector<uint8_t> Values(DataType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() * DataTypeSize(type));
  if (type == DataType::kInt32) {
    for (size_t i = 0; i < x.size(); ++i) {
      const auto v = static_cast<int32_t>(x[i]);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  } else {
    EXPECT_TRUE(numerics::NarrowFromFloat(type, x.data(), x.size(), out.data()).ok());
  }
  return out;
}

std::vector<float> AsFloats(DataType type, const uint8_t* in, size_t n) {
  std::vector<float> out(n);
  if (type == DataType::kInt32) {
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, in + 4 * i, 4);
      out[i] = static_cast<float>(v);
    }
  } else {
    EXPECT_TRUE(numerics::WidenToFloat(type, in, n, out.data()).ok());
  }
  return out;
}

// The wire sum of every rank's payload, as a switch adds them.
std::vector<uint8_t> WireSum(const std::vector<std::vector<uint8_t>>& payloads) {
  std::vector<uint8_t> sum(payloads[0].size(), 0);
  for (size_t e = 0; e < sum.size() / 4; ++e) {
    int64_t total = 0;
    for (const auto& p : payloads) total += wire::LoadElement(p.data(), e);
    wire::StoreElement(sum.data(), e, static_cast<int32_t>(total));
  }
  return sum;
}

TEST(Codec, EveryTypeHasOneAndItSaysWhatItIs) {
  for (DataType t : kTypes) {
    const Codec* c = CodecFor(t);
    ASSERT_NE(c, nullptr) << DataTypeName(t);
    EXPECT_EQ(c->type, t);
    EXPECT_EQ(c->element_bytes, DataTypeSize(t));
    EXPECT_EQ(c->quantized, t != DataType::kInt32);
    if (c->quantized) {
      EXPECT_EQ(c->max_exponent, numerics::MaxBlockExponent(t));
    }
  }
  EXPECT_EQ(CodecFor(static_cast<DataType>(9)), nullptr);
}

// Three ranks' chunks, summed and averaged: each type's result within its
// quantization and rounding error of the exact average.
TEST(Codec, AChunkSummedOverRanksComesBackAveragedInItsType) {
  constexpr int kWorld = 3;
  constexpr size_t kN = 100;
  util::Random rng(5);
  for (DataType t : kTypes) {
    const Codec& c = *CodecFor(t);
    std::vector<std::vector<float>> x(kWorld, std::vector<float>(kN));
    std::vector<std::vector<uint8_t>> in;
    for (auto& rank : x) {
      for (float& v : rank) {
        v = t == DataType::kInt32 ? static_cast<float>(rng.Below(2001)) - 1000
                                  : static_cast<float>(rng.Uniform(-4, 4));
      }
      in.push_back(Values(t, rank));
    }
    uint8_t exponent = 0;
    for (const auto& rank : in) {
      auto e = c.exponent(rank.data(), kN);
      ASSERT_TRUE(e.ok()) << e.status();
      exponent = std::max(exponent, c.quantized ? *e : uint8_t{0});
    }
    std::vector<std::vector<uint8_t>> payloads;
    for (const auto& rank : in) {
      payloads.emplace_back(kN * 4);
      ASSERT_TRUE(c.encode(rank.data(), kN, exponent, kWorld, payloads.back().data()).ok());
    }
    const std::vector<uint8_t> sum = WireSum(payloads);
    for (int divisor : {1, kWorld}) {
      std::vector<uint8_t> out(kN * c.element_bytes);
      ASSERT_TRUE(c.decode(sum.data(), kN, exponent, kWorld, divisor, out.data()).ok());
      // The wide path of a fused operation gives the same bytes.
      std::vector<uint8_t> wide(kN * kWideBytes), narrowed(out.size());
      ASSERT_TRUE(c.decode_wide(sum.data(), kN, exponent, kWorld, wide.data()).ok());
      ASSERT_TRUE(c.narrow(wide.data(), kN, divisor, narrowed.data()).ok());
      EXPECT_EQ(out, narrowed) << DataTypeName(t) << " divisor " << divisor;
      const std::vector<float> got = AsFloats(t, out.data(), kN);
      for (size_t i = 0; i < kN; ++i) {
        double exact = 0;
        for (const auto& rank : x) exact += AsFloats(t, Values(t, {rank[i]}).data(), 1)[0];
        if (t == DataType::kInt32) {
          EXPECT_EQ(got[i], static_cast<float>(static_cast<int32_t>(exact) / divisor));
          continue;
        }
        exact /= divisor;
        // Quantization (numerics.md's bound) plus the type's own rounding.
        const double ulp = t == DataType::kFloat32   ? 0x1p-23
                           : t == DataType::kBFloat16 ? 0x1p-8
                                                      : 0x1p-11;
        const double bound = numerics::SumErrorBound(exponent, kWorld, kWorld, 4 * kWorld) / divisor +
                             std::abs(exact) * ulp;
        EXPECT_NEAR(got[i], exact, bound) << DataTypeName(t) << " element " << i;
      }
    }
  }
}

TEST(Codec, AFloatBlockThatIsNotFiniteHasNoExponent) {
  for (DataType t : {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16}) {
    std::vector<float> x(10, 1.0f);
    x[7] = std::nanf("");
    const std::vector<uint8_t> in = Values(t, x);
    auto e = CodecFor(t)->exponent(in.data(), x.size());
    ASSERT_FALSE(e.ok()) << DataTypeName(t);
    EXPECT_THAT(e.status().message(), HasSubstr("7")) << DataTypeName(t);
  }
}

TEST(Codec, Float16SumsBeyondItsRangeBecomeInfAsNcclsDo) {
  const Codec& c = *CodecFor(DataType::kFloat16);
  const std::vector<uint8_t> in = Values(DataType::kFloat16, {60000.0f, -60000.0f, 1.0f});
  const uint8_t exponent = *c.exponent(in.data(), 3);
  std::vector<uint8_t> p(12);
  ASSERT_TRUE(c.encode(in.data(), 3, exponent, 2, p.data()).ok());
  const std::vector<uint8_t> sum = WireSum({p, p});
  std::vector<uint8_t> out(6);
  ASSERT_TRUE(c.decode(sum.data(), 3, exponent, 2, 1, out.data()).ok());
  const std::vector<float> got = AsFloats(DataType::kFloat16, out.data(), 3);
  EXPECT_TRUE(std::isinf(got[0]) && got[0] > 0);
  EXPECT_TRUE(std::isinf(got[1]) && got[1] < 0);
  EXPECT_EQ(got[2], 2.0f);
  // Averaged before narrowing, the same sums fit.
  ASSERT_TRUE(c.decode(sum.data(), 3, exponent, 2, 2, out.data()).ok());
  EXPECT_EQ(AsFloats(DataType::kFloat16, out.data(), 3)[0], 60000.0f);
}

}  // namespace
}  // namespace grid::worker
