#include "switch/elements.h"

#include "grid/wire.h"
#include "numerics/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace grid::sw::internal {
namespace {

void LoadScalar(int32_t* out, const uint8_t* payload, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = wire::LoadElement(payload, i);
}

void StoreScalar(uint8_t* payload, const int32_t* in, size_t n) {
  for (size_t i = 0; i < n; ++i) wire::StoreElement(payload, i, in[i]);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) inline __m256i Swap(__m256i v) {
  const __m256i order = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,  //
                                         3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
  return _mm256_shuffle_epi8(v, order);
}

__attribute__((target("avx2"))) void LoadAvx2(int32_t* out, const uint8_t* payload, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(payload + 4 * i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), Swap(v));
  }
  LoadScalar(out + i, payload + 4 * i, n - i);
}

__attribute__((target("avx2"))) void StoreAvx2(uint8_t* payload, const int32_t* in, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(payload + 4 * i), Swap(v));
  }
  StoreScalar(payload + 4 * i, in + i, n - i);
}
#endif

}  // namespace

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
  // Signed overflow of a + b = s: a and b share a sign that s does not, i.e.
  // the sign bit of (a ^ s) & (b ^ s).
  __m256i wrapped = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i));
    const __m256i b = Swap(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(payload + 4 * i)));
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

void LoadElements(int32_t* out, const uint8_t* payload, size_t n) {
#if defined(__x86_64__)
  if (numerics::internal::HaveAvx2()) return LoadAvx2(out, payload, n);
#endif
  LoadScalar(out, payload, n);
}

bool AddElements(int32_t* acc, const uint8_t* payload, size_t n) {
  return numerics::internal::HaveAvx2() ? AddElementsAvx2(acc, payload, n)
                                        : AddElementsScalar(acc, payload, n);
}

void StoreElements(uint8_t* payload, const int32_t* in, size_t n) {
#if defined(__x86_64__)
  if (numerics::internal::HaveAvx2()) return StoreAvx2(payload, in, n);
#endif
  StoreScalar(payload, in, n);
}

}  // namespace grid::sw::internal
