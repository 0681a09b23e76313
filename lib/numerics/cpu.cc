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

// Detected once, when the library loads, so the per-call check is a load.
const Features kCpu = Detect();

}  // namespace

bool HaveAvx2() { return kCpu.avx2; }
bool HaveF16c() { return kCpu.f16c; }

}  // namespace grid::numerics::internal
