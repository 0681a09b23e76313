// Internal: the numeric kernels behind include/grid/numerics.h. Each has a
// portable scalar version and, on x86-64, an AVX2 (F16C) version; the public
// functions pick one per call from the CPU's features. Both versions produce
// bit-identical results (tests/numerics_kernels_test.cc holds them to it).
#ifndef GRID_LIB_NUMERICS_KERNELS_H_
#define GRID_LIB_NUMERICS_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace grid::numerics::internal {

// 2^shift as two factors that are each a normal float (a single factor would
// not be for |shift| > 126), applied one after the other. Scaling by powers of
// two is exact, so the split costs no accuracy.
struct Pow2 {
  float first;
  float second;
};

// 2^k as a float, for k in [-126, 127], built from the exponent bits (ldexp
// costs more than the 64-element kernels it would set up).
inline float Pow2Float(int k) {
  const uint32_t bits = static_cast<uint32_t>(k + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline Pow2 SplitPow2(int shift) {
  const int first = shift / 2;
  return {Pow2Float(first), Pow2Float(shift - first)};
}

// Which CPU paths exist at run time.
bool HaveAvx2();
bool HaveF16c();

// Max over i of (bit pattern of in[i]) & 0x7fffffff: since IEEE magnitudes
// order like their bit patterns, this is the bit pattern of max |in[i]| (NaN
// and Inf sort above every finite value).
uint32_t MaxAbsBitsScalar(const float* in, size_t n);
uint32_t MaxAbsBitsAvx2(const float* in, size_t n);

// q[i] = round_half_even(clamp(in[i] * scale, -limit, limit)); NaN becomes
// -limit. Writes int32 in host order, or big-endian when `network`. Returns
// MaxAbsBits of the input so the caller can check the exponent's promise
// without a second pass.
uint32_t QuantizeScalar(const float* in, size_t n, Pow2 scale, float limit, bool network,
                        uint8_t* out);
uint32_t QuantizeAvx2(const float* in, size_t n, Pow2 scale, float limit, bool network,
                      uint8_t* out);

// out[i] = float(q[i]) * scale, q read in host order or big-endian. Returns
// MaxAbsBits of the output (>= 0x7f800000 means a result overflowed to Inf).
uint32_t DequantizeScalar(const uint8_t* in, size_t n, bool network, Pow2 scale, float* out);
uint32_t DequantizeAvx2(const uint8_t* in, size_t n, bool network, Pow2 scale, float* out);

// Reverses the bytes of n 32-bit words (host <-> network order); in and out
// may be the same buffer, any alignment.
void ByteSwapWordsScalar(const uint8_t* in, size_t n, uint8_t* out);
void ByteSwapWordsAvx2(const uint8_t* in, size_t n, uint8_t* out);

void HalfToFloatScalar(const uint16_t* in, size_t n, float* out);
void HalfToFloatF16c(const uint16_t* in, size_t n, float* out);
void FloatToHalfScalar(const float* in, size_t n, uint16_t* out);
void FloatToHalfF16c(const float* in, size_t n, uint16_t* out);

}  // namespace grid::numerics::internal

#endif  // GRID_LIB_NUMERICS_KERNELS_H_
