#include "aggregation/elements.h"

#include "grid/wire.h"
#include "numerics/kernels.h"
#include "numerics/simd.h"

namespace grid::aggregation {

bool AddElementsScalar(int32_t* acc, const uint8_t* payload, size_t n) {
  bool overflow = false;
  for (size_t i = 0; i < n; ++i) {
    int32_t sum;
    overflow |= __builtin_add_overflow(acc[i], wire::LoadElement(payload, i), &sum);
    acc[i] = sum;
  }
  return overflow;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) bool AddElementsAvx2(int32_t* acc, const uint8_t* payload,
                                                     size_t n) {
  using numerics::internal::ByteSwap32;
  // Signed overflow of a + b = s: a and b share a sign that s does not, i.e.
  // the sign bit of (a ^ s) & (b ^ s).
  __m256i wrapped = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i));
    const __m256i b =
        ByteSwap32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(payload + 4 * i)));
    const __m256i s = _mm256_add_epi32(a, b);
    wrapped =
        _mm256_or_si256(wrapped, _mm256_and_si256(_mm256_xor_si256(a, s), _mm256_xor_si256(b, s)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i), s);
  }
  const bool tail = AddElementsScalar(acc + i, payload + 4 * i, n - i);
  return tail || _mm256_movemask_ps(_mm256_castsi256_ps(wrapped)) != 0;
}
#else
bool AddElementsAvx2(int32_t* acc, const uint8_t* payload, size_t n) {
  return AddElementsScalar(acc, payload, n);
}
#endif

bool AddElements(int32_t* acc, const uint8_t* payload, size_t n) {
  return numerics::internal::HaveAvx2() ? AddElementsAvx2(acc, payload, n)
                                        : AddElementsScalar(acc, payload, n);
}

}  // namespace grid::aggregation
