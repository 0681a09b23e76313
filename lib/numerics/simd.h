// Internal: small AVX2 helpers shared by the kernels that move big-endian
// int32 payloads (numerics, switch). Only for functions compiled with
// target("avx2") and called after HaveAvx2().
#ifndef GRID_LIB_NUMERICS_SIMD_H_
#define GRID_LIB_NUMERICS_SIMD_H_

#if defined(__x86_64__)
#include <immintrin.h>

namespace grid::numerics::internal {

// Reverses the bytes of each 32-bit lane: host <-> network order.
__attribute__((target("avx2"))) inline __m256i ByteSwap32(__m256i v) {
  const __m256i order = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,  //
                                         3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
  return _mm256_shuffle_epi8(v, order);
}

}  // namespace grid::numerics::internal

#endif
#endif  // GRID_LIB_NUMERICS_SIMD_H_
