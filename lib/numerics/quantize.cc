#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "grid/numerics.h"
#include "numerics/kernels.h"

namespace grid::numerics {
namespace internal {
namespace {

// Elements travel big-endian (the wire layer's byte order; numerics sits below
// it and does not include it).
constexpr uint32_t ToFromBigEndian(uint32_t v) {
  return std::endian::native == std::endian::little ? __builtin_bswap32(v) : v;
}

template <bool kNetwork>
uint32_t QuantizeLoop(const float* in, size_t n, Pow2 scale, float limit, uint8_t* out) {
  uint32_t max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof(bits));
    max_abs = std::max(max_abs, bits & 0x7fffffffu);
    // fmax(NaN, -limit) is -limit, matching _mm256_max_ps in the AVX2 kernel.
    const float y = std::fmin(std::fmax(in[i] * scale.first * scale.second, -limit), limit);
    auto q = static_cast<uint32_t>(static_cast<int32_t>(std::nearbyint(y)));
    if constexpr (kNetwork) q = ToFromBigEndian(q);
    std::memcpy(out + i * 4, &q, sizeof(q));
  }
  return max_abs;
}

template <bool kNetwork>
uint32_t DequantizeLoop(const uint8_t* in, size_t n, Pow2 scale, float* out) {
  uint32_t max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t q;
    std::memcpy(&q, in + i * 4, sizeof(q));
    if constexpr (kNetwork) q = ToFromBigEndian(q);
    const float y = static_cast<float>(static_cast<int32_t>(q)) * scale.first * scale.second;
    out[i] = y;
    uint32_t bits;
    std::memcpy(&bits, &y, sizeof(bits));
    max_abs = std::max(max_abs, bits & 0x7fffffffu);
  }
  return max_abs;
}

}  // namespace

uint32_t MaxAbsBitsScalar(const float* in, size_t n) {
  uint32_t max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof(bits));
    max_abs = std::max(max_abs, bits & 0x7fffffffu);
  }
  return max_abs;
}

uint32_t QuantizeScalar(const float* in, size_t n, Pow2 scale, float limit, bool network,
                        uint8_t* out) {
  return network ? QuantizeLoop<true>(in, n, scale, limit, out)
                 : QuantizeLoop<false>(in, n, scale, limit, out);
}

void ByteSwapWordsScalar(const uint8_t* in, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, in + 4 * i, 4);
    v = __builtin_bswap32(v);
    std::memcpy(out + 4 * i, &v, 4);
  }
}

uint32_t DequantizeScalar(const uint8_t* in, size_t n, bool network, Pow2 scale, float* out) {
  return network ? DequantizeLoop<true>(in, n, scale, out)
                 : DequantizeLoop<false>(in, n, scale, out);
}

}  // namespace internal

namespace {

using internal::Pow2;

constexpr uint32_t kInfBits = 0x7f800000u;

inline absl::Status CheckFanIn(int fan_in) {
  if (fan_in < 1 || fan_in > kMaxFanIn) [[unlikely]] {
    return absl::InvalidArgumentError(
        absl::StrFormat("fan_in %d is outside [1, %d]", fan_in, kMaxFanIn));
  }
  return absl::OkStatus();
}

// Bit pattern of 2^(e - 127): every |x| of a block with exponent e is below it.
uint32_t LimitBits(uint8_t exponent) {
  return exponent >= 1 ? uint32_t{exponent} << 23 : 0x00400000u;  // 2^-127 is subnormal
}

uint32_t AbsBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits & 0x7fffffffu;
}

// The slow path after a kernel saw an element the exponent does not cover.
absl::Status ElementError(absl::Span<const float> in, uint8_t exponent) {
  const uint32_t limit = LimitBits(exponent);
  for (size_t i = 0; i < in.size(); ++i) {
    const uint32_t a = AbsBits(in[i]);
    if (a < limit) continue;
    if (std::isnan(in[i]))
      return absl::InvalidArgumentError(absl::StrFormat("element %d is NaN", i));
    if (std::isinf(in[i])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("element %d is %cInf", i, in[i] > 0 ? '+' : '-'));
    }
    if (exponent == kNotFiniteExponent - 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("element %d = %g is not below 2^%d, the largest value GRID sums", i,
                          in[i], int{exponent} - kExponentBias));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "element %d = %g is not below 2^%d: block exponent %d is too small (saturated)", i, in[i],
        int{exponent} - kExponentBias, exponent));
  }
  return absl::InternalError("quantize kernel reported an out-of-range element that is not there");
}

absl::Status QuantizeImpl(absl::Span<const float> in, uint8_t exponent, int fan_in, bool network,
                          uint8_t* out) {
  if (absl::Status s = CheckFanIn(fan_in); !s.ok()) return s;
  const Pow2 scale = internal::SplitPow2(ScaleShift(exponent, fan_in));
  const float limit = internal::Pow2Float(30 - HeadroomBits(fan_in));
  const uint32_t max_abs =
      internal::HaveAvx2()
          ? internal::QuantizeAvx2(in.data(), in.size(), scale, limit, network, out)
          : internal::QuantizeScalar(in.data(), in.size(), scale, limit, network, out);
  if (max_abs >= LimitBits(exponent)) return ElementError(in, exponent);
  return absl::OkStatus();
}

absl::Status DequantizeImpl(const uint8_t* in, uint8_t exponent, int fan_in, bool network,
                            absl::Span<float> out) {
  if (absl::Status s = CheckFanIn(fan_in); !s.ok()) return s;
  const Pow2 scale = internal::SplitPow2(-ScaleShift(exponent, fan_in));
  const uint32_t max_abs =
      internal::HaveAvx2() ? internal::DequantizeAvx2(in, out.size(), network, scale, out.data())
                           : internal::DequantizeScalar(in, out.size(), network, scale, out.data());
  if (max_abs >= kInfBits) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (AbsBits(out[i]) >= kInfBits) {
        return absl::OutOfRangeError(absl::StrFormat(
            "element %d: the sum exceeds the float32 range (block exponent %d)", i, exponent));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint8_t> BlockExponent(absl::Span<const float> block) {
  const uint32_t max_abs = internal::HaveAvx2()
                               ? internal::MaxAbsBitsAvx2(block.data(), block.size())
                               : internal::MaxAbsBitsScalar(block.data(), block.size());
  if (max_abs >= LimitBits(kNotFiniteExponent - 1)) {
    return ElementError(block, kNotFiniteExponent - 1);
  }
  // For a normal max m with biased exponent field f, m < 2^(f + 1 - 127); a
  // subnormal max (f = 0) is below 2^-126 (exponent 1).
  return static_cast<uint8_t>(max_abs == 0 ? 0 : (max_abs >> 23) + 1);
}

double QuantizationStep(uint8_t exponent, int fan_in) {
  return std::ldexp(1.0, -ScaleShift(exponent, fan_in));
}

double SumErrorBound(uint8_t exponent, int fan_in, int contributions, double magnitude) {
  const double rounding = contributions * QuantizationStep(exponent, fan_in) / 2;
  return rounding + std::ldexp(magnitude + rounding, -24) + std::ldexp(1.0, -149);
}

absl::Status Quantize(absl::Span<const float> in, uint8_t exponent, int fan_in,
                      absl::Span<int32_t> out) {
  if (in.size() != out.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Quantize: %d inputs but room for %d outputs", in.size(), out.size()));
  }
  return QuantizeImpl(in, exponent, fan_in, /*network=*/false,
                      reinterpret_cast<uint8_t*>(out.data()));
}

absl::Status QuantizeToWire(absl::Span<const float> in, uint8_t exponent, int fan_in,
                            uint8_t* out) {
  return QuantizeImpl(in, exponent, fan_in, /*network=*/true, out);
}

absl::Status Dequantize(absl::Span<const int32_t> in, uint8_t exponent, int fan_in,
                        absl::Span<float> out) {
  if (in.size() != out.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Dequantize: %d inputs but room for %d outputs", in.size(), out.size()));
  }
  return DequantizeImpl(reinterpret_cast<const uint8_t*>(in.data()), exponent, fan_in,
                        /*network=*/false, out);
}

absl::Status DequantizeFromWire(const uint8_t* in, uint8_t exponent, int fan_in,
                                absl::Span<float> out) {
  return DequantizeImpl(in, exponent, fan_in, /*network=*/true, out);
}

namespace {

// Host order <-> network order of n int32 words (a byte swap on
// little-endian hosts, a copy on big-endian ones).
void SwapWords(const uint8_t* in, size_t n, uint8_t* out) {
  if constexpr (std::endian::native == std::endian::big) {
    if (n > 0 && in != out) std::memmove(out, in, 4 * n);
    return;
  }
  if (internal::HaveAvx2()) {
    internal::ByteSwapWordsAvx2(in, n, out);
  } else {
    internal::ByteSwapWordsScalar(in, n, out);
  }
}

}  // namespace

void Int32ToWire(absl::Span<const int32_t> in, uint8_t* out) {
  SwapWords(reinterpret_cast<const uint8_t*>(in.data()), in.size(), out);
}

void Int32FromWire(const uint8_t* in, absl::Span<int32_t> out) {
  SwapWords(in, out.size(), reinterpret_cast<uint8_t*>(out.data()));
}

}  // namespace grid::numerics
