// ThreadSanitizer annotations for hand-offs it cannot see. DPDK's rings and
// mempools order memory with compiler barriers and x86's ordering (its
// generic memory model), inside libraries built without TSan, so an mbuf
// passed from one lcore to another through them looks like a race. Where an
// mbuf changes hands, the giver calls TsanRelease and the taker TsanAcquire
// on its address. Without TSan both are empty.
#ifndef GRID_UTIL_TSAN_H_
#define GRID_UTIL_TSAN_H_

#if defined(__SANITIZE_THREAD__)
#define GRID_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GRID_TSAN 1
#endif
#endif

#ifdef GRID_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace grid::util {

inline void TsanRelease(const void* p) {
#ifdef GRID_TSAN
  __tsan_release(const_cast<void*>(p));
#else
  (void)p;
#endif
}

inline void TsanAcquire(const void* p) {
#ifdef GRID_TSAN
  __tsan_acquire(const_cast<void*>(p));
#else
  (void)p;
#endif
}

}  // namespace grid::util

#endif  // GRID_UTIL_TSAN_H_
