// grid-ns3's runs (sim/scenario.h): the library's engines and switch
// runtime in ns-3, deterministic and exact, with faults on a schedule.
#include <string>

#include "gmock/gmock.h"
#include "grid/topology.h"
#include "gtest/gtest.h"
#include "sim/ring.h"
#include "sim/scenario.h"
#include "sim/sweep.h"

namespace grid::sim {
namespace {

// docs/simulation.md's CI topology: a k=4 fat tree with three hosts per
// edge switch (24), 40% of the switches programmable with capacities drawn
// from [100, 800] Gbps.
constexpr char kFatTree[] = "fattree:k=4,hosts=3,prog=random:0.4,cap=uniform:100:800";

Scenario FatTree(const std::string& planner, DataType type) {
  Scenario s;
  s.topology = kFatTree;
  s.planner = planner;
  s.workers = 16;
  s.elements = 20000;
  s.type = type;
  return s;
}

void ExpectExact(const Outcome& out, const std::string& what) {
  ASSERT_EQ(out.ranks.size(), 16u) << what;
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    EXPECT_TRUE(out.ranks[r].status.ok()) << what << " rank " << r << ": " << out.ranks[r].status;
    EXPECT_TRUE(out.ranks[r].exact) << what << " rank " << r;
  }
}

class EveryPlanner : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryPlanner, EveryElementOfEveryRankIsExact) {
  for (DataType type : {DataType::kInt32, DataType::kFloat32}) {
    auto out = RunScenario(FatTree(GetParam(), type));
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectExact(*out, std::string(GetParam()) + (type == DataType::kInt32 ? " int32" : " float32"));
    EXPECT_EQ(out->switch_drops, 0u);
    EXPECT_GT(out->comm_time, absl::ZeroDuration());
  }
}

INSTANTIATE_TEST_SUITE_P(Ns3, EveryPlanner,
                         ::testing::Values("grid", "grid-paths", "atp", "switchml", "geryon"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string name = p.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// A run is a function of its inputs: the same scenario twice gives the same
// digest, in one process (ns-3's simulator torn down between them); another
// seed gives another.
TEST(Ns3Determinism, SameInputsGiveTheSameDigest) {
  Scenario s = FatTree("grid", DataType::kFloat32);
  auto faults = ParseFaultSchedule("loss=0.02,dup=0.01,reorder=0.02,seed=5");
  ASSERT_TRUE(faults.ok()) << faults.status();
  s.faults = *faults;
  auto first = RunScenario(s);
  auto second = RunScenario(s);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->digest, second->digest);
  EXPECT_EQ(first->comm_time, second->comm_time);
  EXPECT_GT(first->fabric.lost, 0u);
  s.faults.links.seed = 6;
  auto other = RunScenario(s);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(first->digest, other->digest);
}

// Loss, duplication and reordering on every link: the resends fill the
// gaps, the slot rule ignores the copies, and every sum is exact.
TEST(Ns3Faults, LossDuplicationAndReorderingOnEveryLinkStayExact) {
  for (const char* planner : {"grid", "atp"}) {
    Scenario s = FatTree(planner, DataType::kInt32);
    s.faults = *ParseFaultSchedule("loss=0.01,dup=0.01,reorder=0.05,seed=3");
    auto out = RunScenario(s);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectExact(*out, planner);
    EXPECT_GT(out->resends(), 0u) << planner;
    EXPECT_GT(out->fabric.duplicated, 0u) << planner;
  }
}

// A restarted switch loses what its slots held; the ranks' resends rebuild
// it, or the operation fails with an error, never with a wrong sum.
TEST(Ns3Faults, ASwitchRestartMidRunEndsExactOrWithAnError) {
  Scenario s = FatTree("grid", DataType::kInt32);
  s.elements = 200000;
  s.engine.timeout = absl::Milliseconds(200);
  auto out = RunScenario(s);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->aggregators.empty());
  // Restart an aggregation switch halfway through the unfaulted run's time.
  s.faults = *ParseFaultSchedule("restart=" + out->aggregators[0] + "@" +
                                 absl::FormatDuration(out->comm_time / 2));
  auto faulted = RunScenario(s);
  ASSERT_TRUE(faulted.ok()) << faulted.status();
  for (const RankOutcome& r : faulted->ranks) {
    EXPECT_TRUE(r.status.ok() ? r.exact : !r.status.message().empty()) << r.status;
    EXPECT_LE(r.elapsed, 2 * s.engine.timeout);
  }
}

// What the sweep prints to replay a seed runs the same run: a drawn
// schedule, printed and read back, gives the same digest.
TEST(Ns3Determinism, ASweepSeedReplaysFromItsPrintedSchedule) {
  Scenario s = FatTree("atp", DataType::kInt32);
  auto clean = RunScenario(s);
  ASSERT_TRUE(clean.ok());
  auto topology = topology::LoadTopology(kFatTree);
  ASSERT_TRUE(topology.ok());
  const Targets targets{clean->aggregators, clean->root_host, 16, clean->comm_time};
  int compared = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    s.faults = RandomFaultSchedule(*topology, targets, seed);
    s.engine.timeout = absl::Milliseconds(50);
    auto drawn = RunScenario(s);
    auto replay = ParseFaultSchedule(s.faults.ToSpec());
    ASSERT_TRUE(replay.ok()) << replay.status() << ": " << s.faults.ToSpec();
    s.faults = *replay;
    auto replayed = RunScenario(s);
    ASSERT_TRUE(drawn.ok() && replayed.ok());
    EXPECT_EQ(drawn->digest, replayed->digest) << "seed " << seed << ": " << ReplayCommand(s);
    EXPECT_TRUE(Violations(*drawn, s.engine.timeout).empty()) << ReplayCommand(s);
    ++compared;
  }
  EXPECT_EQ(compared, 8);
}

// The host ring over ns-3's TCP on the same hosts: every rank sends its
// 2(N-1) steps, no faster than its link, the same time twice.
TEST(Ns3Ring, SendsEveryStepAtMostAtLinkRateAndRepeats) {
  auto clean = RunScenario(FatTree("grid", DataType::kInt32));
  ASSERT_TRUE(clean.ok());
  auto topology = topology::LoadTopology(kFatTree);
  ASSERT_TRUE(topology.ok());
  const uint64_t bytes = 1 << 20;
  auto ring = RunRing(*topology, clean->hosts, bytes, 1);
  ASSERT_TRUE(ring.ok()) << ring.status();
  const uint64_t n = clean->hosts.size();
  EXPECT_EQ(ring->bytes_per_rank, 2 * (n - 1) * ((bytes + n - 1) / n));
  // 100 Gbps host links: no rank sends faster.
  EXPECT_GE(absl::ToDoubleSeconds(ring->comm_time), ring->bytes_per_rank * 8 / 100e9);
  EXPECT_LE(ring->gbps, 100);
  EXPECT_GT(ring->gbps, 10) << "TCP should fill a good part of an idle 100 Gbps path";
  auto again = RunRing(*topology, clean->hosts, bytes, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->comm_time, ring->comm_time);
}

TEST(Ns3Ring, RefusesANodeThatIsNotAHost) {
  auto topology = topology::LoadTopology(kFatTree);
  ASSERT_TRUE(topology.ok());
  const topology::NodeId core = *topology->Find("core0");
  const topology::NodeId host = *topology->Find("h0");
  auto ring = RunRing(*topology, {host, core}, 1000, 1);
  EXPECT_EQ(ring.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Ns3FaultSchedule, ParsesWhatItPrints) {
  auto f = ParseFaultSchedule(
      "loss=0.01,dup=0.02,reorder=0.03,seed=9;down=S1-S2@2ms;up=S1-S2@3ms;restart=S3@150us;"
      "root@4ms;slow=2@1ms");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->events.size(), 4u);
  ASSERT_EQ(f->slow.size(), 1u);
  EXPECT_EQ(f->slow[0].first, 2);
  EXPECT_EQ(f->slow[0].second, absl::Milliseconds(1));
  auto again = ParseFaultSchedule(f->ToSpec());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ToSpec(), f->ToSpec());
}

TEST(Ns3FaultSchedule, ErrorsNameThePartAtFault) {
  EXPECT_THAT(std::string(ParseFaultSchedule("down=S1@2ms").status().message()),
              ::testing::HasSubstr("down=S1@2ms"));
  EXPECT_THAT(std::string(ParseFaultSchedule("restart=S1@soon").status().message()),
              ::testing::HasSubstr("S1@soon"));
  EXPECT_THAT(std::string(ParseFaultSchedule("loss=2").status().message()),
              ::testing::HasSubstr("loss"));
  Scenario s = FatTree("grid", DataType::kInt32);
  s.faults = *ParseFaultSchedule("restart=NOPE@1ms");
  EXPECT_THAT(std::string(RunScenario(s).status().message()), ::testing::HasSubstr("NOPE"));
}

}  // namespace
}  // namespace grid::sim
