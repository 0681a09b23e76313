#include "nccl/agreement.h"

#include "absl/strings/str_format.h"
#include "nccl/codes.h"

namespace grid::nccl {
namespace {

// Two 64-bit values (the number of operations, and a hash of their counts,
// types and ops in order), each split into 8-bit limbs; each limb l
// contributes l and l^2 to an int32 sum over the ranks. By Cauchy-Schwarz,
// n * sum(l^2) == sum(l)^2 exactly when every rank's l is the same; the sums
// stay below 2^31 for up to 2^15 ranks. Then two plain sums: the ranks that
// refuse, and their ranks plus one (which names the one when there is one).
constexpr int kCheckValues = 16;
constexpr size_t kCheckLength = 2 * kCheckValues + 2;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ull;
}

}  // namespace

std::vector<int32_t> AgreementCheck(const std::vector<OpKey>& ops, bool refused, int rank) {
  uint64_t hash = 0;
  for (const OpKey& k : ops) {
    hash = Mix(Mix(Mix(hash, k.count), static_cast<uint64_t>(k.type)), static_cast<uint64_t>(k.op));
  }
  std::vector<int32_t> out;
  out.reserve(kCheckLength);
  for (uint64_t value : {uint64_t{ops.size()}, hash}) {
    for (int i = 0; i < 8; ++i) {
      const auto l = static_cast<int32_t>((value >> (8 * i)) & 0xff);
      out.push_back(l);
      out.push_back(l * l);
    }
  }
  out.push_back(refused ? 1 : 0);
  out.push_back(refused ? rank + 1 : 0);
  return out;
}

Verdict ReadAgreement(const std::vector<int32_t>& sums, int nranks) {
  Verdict v;
  if (sums.size() != kCheckLength) return v;
  v.same_ops = true;
  for (int i = 0; i < kCheckValues; ++i) {
    const int64_t s = sums[2 * i], squares = sums[2 * i + 1];
    if (s * s != int64_t{nranks} * squares) v.same_ops = false;
  }
  v.refused = sums[2 * kCheckValues];
  if (v.refused == 1) v.refusing_rank = sums[2 * kCheckValues + 1] - 1;
  return v;
}

std::string Describe(const std::vector<OpKey>& ops) {
  std::string out = absl::StrFormat("%d operation%s", ops.size(), ops.size() == 1 ? "" : "s");
  for (size_t i = 0; i < ops.size() && i < 4; ++i) {
    absl::StrAppendFormat(&out, "%s count %d %s %s", i == 0 ? ":" : ";", ops[i].count,
                          TypeName(ops[i].type), OpName(ops[i].op));
  }
  if (ops.size() > 4) out += "; ...";
  return out;
}

}  // namespace grid::nccl
