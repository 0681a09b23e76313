// Float <-> int32 numerics for in-network aggregation. docs/numerics.md
// derives the scheme and its error bound.
//
// Switches can only add integers, so each block of floats (one packet's worth)
// is scaled by a power of two and rounded to int32. All contributors to a
// block use the same *shared block exponent* e (the max of their local
// exponents, agreed through the switches before the block is sent), and a scale
// that leaves ceil(log2(fan_in)) bits of headroom, so the int32 sum of up to
// fan_in contributions can never overflow, whatever the (finite) inputs.
#ifndef GRID_NUMERICS_H_
#define GRID_NUMERICS_H_

#include <bit>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grid/export.h"
#include "grid/types.h"

GRID_API_BEGIN

namespace grid::numerics {

// A block exponent e (biased like IEEE single) promises |x| < 2^(e - 127) for
// every element x of the block. 0 means an all-zero block; 254 admits every
// float below 2^127, and 255 marks a block that is not finite
// (kNotFiniteExponent). Taking the max of two block exponents gives a valid exponent
// for the union of their blocks, which is what the switches do.
inline constexpr int kExponentBias = 127;
inline constexpr int kMaxFanIn = 65535;

// The exponent a rank proposes for a block it cannot quantize: one with a
// NaN, an Inf, or an element of at least 2^127 (more than a sum of two can
// hold). The switches agree on the max, so every rank learns it and fails
// the operation for that block, instead of summing it at the largest
// exponent, which would return the other ranks a finite, saturated value
// and zeros around it (docs/worker.md, "Exponents for floats").
inline constexpr uint8_t kNotFiniteExponent = 255;

// The smallest valid block exponent of `block`, below kNotFiniteExponent.
// NaN, +-Inf or an element of at least 2^127 is an InvalidArgument error
// that names the first such element.
absl::StatusOr<uint8_t> BlockExponent(absl::Span<const float> block);

// The largest block exponent data of `type` can have: float16's largest
// finite value, 65504, gives 143; float32 and bfloat16 stop at 254 (2^127).
// An agreed exponent above it, other than kNotFiniteExponent, came from no
// rank (docs/security.md).
constexpr uint8_t MaxBlockExponent(DataType type) {
  return type == DataType::kFloat16 ? 143 : kNotFiniteExponent - 1;
}

// ceil(log2(fan_in)): the headroom bits the scale leaves.
constexpr int HeadroomBits(int fan_in) {
  return fan_in <= 1 ? 0 : std::bit_width(static_cast<unsigned>(fan_in - 1));
}

// Each element is quantized as round(x * 2^shift): the largest shift that keeps
// |q| <= 2^(30 - HeadroomBits(fan_in)), given |x| < 2^(exponent - 127).
// Range: [-114, 157].
constexpr int ScaleShift(uint8_t exponent, int fan_in) {
  return 30 - HeadroomBits(fan_in) - (int{exponent} - kExponentBias);
}

// The quantization step 2^-shift, i.e. the value of one integer unit.
double QuantizationStep(uint8_t exponent, int fan_in);

// Upper bound on |dequantized sum - exact sum| for the float32 result of
// `contributions` quantized values (contributions <= fan_in) whose exact sum
// has magnitude at most `magnitude`: contributions * step / 2 (rounding)
// + 2^-24 * (magnitude + that) (rounding the sum to float32) + 2^-149.
double SumErrorBound(uint8_t exponent, int fan_in, int contributions, double magnitude);

// float32 -> int32, host byte order. If an element is non-finite or not below
// 2^(e - 127) (the exponent was too small for it), its output saturates and an
// InvalidArgument error names the first such element; other elements are
// still quantized. in.size() must equal out.size().
absl::Status Quantize(absl::Span<const float> in, uint8_t exponent, int fan_in,
                      absl::Span<int32_t> out);

// Same, writing big-endian int32 straight into a packet payload (`out` holds
// in.size() * 4 bytes, any alignment): quantization fused with packetization.
absl::Status QuantizeToWire(absl::Span<const float> in, uint8_t exponent, int fan_in, uint8_t* out);

// int32 sums -> float32. A sum whose float32 value is infinite (the true sum
// exceeds float32's range) is written as +-Inf and reported as OutOfRange.
absl::Status Dequantize(absl::Span<const int32_t> in, uint8_t exponent, int fan_in,
                        absl::Span<float> out);

// Same, reading big-endian int32 from a packet payload (out.size() elements).
absl::Status DequantizeFromWire(const uint8_t* in, uint8_t exponent, int fan_in,
                                absl::Span<float> out);

// int32 tensors travel unscaled: only the byte order changes.
void Int32ToWire(absl::Span<const int32_t> in, uint8_t* out);
void Int32FromWire(const uint8_t* in, absl::Span<int32_t> out);

// 16-bit floats are widened to float32 before quantization and narrowed after
// (round to nearest even; NaN stays NaN, overflow becomes Inf).
void BFloat16ToFloat(absl::Span<const uint16_t> in, absl::Span<float> out);
void FloatToBFloat16(absl::Span<const float> in, absl::Span<uint16_t> out);
void HalfToFloat(absl::Span<const uint16_t> in, absl::Span<float> out);
void FloatToHalf(absl::Span<const float> in, absl::Span<uint16_t> out);

// Dispatch on DataType for the 16-bit and 32-bit float types: `in`/`out` hold
// n elements of `type`. kInt32 is an InvalidArgument error (it is not scaled).
absl::Status WidenToFloat(DataType type, const void* in, size_t n, float* out);
absl::Status NarrowFromFloat(DataType type, const float* in, size_t n, void* out);

}  // namespace grid::numerics

GRID_API_END

#endif  // GRID_NUMERICS_H_
