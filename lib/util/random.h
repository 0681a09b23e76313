// Internal: a small seeded generator whose output is defined by this file
// alone (std:: distributions differ between standard libraries), so the same
// seed gives the same topology and plan everywhere.
#ifndef GRID_LIB_UTIL_RANDOM_H_
#define GRID_LIB_UTIL_RANDOM_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace grid::util {

// SplitMix64 (Steele, Lea, Flood 2014).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1p-53; }

  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

  // Uniform in [0, n), n > 0. The modulo bias is below 2^-40 for n < 2^24.
  uint64_t Below(uint64_t n) { return Next() % n; }

  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t state_;
};

// A stable 64-bit mix of two values, for hashing without a generator.
inline uint64_t Mix(uint64_t a, uint64_t b) {
  Random r(a * 0x9e3779b97f4a7c15ull ^ b);
  return r.Next();
}

}  // namespace grid::util

#endif  // GRID_LIB_UTIL_RANDOM_H_
