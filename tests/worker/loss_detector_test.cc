// The worker's loss rules (lib/worker/loss_detector.h), driven by
// synthetic sends and results on a virtual clock: the RTO from clean
// samples (RFC 6298, Karn), loss by order (RACK), the overtaken chunk's
// timeout, a stall's probe (F-RTO) and the queue-aware stall timeout.
#include "worker/loss_detector.h"

#include "gtest/gtest.h"

namespace grid::worker {
namespace {

using absl::Milliseconds;
using absl::Microseconds;
using Verdict = LossDetector::Verdict;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

EngineOptions Options() {
  EngineOptions o;
  o.rto = Milliseconds(10);
  o.min_rto = Milliseconds(1);
  o.max_rto = Milliseconds(500);
  o.scan_interval = Milliseconds(1);
  return o;
}

TEST(LossDetector, TheRtoFollowsCleanSamplesOnly) {
  LossDetector d(Options());
  EXPECT_EQ(d.rto(), Milliseconds(10));
  d.OnAnswered(0, kT0, 1, false, kT0 + Milliseconds(4));
  EXPECT_EQ(d.srtt(), Milliseconds(4));
  EXPECT_EQ(d.rto(), Milliseconds(12));  // srtt + 4 x rtt/2
  EXPECT_EQ(d.min_rtt(), Milliseconds(4));
  d.OnAnswered(1, kT0, 1, false, kT0 + Milliseconds(8));
  EXPECT_EQ(d.srtt(), Microseconds(4500));          // + (8 - 4) / 8
  EXPECT_EQ(d.rto(), Microseconds(4500 + 4 * 2500));  // rttvar 2 + (4 - 2) / 4
  // Karn: a chunk this rank sent twice, or one another rank resent
  // (RETRANSMIT), measures loss recovery, not the path.
  d.OnAnswered(2, kT0, 2, false, kT0 + Milliseconds(100));
  d.OnAnswered(3, kT0, 1, true, kT0 + Milliseconds(100));
  EXPECT_EQ(d.srtt(), Microseconds(4500));
  EXPECT_EQ(d.min_rtt(), Milliseconds(4));
  // Within [min_rto, max_rto].
  LossDetector fast(Options());
  fast.OnAnswered(0, kT0, 1, false, kT0 + Microseconds(100));
  EXPECT_EQ(fast.rto(), Milliseconds(1));
  LossDetector slow(Options());
  slow.OnAnswered(0, kT0, 1, false, kT0 + absl::Seconds(1));
  EXPECT_EQ(slow.rto(), Milliseconds(500));
}

TEST(LossDetector, AChunkOvertakenByALaterAnsweredOneIsLostAfterTheReorderingWindow) {
  LossDetector d(Options());
  const absl::Time a = kT0, b = kT0 + Milliseconds(1);  // A sent, then B
  d.OnAnswered(1, b, 1, false, b + Milliseconds(2));    // B's round trip: 2 ms
  // The window: one scan interval and a quarter round trip (1.5 ms), after
  // B's round trip: A is lost 3.5 ms after it was sent.
  auto judge = [&](absl::Duration since, int sends = 1) {
    const absl::Time now = a + since;
    return d.Judge(d.StartScan(now, 2), a, sends, now);
  };
  EXPECT_EQ(judge(Microseconds(3400)), Verdict::kWaiting);
  EXPECT_EQ(judge(Microseconds(3500)), Verdict::kLostByOrder);
  // A chunk already resent once waits twice as long.
  EXPECT_EQ(judge(Microseconds(6900), 2), Verdict::kWaiting);
  EXPECT_EQ(judge(Milliseconds(7), 2), Verdict::kLostByOrder);
  // A chunk sent after B is not overtaken.
  const absl::Time c = b + Microseconds(1);
  EXPECT_EQ(d.Judge(d.StartScan(c + Milliseconds(50), 2), c, 1, c + Milliseconds(50)),
            Verdict::kWaiting);
}

TEST(LossDetector, OnlyAFirstSendsResultOrdersTheStream) {
  LossDetector d(Options());
  // B was resent at +5 ms and answered at +6 ms: that result may answer
  // either send, so it says nothing of A's order, only that A was
  // overtaken; A times out after the RTO (10 ms, nothing measured).
  d.OnAnswered(1, kT0 + Milliseconds(5), 2, false, kT0 + Milliseconds(6));
  auto judge = [&](absl::Duration since) {
    const absl::Time now = kT0 + since;
    return d.Judge(d.StartScan(now, 2), kT0, 1, now);
  };
  EXPECT_EQ(judge(Microseconds(9900)), Verdict::kWaiting);
  EXPECT_EQ(judge(Milliseconds(10)), Verdict::kTimedOut);
}

TEST(LossDetector, AStallIsProbedAndTheProbesAnswerSaysWhatWasLost) {
  LossDetector d(Options());
  // A (position 0) sent at 0 and B (position 1) at +9 ms; nothing comes
  // back. After the RTO the stream has stalled: A is probed.
  EXPECT_FALSE(d.StallProbeDue(d.StartScan(kT0 + Microseconds(9900), 2), kT0, 1,
                               kT0 + Microseconds(9900)));
  const absl::Time probe = kT0 + Milliseconds(10);
  ASSERT_TRUE(d.StallProbeDue(d.StartScan(probe, 2), kT0, 1, probe));
  d.ProbeSent(0);
  // The probe comes back alone at +12 ms: B, sent before the probe, is
  // lost once a reordering window (1 ms + (12 - 10) / 4) has passed.
  d.OnAnswered(0, probe, 2, false, kT0 + Milliseconds(12));
  const absl::Time b = kT0 + Milliseconds(9);
  const absl::Time early = kT0 + Milliseconds(13), late = kT0 + Microseconds(13500);
  EXPECT_EQ(d.Judge(d.StartScan(early, 1), b, 1, early), Verdict::kWaiting);
  EXPECT_EQ(d.Judge(d.StartScan(late, 1), b, 1, late), Verdict::kLostByOrder);
}

TEST(LossDetector, AResultFromBeforeTheProbeMakesTheStallAWait) {
  LossDetector d(Options());
  const absl::Time probe = kT0 + Milliseconds(10);
  ASSERT_TRUE(d.StallProbeDue(d.StartScan(probe, 3), kT0, 1, probe));
  d.ProbeSent(0);
  d.OnAnswered(0, probe, 2, false, kT0 + Milliseconds(12));
  // C, sent at +5 ms before the probe, is answered: the rest is coming.
  d.OnAnswered(2, kT0 + Milliseconds(5), 1, true, kT0 + Microseconds(12100));
  const absl::Time b = kT0 + Milliseconds(9), late = kT0 + Microseconds(13500);
  EXPECT_EQ(d.Judge(d.StartScan(late, 1), b, 1, late), Verdict::kWaiting);
}

TEST(LossDetector, AStallWaitsForTheQueueAheadAtTheRateResultsCome) {
  LossDetector d(Options());
  // Ten chunks in flight and a result a millisecond (each some other
  // rank's retransmission, so no round trip is sampled): the queue ahead of
  // the oldest takes 10 ms, and a stall waits 1.5 times that, not the RTO.
  absl::Time now = kT0;
  d.StartScan(now, 10);
  for (int i = 0; i < 8; ++i) {
    now += Milliseconds(1);
    d.OnAnswered(i, now - Milliseconds(1), 1, true, now);
    d.StartScan(now, 10);
  }
  EXPECT_NEAR(d.result_rate(), 1000, 1);
  const absl::Time oldest = now;  // sent after the last result
  EXPECT_FALSE(d.StallProbeDue(d.StartScan(now + Milliseconds(14), 10), oldest, 1,
                               now + Milliseconds(14)));
  EXPECT_TRUE(d.StallProbeDue(d.StartScan(now + Milliseconds(15), 10), oldest, 1,
                              now + Milliseconds(15)));
}

TEST(LossDetector, BackoffIsBoundedWhileResultsComeAndLongerOnceTheyStop) {
  LossDetector d(Options());
  d.OnAnswered(1, kT0 + Milliseconds(5), 2, false, kT0 + Milliseconds(6));
  // A chunk sent 8 times: 2^3 = 8 x the 10 ms RTO while results came within
  // 2 x max_rto, not 2^7.
  auto judge = [&](absl::Time now) { return d.Judge(d.StartScan(now, 2), kT0, 8, now); };
  EXPECT_EQ(judge(kT0 + Milliseconds(79)), Verdict::kWaiting);
  EXPECT_EQ(judge(kT0 + Milliseconds(80)), Verdict::kTimedOut);
  // Once nothing has come back for 2 x max_rto the path is down: a stalled
  // chunk sent 8 times waits up to max_rto, not 8 x the RTO.
  const absl::Time sent = kT0 + Milliseconds(1100);
  auto due = [&](absl::Duration after) {
    const absl::Time now = sent + after;
    return d.StallProbeDue(d.StartScan(now, 1), sent, 8, now);
  };
  EXPECT_FALSE(due(Milliseconds(80)));
  EXPECT_FALSE(due(Milliseconds(499)));
  EXPECT_TRUE(due(Milliseconds(500)));
}

}  // namespace
}  // namespace grid::worker
