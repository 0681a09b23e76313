// grid-report's reading and rules (tools/report.h): traces written by the
// library's own writer read back as the time they record, and each rule
// names its factor from the evidence that factor leaves, in the order
// docs/observability.md gives.
#include "tools/report.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/chrome.h"
#include "trace/recorder.h"

namespace grid::tools {
namespace {

using ::testing::HasSubstr;

absl::Time At(double ms) {
  return absl::FromUnixMicros(1'700'000'000'000'000) + absl::Milliseconds(ms);
}

// A rank busy for 100 ms (one operation of 1000 chunks) that waits for its
// window `window_ms` of them and resends `resends` chunks.
RankRun Rank(int rank, double window_ms, int resends) {
  RankRun r;
  r.rank = rank;
  r.busy_s = 0.1;
  r.operations = 1;
  r.chunks = 1000;
  r.window = 64;
  r.slots = 64;
  r.wait_s["window full"] = window_ms / 1000;
  r.wait_s["results wait"] = (100 - window_ms) / 1000;
  r.instants["resend (timeout)"] = resends;
  r.srtt_us = 300;
  r.min_rtt_us = 250;
  return r;
}

tools::Run Quiet() {
  tools::Run run;
  for (int k = 0; k < 4; ++k) run.ranks.push_back(Rank(k, 10, 0));
  SwitchRun s;
  s.name = "S1";
  s.congestion_threshold = 64;
  s.max_depth = {{0, 2}, {4, 3}};
  s.mean_depth = {{0, 0.5}, {4, 1}};
  s.hosts = {{4, "10.0.0.12"}};
  s.data = 4000;
  run.switches.push_back(s);
  run.roots.push_back({"10.0.0.12", 1000, 0, 8});
  return run;
}

TEST(ReportRules, NothingBindsInAQuietRun) { EXPECT_EQ(Diagnose(Quiet()).factor, "none"); }

TEST(ReportRules, WaitingForTheWindowWithoutQueuesIsTheWindow) {
  tools::Run run = Quiet();
  for (RankRun& r : run.ranks) r = Rank(r.rank, 80, 0);
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.factor, "window");
  EXPECT_THAT(d.change, HasSubstr("GRID_WINDOW"));
}

TEST(ReportRules, DataDroppedOverCapacityIsTheCapacity) {
  tools::Run run = Quiet();
  for (RankRun& r : run.ranks) r = Rank(r.rank, 80, 30);  // resends and window waits too
  run.switches[0].drops["over_capacity"] = 50;
  run.switches[0].capacity_gbps = 0.01;
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.factor, "capacity");
  EXPECT_THAT(d.evidence, HasSubstr("S1 aggregates at C_s = 0.01 Gbps: 50 DATA dropped"));
  EXPECT_THAT(d.change, HasSubstr("cap.S1="));
}

TEST(ReportRules, ChunksPassedOnByABestEffortSwitchAreTheCapacity) {
  tools::Run run = Quiet();
  run.switches[0].passed = 500;  // of 4000 chunks
  EXPECT_EQ(Diagnose(run).factor, "capacity");
}

TEST(ReportRules, ADeepQueueWithLongRoundTripsIsASlowLinkNamedByItsHost) {
  tools::Run run = Quiet();
  run.switches[0].max_depth[4] = 48;
  run.switches[0].mean_depth[4] = 30;
  for (RankRun& r : run.ranks) {
    r = Rank(r.rank, 80, 0);
    r.srtt_us = 2000;
  }
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.factor, "slow link");
  EXPECT_THAT(d.evidence, HasSubstr("S1's port 4 (the root's link, 10.0.0.12) queues up to 48"));
}

// A switch process descheduled for a moment shows one deep sample.
TEST(ReportRules, AQueueDeepInOneSampleIsNotASlowLink) {
  tools::Run run = Quiet();
  run.switches[0].max_depth[4] = 98;
  run.switches[0].mean_depth[4] = 2;
  for (RankRun& r : run.ranks) {
    r = Rank(r.rank, 80, 0);
    r.srtt_us = 2000;
  }
  EXPECT_EQ(Diagnose(run).factor, "window");
}

TEST(ReportRules, ADeepQueueWithShortRoundTripsIsNotASlowLink) {
  tools::Run run = Quiet();
  run.switches[0].max_depth[4] = 48;  // a standing queue, but round trips stay short
  run.switches[0].mean_depth[4] = 30;
  for (RankRun& r : run.ranks) r = Rank(r.rank, 80, 0);
  EXPECT_EQ(Diagnose(run).factor, "window");
}

TEST(ReportRules, ResendsAreLossAndNameTheLinksThatDropped) {
  tools::Run run = Quiet();
  for (RankRun& r : run.ranks) r = Rank(r.rank, 60, 20);  // 2% of chunks
  run.switches[0].drops["impaired"] = 70;
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.factor, "loss");
  EXPECT_THAT(d.evidence, HasSubstr("S1 70"));
}

// A rank descheduled past its RTO resends chunks nobody lost.
TEST(ReportRules, AFewResendsNoSwitchSawDroppedAreNotLossWhenTheWindowBinds) {
  tools::Run run = Quiet();
  for (RankRun& r : run.ranks) r = Rank(r.rank, 90, 16);  // 1.6%
  EXPECT_EQ(Diagnose(run).factor, "window");
  for (RankRun& r : run.ranks) r = Rank(r.rank, 10, 16);  // and nothing else binds
  EXPECT_EQ(Diagnose(run).factor, "loss");
  for (RankRun& r : run.ranks) r = Rank(r.rank, 90, 60);  // 6%: loss, seen or not
  EXPECT_EQ(Diagnose(run).factor, "loss");
}

TEST(ReportRules, LossAtAFullQueueIsTheSlowLinkThatFilledIt) {
  tools::Run run = Quiet();
  for (RankRun& r : run.ranks) r = Rank(r.rank, 60, 20);
  run.switches[0].max_depth[4] = 20;
  run.switches[0].mean_depth[4] = 8;
  run.switches[0].drops["queue_full"] = 70;
  EXPECT_EQ(Diagnose(run).factor, "slow link");
}

// Traces as the library writes them, read back.
class ReportRead : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("report_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ReportRead, ReadsOperationsWaitsResendsAndRoundTrips) {
  trace::Recorder r(64);
  r.AsyncBegin(At(0), "allreduce", "op", 1, {{"chunks", 100}});
  r.AsyncBegin(At(5), "allreduce", "op", 2, {{"chunks", 50}});  // overlaps the first
  r.Begin(At(1), "window full", "wait");
  r.Counter(At(2), "round trip (us)", {{"srtt", 900}, {"min", 300}, {"rto", 2000}});
  r.Instant(At(3), "resend (timeout)", "loss");
  r.Instant(At(4), "stall probe", "loss");
  r.End(At(7), "window full", "wait");
  r.AsyncEnd(At(10), "allreduce", "op", 1);
  r.AsyncEnd(At(12), "allreduce", "op", 2);
  ASSERT_TRUE(
      trace::WriteChromeTrace(
          dir_, "rank-3-job1.json",
          {"rank 3 (job 1)", "rank", 9, {{"lane 0", &r}}, R"("rank":3,"slots":64,"window":64)"})
          .ok());
  auto run = ReadRun(dir_);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->ranks.size(), 1u);
  const RankRun& k = run->ranks[0];
  EXPECT_EQ(k.rank, 3);
  EXPECT_EQ(k.operations, 2);
  EXPECT_EQ(k.chunks, 150);
  EXPECT_NEAR(k.busy_s, 0.012, 1e-6);  // the union of the two, not their sum (ts is a
  // double of Unix microseconds: good to a fraction of one)
  EXPECT_NEAR(k.wait_s.at("window full"), 0.006, 1e-6);
  EXPECT_EQ(k.resends(), 2);
  EXPECT_EQ(k.srtt_us, 900);
  EXPECT_EQ(k.min_rtt_us, 300);
  ASSERT_EQ(k.slices.size(), 1u);
  EXPECT_NEAR(k.slices[0].start, 0.001, 1e-6);  // from the run's first event
}

TEST_F(ReportRead, AFileThatIsNotATraceIsNamed) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "rank-0.json") << "{\"traceEvents\": [";
  auto run = ReadRun(dir_);
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(std::string(run.status().message()), HasSubstr("rank-0.json"));
}

TEST_F(ReportRead, ADirectoryWithoutRanksIsNotFound) {
  std::filesystem::create_directories(dir_);
  auto run = ReadRun(dir_);
  EXPECT_TRUE(absl::IsNotFound(run.status())) << run.status();
  EXPECT_TRUE(absl::IsNotFound(ReadRun((dir_ / "missing").string()).status()));
}

}  // namespace
}  // namespace grid::tools
