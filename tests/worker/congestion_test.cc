// The worker's congestion control (lib/worker/congestion.h), driven by
// synthetic feedback on a virtual clock: slow start, additive increase,
// DCTCP's proportional decrease, and the halving on loss once per RTO.
#include "worker/congestion.h"

#include "gtest/gtest.h"

namespace grid::worker {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);
constexpr absl::Duration kRto = absl::Milliseconds(10);

// Feeds `n` results, each with its feedback, `marked` or not.
void Results(CongestionControl& cc, int n, bool marked) {
  for (int i = 0; i < n; ++i) {
    cc.OnFeedback(marked);
    cc.OnResult(marked);
  }
}

TEST(CongestionControl, StartsWithinItsBounds) {
  EXPECT_EQ(CongestionControl(16, 256, 1.0 / 16).window(), 16u);
  EXPECT_EQ(CongestionControl(0, 256, 1.0 / 16).window(), 1u);
  EXPECT_EQ(CongestionControl(500, 256, 1.0 / 16).window(), 256u);
  EXPECT_EQ(CongestionControl(4, 0, 1.0 / 16).window(), 1u);  // a lane always has one
}

TEST(CongestionControl, SlowStartGrowsByOnePerResultUpToTheMax) {
  CongestionControl cc(16, 100, 1.0 / 16);
  Results(cc, 16, false);
  EXPECT_EQ(cc.window(), 32u);  // doubled in a window of results
  Results(cc, 200, false);
  EXPECT_EQ(cc.window(), 100u);
}

TEST(CongestionControl, AboveSsthreshItGrowsByOnePerWindow) {
  CongestionControl cc(64, 1000, 1.0 / 16);
  cc.OnLoss(kT0, kRto);  // ssthresh = cwnd = 32
  ASSERT_EQ(cc.window(), 32u);
  // +1/cwnd a result: a window of results adds about one.
  Results(cc, 32, false);
  EXPECT_EQ(cc.window(), 32u);  // 32.985
  Results(cc, 1, false);
  EXPECT_EQ(cc.window(), 33u);
  Results(cc, 32, false);
  EXPECT_EQ(cc.window(), 33u);  // 33.97
  Results(cc, 2, false);
  EXPECT_EQ(cc.window(), 34u);
}

TEST(CongestionControl, MarkedResultsDoNotGrowAndAFullyMarkedWindowHalves) {
  CongestionControl cc(32, 256, 1.0 / 16);
  // alpha starts at 1: the first window of marks halves, as TCP would.
  Results(cc, 32, true);
  EXPECT_EQ(cc.window(), 16u);
  EXPECT_DOUBLE_EQ(cc.marked_fraction(), 1.0);
}

TEST(CongestionControl, DctcpShrinksInProportionToTheMarkedFraction) {
  const double g = 1.0 / 16;
  CongestionControl cc(64, 1000, g);
  // Windows with no mark bring alpha down: (1 - g)^k.
  double alpha = 1;
  for (int w = 0; w < 40; ++w) {
    const uint32_t n = cc.window();
    for (uint32_t i = 0; i < n; ++i) cc.OnFeedback(false);
    alpha *= 1 - g;
  }
  EXPECT_NEAR(cc.marked_fraction(), alpha, 1e-12);
  // One window with a quarter marked: alpha moves by g toward 1/4, and
  // the window shrinks by alpha / 2, once.
  const uint32_t n = cc.window();
  ASSERT_EQ(n % 4, 0u);
  for (uint32_t i = 0; i < n; ++i) cc.OnFeedback(i % 4 == 0);
  alpha = (1 - g) * alpha + g * 0.25;
  EXPECT_NEAR(cc.marked_fraction(), alpha, 1e-12);
  EXPECT_EQ(cc.window(), static_cast<uint32_t>(n * (1 - alpha / 2)));
  EXPECT_GT(cc.window(), n / 2);  // far less than a halving
}

TEST(CongestionControl, ALossHalvesOncePerRtoAndNotBelowTheFloor) {
  CongestionControl cc(64, 256, 1.0 / 16);
  cc.OnLoss(kT0, kRto);
  EXPECT_EQ(cc.window(), 32u);
  cc.OnLoss(kT0 + absl::Milliseconds(9), kRto);  // the same loss event
  EXPECT_EQ(cc.window(), 32u);
  cc.OnLoss(kT0 + kRto, kRto);
  EXPECT_EQ(cc.window(), 16u);
  // The floor: a timeout never takes the window below the initial one.
  cc.OnLoss(kT0 + 2 * kRto, kRto, 16);
  EXPECT_EQ(cc.window(), 16u);
  for (int i = 3; i < 20; ++i) cc.OnLoss(kT0 + i * kRto, kRto);
  EXPECT_EQ(cc.window(), 1u);
}

}  // namespace
}  // namespace grid::worker
