// AVX2 / F16C kernels. Compiled with per-function target attributes rather
// than -mavx2 on the file, so no AVX2 instruction can leak into code that runs
// on a CPU without it; the public functions call these only after
// HaveAvx2()/HaveF16c().
#include "numerics/kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>

#include "numerics/simd.h"

#define GRID_TARGET_AVX2 __attribute__((target("avx2")))
#define GRID_TARGET_F16C __attribute__((target("avx2,f16c")))

namespace grid::numerics::internal {
namespace {

GRID_TARGET_AVX2 inline uint32_t HorizontalMax(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(m));
}

template <bool kNetwork>
GRID_TARGET_AVX2 uint32_t QuantizeLoopAvx2(const float* in, size_t n, Pow2 scale, float limit,
                                           uint8_t* out) {
  const __m256 first = _mm256_set1_ps(scale.first);
  const __m256 second = _mm256_set1_ps(scale.second);
  const __m256 hi = _mm256_set1_ps(limit);
  const __m256 lo = _mm256_set1_ps(-limit);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i max_abs = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    max_abs = _mm256_max_epu32(max_abs, _mm256_and_si256(_mm256_castps_si256(x), abs_mask));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(x, first), second);
    // max_ps returns its second operand when the first is NaN: NaN -> -limit.
    y = _mm256_min_ps(_mm256_max_ps(y, lo), hi);
    __m256i q = _mm256_cvtps_epi32(y);  // MXCSR default: round half to even
    if constexpr (kNetwork) q = ByteSwap32(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * 4), q);
  }
  const uint32_t tail = QuantizeScalar(in + i, n - i, scale, limit, kNetwork, out + i * 4);
  return std::max(HorizontalMax(max_abs), tail);
}

template <bool kNetwork>
GRID_TARGET_AVX2 uint32_t DequantizeLoopAvx2(const uint8_t* in, size_t n, Pow2 scale, float* out) {
  const __m256 first = _mm256_set1_ps(scale.first);
  const __m256 second = _mm256_set1_ps(scale.second);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i max_abs = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i * 4));
    if constexpr (kNetwork) q = ByteSwap32(q);
    const __m256 y = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), first), second);
    _mm256_storeu_ps(out + i, y);
    max_abs = _mm256_max_epu32(max_abs, _mm256_and_si256(_mm256_castps_si256(y), abs_mask));
  }
  const uint32_t tail = DequantizeScalar(in + i * 4, n - i, kNetwork, scale, out + i);
  return std::max(HorizontalMax(max_abs), tail);
}

}  // namespace

GRID_TARGET_AVX2 uint32_t MaxAbsBitsAvx2(const float* in, size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  // Two accumulators hide the latency of the max.
  __m256i m0 = _mm256_setzero_si256();
  __m256i m1 = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 8));
    m0 = _mm256_max_epu32(m0, _mm256_and_si256(a, abs_mask));
    m1 = _mm256_max_epu32(m1, _mm256_and_si256(b, abs_mask));
  }
  const uint32_t tail = MaxAbsBitsScalar(in + i, n - i);
  return std::max(HorizontalMax(_mm256_max_epu32(m0, m1)), tail);
}

uint32_t QuantizeAvx2(const float* in, size_t n, Pow2 scale, float limit, bool network,
                      uint8_t* out) {
  return network ? QuantizeLoopAvx2<true>(in, n, scale, limit, out)
                 : QuantizeLoopAvx2<false>(in, n, scale, limit, out);
}

uint32_t DequantizeAvx2(const uint8_t* in, size_t n, bool network, Pow2 scale, float* out) {
  return network ? DequantizeLoopAvx2<true>(in, n, scale, out)
                 : DequantizeLoopAvx2<false>(in, n, scale, out);
}

GRID_TARGET_AVX2 void ByteSwapWordsAvx2(const uint8_t* in, size_t n, uint8_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 4 * i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4 * i), ByteSwap32(v));
  }
  ByteSwapWordsScalar(in + 4 * i, n - i, out + 4 * i);
}

GRID_TARGET_F16C void HalfToFloatF16c(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  HalfToFloatScalar(in + i, n - i, out + i);
}

GRID_TARGET_F16C void FloatToHalfF16c(const float* in, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  FloatToHalfScalar(in + i, n - i, out + i);
}

}  // namespace grid::numerics::internal

#else  // not x86-64: HaveAvx2()/HaveF16c() are false, so these are never reached.

namespace grid::numerics::internal {
uint32_t MaxAbsBitsAvx2(const float* in, size_t n) { return MaxAbsBitsScalar(in, n); }
uint32_t QuantizeAvx2(const float* in, size_t n, Pow2 scale, float limit, bool network,
                      uint8_t* out) {
  return QuantizeScalar(in, n, scale, limit, network, out);
}
uint32_t DequantizeAvx2(const uint8_t* in, size_t n, bool network, Pow2 scale, float* out) {
  return DequantizeScalar(in, n, network, scale, out);
}
void ByteSwapWordsAvx2(const uint8_t* in, size_t n, uint8_t* out) {
  ByteSwapWordsScalar(in, n, out);
}
void HalfToFloatF16c(const uint16_t* in, size_t n, float* out) { HalfToFloatScalar(in, n, out); }
void FloatToHalfF16c(const float* in, size_t n, uint16_t* out) { FloatToHalfScalar(in, n, out); }
}  // namespace grid::numerics::internal

#endif
