// The SIMD kernels must agree with the scalar ones bit for bit, and the
// scalar 16-bit conversions must agree with independent references.
#include "numerics/kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "grid/numerics.h"
#include "gtest/gtest.h"

namespace grid::numerics::internal {
namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Inputs that exercise every branch: zeros, subnormals, NaN, Inf, values at
// and beyond the clamp, ties.
std::vector<float> NastyInputs(size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  std::uniform_int_distribution<uint32_t> any_bits;
  std::normal_distribution<float> normal(0, 4);
  for (size_t i = 0; i < n; ++i) {
    switch (rng() % 8) {
      case 0:
        v[i] = FromBits(any_bits(rng));  // includes NaN/Inf/subnormal
        break;
      case 1:
        v[i] = FromBits(any_bits(rng) & 0x807fffffu);  // subnormal
        break;
      case 2:
        v[i] = std::round(normal(rng)) + 0.5f;  // ties
        break;
      default:
        v[i] = normal(rng);
    }
  }
  return v;
}

class SimdParity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveAvx2()) GTEST_SKIP() << "CPU has no AVX2: only the scalar kernels run here";
  }
};

TEST_F(SimdParity, MaxAbsBits) {
  std::mt19937 rng(1);
  for (size_t n : {0, 1, 7, 8, 15, 16, 17, 64, 1000, 4099}) {
    for (int trial = 0; trial < 20; ++trial) {
      const auto v = NastyInputs(n, rng);
      ASSERT_EQ(MaxAbsBitsScalar(v.data(), n), MaxAbsBitsAvx2(v.data(), n)) << n;
    }
  }
}

TEST_F(SimdParity, QuantizeAndDequantize) {
  std::mt19937 rng(2);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000}) {
    for (int shift : {-114, -20, 0, 3, 20, 27, 60, 157}) {
      for (bool network : {false, true}) {
        const auto v = NastyInputs(n, rng);
        const Pow2 scale = SplitPow2(shift);
        const float limit = 0x1p27f;
        std::vector<uint8_t> a(n * 4), b(n * 4);
        ASSERT_EQ(QuantizeScalar(v.data(), n, scale, limit, network, a.data()),
                  QuantizeAvx2(v.data(), n, scale, limit, network, b.data()));
        ASSERT_EQ(a, b) << "n=" << n << " shift=" << shift;

        const Pow2 back = SplitPow2(-shift);
        std::vector<float> fa(n), fb(n);
        ASSERT_EQ(DequantizeScalar(a.data(), n, network, back, fa.data()),
                  DequantizeAvx2(a.data(), n, network, back, fb.data()));
        ASSERT_TRUE(n == 0 || std::memcmp(fa.data(), fb.data(), n * 4) == 0);
      }
    }
  }
}

TEST_F(SimdParity, ByteSwapWords) {
  std::mt19937 rng(4);
  for (size_t n : {0, 1, 7, 8, 9, 64, 65, 1000}) {
    std::vector<uint8_t> in(4 * n + 1), a(4 * n + 1), b(4 * n + 1);
    for (uint8_t& x : in) x = static_cast<uint8_t>(rng());
    ByteSwapWordsScalar(in.data() + 1, n, a.data() + 1);  // unaligned on purpose
    ByteSwapWordsAvx2(in.data() + 1, n, b.data() + 1);
    ASSERT_EQ(a, b) << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[1 + 4 * i], in[1 + 4 * i + 3]);
  }
}

TEST(HalfScalar, WidenMatchesDefinitionForEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t x = static_cast<uint16_t>(h);
    float f;
    HalfToFloatScalar(&x, 1, &f);
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1 : 1;
    if (exponent == 31) {
      ASSERT_EQ(std::isnan(f), mantissa != 0) << h;
      if (mantissa == 0) {
        ASSERT_EQ(f, sign * std::numeric_limits<float>::infinity());
      }
      continue;
    }
    const double expected = exponent == 0 ? sign * std::ldexp(mantissa, -24)
                                          : sign * std::ldexp(1024 + mantissa, exponent - 25);
    ASSERT_EQ(double{f}, expected) << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
  }
}

// Round to nearest even, computed in float64 with no bit tricks.
uint16_t ReferenceToHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return sign | 0x7e00;
  const double a = std::fabs(double{f});
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < 0x1p-14) return sign | static_cast<uint16_t>(std::nearbyint(a * 0x1p24));
  int e;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  double q = std::nearbyint((m * 2 - 1) * 1024);
  int biased = e - 1 + 15;
  if (q == 1024) {
    q = 0;
    ++biased;
  }
  return sign | static_cast<uint16_t>((biased << 10) | static_cast<int>(q));
}

std::vector<float> NarrowingProbes() {
  std::vector<float> probes = {0.0f,
                               -0.0f,
                               1.0f,
                               65504.0f,
                               65519.99f,
                               65520.0f,
                               65536.0f,
                               0x1p-14f,
                               0x1p-24f,
                               0x1p-25f,
                               0x1.8p-25f,
                               0x1p-26f,
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::denorm_min()};
  // Every half-way point between adjacent halves, and its neighbours.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    uint16_t lo = static_cast<uint16_t>(h), hi = static_cast<uint16_t>(h + 1);
    float flo, fhi;
    HalfToFloatScalar(&lo, 1, &flo);
    HalfToFloatScalar(&hi, 1, &fhi);
    const float mid = static_cast<float>((double{flo} + double{fhi}) / 2);
    probes.insert(probes.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f), -mid});
  }
  for (uint64_t b = 0; b < 0x100000000ull; b += 4093) probes.push_back(FromBits(uint32_t(b)));
  return probes;
}

TEST(HalfScalar, NarrowMatchesReference) {
  for (float f : NarrowingProbes()) {
    uint16_t h;
    FloatToHalfScalar(&f, 1, &h);
    ASSERT_EQ(h, ReferenceToHalf(f)) << "float bits 0x" << std::hex << Bits(f);
  }
}

TEST(HalfF16c, MatchesScalar) {
  if (!HaveF16c()) GTEST_SKIP() << "CPU has no F16C";
  std::vector<uint16_t> all(0x10000);
  for (uint32_t h = 0; h < 0x10000; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> a(all.size()), b(all.size());
  HalfToFloatScalar(all.data(), all.size(), a.data());
  HalfToFloatF16c(all.data(), all.size(), b.data());
  for (size_t i = 0; i < all.size(); ++i) {
    if (std::isnan(a[i])) {
      ASSERT_TRUE(std::isnan(b[i]));
    } else {
      ASSERT_EQ(Bits(a[i]), Bits(b[i])) << i;
    }
  }
  const std::vector<float> probes = NarrowingProbes();
  std::vector<uint16_t> ha(probes.size()), hb(probes.size());
  FloatToHalfScalar(probes.data(), probes.size(), ha.data());
  FloatToHalfF16c(probes.data(), probes.size(), hb.data());
  for (size_t i = 0; i < probes.size(); ++i) {
    if (std::isnan(probes[i])) {
      ASSERT_EQ(ha[i] & 0xfc00, hb[i] & 0xfc00);  // NaN payloads may differ
      ASSERT_NE(hb[i] & 0x3ff, 0);
    } else {
      ASSERT_EQ(ha[i], hb[i]) << "float bits 0x" << std::hex << Bits(probes[i]);
    }
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  auto narrow = [](float f) {
    uint16_t h;
    FloatToBFloat16({&f, 1}, {&h, 1});
    return h;
  };
  EXPECT_EQ(narrow(1.0f), 0x3f80);
  EXPECT_EQ(narrow(1.0f + 0x1p-8f), 0x3f80);             // tie, to even
  EXPECT_EQ(narrow(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);   // tie, to even (up)
  EXPECT_EQ(narrow(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above the tie
  EXPECT_EQ(narrow(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(narrow(-0.0f), 0x8000);
  const uint16_t nan = narrow(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x7f, 0);
  float back;
  const uint16_t in = 0xc0a0;  // -5
  BFloat16ToFloat({&in, 1}, {&back, 1});
  EXPECT_EQ(back, -5.0f);
}

}  // namespace
}  // namespace grid::numerics::internal
