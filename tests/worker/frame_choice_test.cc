// The frame width and pool a job gets by default (control::ChooseFrames,
// docs/worker.md "Frame width and pool").
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "gtest/gtest.h"

namespace grid::control {
namespace {

// The IP packet a frame of `elements` takes, what an MTU bounds.
size_t IpBytes(uint16_t elements) {
  return wire::FrameBytes(elements) - sizeof(wire::EthernetHeader);
}

TEST(ChooseFrames, AnEthernetMtuOnGridSwitchGives352Elements) {
  auto c = ChooseFrames(1500, wire::kMaxElements);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->elements, 352);
  EXPECT_LE(IpBytes(c->elements), 1500u);
  EXPECT_EQ(c->slots, 128u);
}

TEST(ChooseFrames, TheP4ProgramsKeepTheirWidthAndTodaysPool) {
  for (size_t mtu : {size_t{1500}, size_t{9000}, size_t{65535}}) {
    auto c = ChooseFrames(mtu, wire::kDefaultElements);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->elements, wire::kDefaultElements) << mtu;
    EXPECT_EQ(c->slots, 256u) << mtu;
  }
}

TEST(ChooseFrames, LoopbackAndJumboFramesTakeTheWidestFrame) {
  for (size_t mtu : {size_t{9000}, size_t{65536}}) {
    auto c = ChooseFrames(mtu, wire::kMaxElements);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->elements, wire::kMaxElements) << mtu;
    EXPECT_EQ(c->slots, 128u) << mtu;
  }
}

TEST(ChooseFrames, AnMtuTooSmallForOneElementIsNamed) {
  auto c = ChooseFrames(60, wire::kMaxElements);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("MTU 60"), std::string::npos) << c.status();
  EXPECT_TRUE(ChooseFrames(IpBytes(1), wire::kMaxElements).ok());
}

// Every MTU: the frame fits it and the switch, is as wide as a multiple of
// 32 allows, and the pool has 128 slots or more, keeping at least 64 KiB of
// payload, up to 256 slots.
TEST(ChooseFrames, EveryMtuGetsAFrameThatFitsAndAPoolInRange) {
  for (uint16_t widest : {uint16_t{64}, uint16_t{1024}}) {
    for (size_t mtu = IpBytes(1); mtu <= 10000; ++mtu) {
      auto c = ChooseFrames(mtu, widest);
      ASSERT_TRUE(c.ok()) << mtu << ": " << c.status();
      ASSERT_GT(c->elements, 0) << mtu;
      ASSERT_LE(c->elements, widest) << mtu;
      ASSERT_LE(IpBytes(c->elements), mtu) << mtu;
      if (c->elements >= 32) {
        ASSERT_EQ(c->elements % 32, 0) << mtu;
        ASSERT_TRUE(c->elements == widest || IpBytes(c->elements + 32) > mtu) << mtu;
      } else {
        ASSERT_GT(IpBytes(c->elements + 1), mtu) << mtu;
      }
      ASSERT_GE(c->slots, 128u) << mtu;
      ASSERT_LE(c->slots, 256u) << mtu;
      ASSERT_TRUE(c->slots == 256 || c->slots * c->elements * 4 >= 64u * 1024) << mtu;
    }
  }
}

// A slot is busy for a round trip, so the pool must hold the path's
// bandwidth-delay product: 100 Gbps for 10 us is 125,000 bytes, 377 frames
// of 64 elements (332 bytes), above the 256 the 64 KiB rule gives; frames of
// 1024 elements need 30, below the floor of 128.
TEST(ChooseFrames, APoolHoldsTheBandwidthDelayProductUpToWhatTheSwitchesHave) {
  constexpr uint64_t kBdp = 125000;
  auto narrow = ChooseFrames(1500, wire::kDefaultElements, kBdp);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(narrow->slots, 377u);
  auto wide = ChooseFrames(65535, wire::kMaxElements, kBdp);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->slots, 128u);
  // Capped by the switches' memory, even below the floor.
  EXPECT_EQ(ChooseFrames(1500, wire::kDefaultElements, kBdp, 300)->slots, 300u);
  EXPECT_EQ(ChooseFrames(1500, wire::kDefaultElements, 0, 100)->slots, 100u);
  auto none = ChooseFrames(1500, wire::kDefaultElements, kBdp, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("max_slots"), std::string::npos) << none.status();
}

planner::Plan RackPlan(const topology::Topology& topo) {
  auto job = planner::MakeJob(topo, 8, std::nullopt, 1);
  EXPECT_TRUE(job.ok()) << job.status();
  auto p = planner::PlannerRegistry::WithBuiltins().Create("switchml");
  EXPECT_TRUE(p.ok()) << p.status();
  auto plan = (*p)->Plan(topo, *job);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// On a rack of 100 Gbps links of 5 us, every rank runs at 100 Gbps (the ToR
// sums them all) and its round trip is two links each way: 20 us, so
// 250,000 bytes. A measured round trip replaces the topology's latencies.
TEST(PlanBdpBytes, IsTheRateTimesTheRoundTripToTheRoot) {
  auto topo = topology::GenerateTopology("rack:hosts=9,lat=5");
  ASSERT_TRUE(topo.ok()) << topo.status();
  const planner::Plan plan = RackPlan(*topo);
  auto bdp = PlanBdpBytes(*topo, plan);
  ASSERT_TRUE(bdp.ok()) << bdp.status();
  EXPECT_NEAR(static_cast<double>(*bdp), 250000, 1);
  auto measured = PlanBdpBytes(*topo, plan, absl::Microseconds(50));
  ASSERT_TRUE(measured.ok()) << measured.status();
  EXPECT_NEAR(static_cast<double>(*measured), 625000, 1);
}

// The pool fits every aggregating switch's memory above the job's base.
TEST(PoolLimit, IsTheAggregatorsMemoryAboveTheBase) {
  auto topo = topology::GenerateTopology("rack:hosts=9,slots=3000");
  ASSERT_TRUE(topo.ok()) << topo.status();
  const planner::Plan plan = RackPlan(*topo);
  EXPECT_EQ(PoolLimit(*topo, plan, 0), 3000u);
  EXPECT_EQ(PoolLimit(*topo, plan, 1000), 2000u);
  EXPECT_EQ(PoolLimit(*topo, plan, 3000), 0u);
}

}  // namespace
}  // namespace grid::control
