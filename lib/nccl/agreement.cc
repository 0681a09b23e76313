#include "nccl/agreement.h"

#include "absl/strings/str_format.h"

namespace grid::nccl {
namespace {

// Two 64-bit values (the number of operations, and a hash of their counts,
// types and ops in order), each split into 8-bit limbs; each limb l
// contributes l and l^2 to an int32 sum over the ranks. By Cauchy-Schwarz,
// n * sum(l^2) == sum(l)^2 exactly when every rank's l is the same; the sums
// stay below 2^31 for up to 2^15 ranks.
constexpr int kCheckValues = 16;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ull;
}

}  // namespace

std::vector<int32_t> AgreementCheck(const std::vector<OpKey>& ops) {
  uint64_t hash = 0;
  for (const OpKey& k : ops) {
    hash = Mix(Mix(Mix(hash, k.count), static_cast<uint64_t>(k.type)), static_cast<uint64_t>(k.op));
  }
  std::vector<int32_t> out;
  for (uint64_t value : {uint64_t{ops.size()}, hash}) {
    for (int i = 0; i < 8; ++i) {
      const auto l = static_cast<int32_t>((value >> (8 * i)) & 0xff);
      out.push_back(l);
      out.push_back(l * l);
    }
  }
  return out;
}

bool Agreed(const std::vector<int32_t>& sums, int nranks) {
  if (sums.size() != 2 * kCheckValues) return false;
  for (int i = 0; i < kCheckValues; ++i) {
    const int64_t s = sums[2 * i], squares = sums[2 * i + 1];
    if (s * s != int64_t{nranks} * squares) return false;
  }
  return true;
}

std::string Describe(const std::vector<OpKey>& ops) {
  std::string out = absl::StrFormat("%d operation%s", ops.size(), ops.size() == 1 ? "" : "s");
  for (size_t i = 0; i < ops.size() && i < 4; ++i) {
    absl::StrAppendFormat(&out, "%s count %d datatype %d op %d", i == 0 ? ":" : ";", ops[i].count,
                          ops[i].type, ops[i].op);
  }
  if (ops.size() > 4) out += "; ...";
  return out;
}

}  // namespace grid::nccl
