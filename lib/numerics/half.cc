// 16-bit float formats: bfloat16 (the top half of a float32) and IEEE
// binary16. Both narrow with round-to-nearest-even, as hardware does.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "grid/numerics.h"
#include "numerics/kernels.h"

namespace grid::numerics {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

uint16_t NarrowToHalf(float f) {
  uint32_t x = Bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  uint16_t h;
  if (x >= 0x47800000u) {
    // |f| >= 2^16 is past the largest half even after rounding; NaN stays NaN.
    h = x > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (x < 0x38800000u) {
    // |f| < 2^-14: a half subnormal (or zero), a multiple of 2^-24. Adding 0.5,
    // whose ulp is 2^-24, makes the FPU round to that grid, to nearest even;
    // the low mantissa bits of the sum are then the half's mantissa.
    h = static_cast<uint16_t>(Bits(FromBits(x) + 0.5f) - Bits(0.5f));
  } else {
    // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa
    // bits to nearest even; a carry out of the mantissa correctly bumps the
    // exponent (up to Inf).
    const uint32_t odd = (x >> 13) & 1u;
    x += (uint32_t{15} - 127u) * (1u << 23) + 0xfffu + odd;
    h = static_cast<uint16_t>(x >> 13);
  }
  return static_cast<uint16_t>(sign | h);
}

float WidenHalf(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return FromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return FromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Subnormal or zero: mantissa * 2^-24, exact in float.
  return FromBits(sign | Bits(static_cast<float>(mantissa) * 0x1p-24f));
}

uint16_t NarrowToBFloat16(float f) {
  const uint32_t x = Bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace

namespace internal {

void HalfToFloatScalar(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = WidenHalf(in[i]);
}

void FloatToHalfScalar(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = NarrowToHalf(in[i]);
}

}  // namespace internal

void BFloat16ToFloat(absl::Span<const uint16_t> in, absl::Span<float> out) {
  const size_t n = std::min(in.size(), out.size());
  for (size_t i = 0; i < n; ++i) out[i] = FromBits(uint32_t{in[i]} << 16);
}

void FloatToBFloat16(absl::Span<const float> in, absl::Span<uint16_t> out) {
  const size_t n = std::min(in.size(), out.size());
  for (size_t i = 0; i < n; ++i) out[i] = NarrowToBFloat16(in[i]);
}

void HalfToFloat(absl::Span<const uint16_t> in, absl::Span<float> out) {
  const size_t n = std::min(in.size(), out.size());
  if (internal::HaveF16c()) {
    internal::HalfToFloatF16c(in.data(), n, out.data());
  } else {
    internal::HalfToFloatScalar(in.data(), n, out.data());
  }
}

void FloatToHalf(absl::Span<const float> in, absl::Span<uint16_t> out) {
  const size_t n = std::min(in.size(), out.size());
  if (internal::HaveF16c()) {
    internal::FloatToHalfF16c(in.data(), n, out.data());
  } else {
    internal::FloatToHalfScalar(in.data(), n, out.data());
  }
}

absl::Status WidenToFloat(DataType type, const void* in, size_t n, float* out) {
  switch (type) {
    case DataType::kFloat32:
      if (n > 0) std::memcpy(out, in, n * sizeof(float));
      return absl::OkStatus();
    case DataType::kBFloat16:
      BFloat16ToFloat({static_cast<const uint16_t*>(in), n}, {out, n});
      return absl::OkStatus();
    case DataType::kFloat16:
      HalfToFloat({static_cast<const uint16_t*>(in), n}, {out, n});
      return absl::OkStatus();
    case DataType::kInt32:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("WidenToFloat: data type %s is not a float type", DataTypeName(type)));
}

absl::Status NarrowFromFloat(DataType type, const float* in, size_t n, void* out) {
  switch (type) {
    case DataType::kFloat32:
      if (n > 0) std::memcpy(out, in, n * sizeof(float));
      return absl::OkStatus();
    case DataType::kBFloat16:
      FloatToBFloat16({in, n}, {static_cast<uint16_t*>(out), n});
      return absl::OkStatus();
    case DataType::kFloat16:
      FloatToHalf({in, n}, {static_cast<uint16_t*>(out), n});
      return absl::OkStatus();
    case DataType::kInt32:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("NarrowFromFloat: data type %s is not a float type", DataTypeName(type)));
}

}  // namespace grid::numerics
