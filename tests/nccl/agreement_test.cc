// The NCCL layer's agreement check, summed over ranks as the allreduce
// would: the verdict says whether the ranks queued the same operations, and
// who refused the call for its arguments.
#include "nccl/agreement.h"

#include <vector>

#include "gmock/gmock.h"
#include "grid/nccl.h"
#include "gtest/gtest.h"

namespace grid::nccl {
namespace {

using ::testing::HasSubstr;

struct Rank {
  std::vector<OpKey> ops;
  bool refused = false;
};

Verdict SumOver(const std::vector<Rank>& ranks) {
  std::vector<int32_t> sum;
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<int32_t> mine = AgreementCheck(ranks[r].ops, ranks[r].refused, static_cast<int>(r));
    if (sum.empty()) sum.assign(mine.size(), 0);
    EXPECT_EQ(mine.size(), sum.size()) << "rank " << r << "'s check has another length";
    if (mine.size() != sum.size()) return {};
    for (size_t i = 0; i < mine.size(); ++i) sum[i] += mine[i];
  }
  return ReadAgreement(sum, static_cast<int>(ranks.size()));
}

const std::vector<OpKey> kTwo = {{1000, ncclFloat32, ncclSum}, {10, ncclInt32, ncclAvg}};

TEST(Agreement, TheSameOperationsAgree) {
  const Verdict v = SumOver({{kTwo}, {kTwo}, {kTwo}, {kTwo}});
  EXPECT_TRUE(v.same_ops);
  EXPECT_EQ(v.refused, 0);
}

TEST(Agreement, ACountOrANumberOfOperationsThatDiffersIsSeen) {
  std::vector<OpKey> other = kTwo;
  other[1].count = 11;
  EXPECT_FALSE(SumOver({{kTwo}, {kTwo}, {other}, {kTwo}}).same_ops);
  EXPECT_FALSE(SumOver({{kTwo}, {{kTwo[0]}}, {kTwo}}).same_ops);
}

TEST(Agreement, OneRefusingRankIsNamedAndSeveralAreCounted) {
  Verdict one = SumOver({{kTwo}, {kTwo}, {kTwo}, {kTwo, true}});
  EXPECT_EQ(one.refused, 1);
  EXPECT_EQ(one.refusing_rank, 3);
  Verdict first = SumOver({{kTwo, true}, {kTwo}});
  EXPECT_EQ(first.refused, 1);
  EXPECT_EQ(first.refusing_rank, 0);
  Verdict two = SumOver({{kTwo}, {kTwo, true}, {kTwo, true}});
  EXPECT_EQ(two.refused, 2);
  EXPECT_EQ(two.refusing_rank, -1);
}

TEST(Agreement, MessagesNameTypesAndOps) {
  const std::string d = Describe({{8, ncclFloat64, ncclMax}, {3, ncclBfloat16, ncclAvg}});
  EXPECT_THAT(d, HasSubstr("2 operations: count 8 ncclFloat64 ncclMax; count 3 ncclBfloat16 ncclAvg"));
  EXPECT_THAT(Describe({{1, 42, 9}}),
              HasSubstr("datatype 42 op 9"));
}

}  // namespace
}  // namespace grid::nccl
