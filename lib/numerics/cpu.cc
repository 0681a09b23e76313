#include <cmath>

#include "numerics/kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace grid::numerics::internal {
namespace {

struct Features {
  bool avx2 = false;
  bool f16c = false;
};

Features Detect() {
  Features f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  // __builtin_cpu_supports("avx2") also checks that the OS saves YMM state.
  f.avx2 = __builtin_cpu_supports("avx2");
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (f.avx2 && __get_cpuid(1, &eax, &ebx, &ecx, &edx)) f.f16c = (ecx & bit_F16C) != 0;
#endif
  return f;
}

const Features& Cpu() {
  static const Features features = Detect();
  return features;
}

}  // namespace

bool HaveAvx2() { return Cpu().avx2; }
bool HaveF16c() { return Cpu().f16c; }

Pow2 SplitPow2(int shift) {
  const int first = shift / 2;
  return {std::ldexp(1.0f, first), std::ldexp(1.0f, shift - first)};
}

}  // namespace grid::numerics::internal
