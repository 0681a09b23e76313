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
  // The same rule for a width the job names itself.
  EXPECT_EQ(PoolSlots(64, kBdp), 377u);
  EXPECT_EQ(PoolSlots(352, 0), 128u);
  EXPECT_EQ(PoolSlots(64, kBdp, 200), 200u);
  // Whatever the round trip, the root's sums stay within 64 MiB: two copies
  // of 8192 slots of 1024 elements. Narrow frames meet the wire's 65,536
  // slots first.
  constexpr uint64_t kAbsurdBdp = uint64_t{1} << 40;
  EXPECT_EQ(PoolSlots(1024, kAbsurdBdp), 8192u);
  EXPECT_EQ(PoolSlots(352, kAbsurdBdp), (uint32_t{64} << 20) / (2 * 352 * 4));
  EXPECT_EQ(PoolSlots(64, kAbsurdBdp), wire::kMaxSlots);
  auto none = ChooseFrames(1500, wire::kDefaultElements, kBdp, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("max_slots"), std::string::npos) << none.status();
}

planner::Plan PlanOf(const topology::Topology& topo, const std::string& planner, int workers) {
  auto job = planner::MakeJob(topo, workers, std::nullopt, 1);
  EXPECT_TRUE(job.ok()) << job.status();
  planner::PlannerOptions options;
  options.atp_best_effort = true;
  auto p = planner::PlannerRegistry::WithBuiltins().Create(planner, options);
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
  const planner::Plan plan = PlanOf(*topo, "switchml", 8);
  auto bdp = PlanBdpBytes(*topo, plan);
  ASSERT_TRUE(bdp.ok()) << bdp.status();
  EXPECT_NEAR(static_cast<double>(*bdp), 250000, 1);
  auto measured = PlanBdpBytes(*topo, plan, absl::Microseconds(50));
  ASSERT_TRUE(measured.ok()) << measured.status();
  EXPECT_NEAR(static_cast<double>(*measured), 625000, 1);
}

// PoolLimit is the largest pool the switch tables take: BuildSwitchConfigs
// accepts it and refuses one slot more. A best-effort (ATP) job takes a pool
// per aggregator that a switch completes chunks for, after its own.
TEST(PoolLimit, IsTheLargestPoolTheSwitchTablesTake) {
  struct Case {
    const char* topology;
    const char* planner;
    int workers;
  };
  for (const Case& c :
       {Case{"rack:hosts=9,slots=3000", "switchml", 8}, Case{"testbed:slots=3000", "switchml", 8},
        Case{"testbed:slots=3000", "atp", 8}, Case{"fattree:k=4,slots=3000", "atp", 12}}) {
    SCOPED_TRACE(std::string(c.topology) + " " + c.planner);
    auto topo = topology::GenerateTopology(c.topology);
    ASSERT_TRUE(topo.ok()) << topo.status();
    const planner::Plan plan = PlanOf(*topo, c.planner, c.workers);
    for (uint32_t base : {0u, 1000u}) {
      auto limit = PoolLimit(*topo, plan, base);
      ASSERT_TRUE(limit.ok()) << limit.status();
      ASSERT_GT(*limit, 0u);
      host_config::JobParams job;
      job.job_id = 1;
      job.token = 9;
      job.elements = 64;
      job.slot_base = base;
      job.slots = *limit;
      EXPECT_TRUE(BuildSwitchConfigs(*topo, plan, job).ok()) << base << ": " << *limit;
      job.slots = *limit + 1;
      EXPECT_FALSE(BuildSwitchConfigs(*topo, plan, job).ok()) << base << ": " << *limit + 1;
    }
  }
  // No room for one pool: the error names the switch.
  auto topo = topology::GenerateTopology("rack:hosts=9,slots=3000");
  ASSERT_TRUE(topo.ok());
  auto none = PoolLimit(*topo, PlanOf(*topo, "switchml", 8), 3000);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("switch \"tor\""), std::string::npos) << none.status();
}

// P4PoolLimit is the largest pool the P4 programs' entries take: every
// switch's ConfigToP4Entries accepts it, and one slot more is refused, by
// the tables or the entries. Their 1024 registers bind, not the topology's
// 3000 slots, and they hold no proxies' pools (ATP's). On a topology of
// 1024 slots the proxies' pools bind, in the tables.
TEST(P4PoolLimit, IsTheLargestPoolTheP4EntriesTake) {
  struct Case {
    const char* topology;
    const char* planner;
    int workers;
  };
  for (const Case& c :
       {Case{"rack:hosts=9,slots=3000", "switchml", 8}, Case{"testbed:slots=3000", "grid", 8},
        Case{"testbed:slots=3000", "atp", 8}, Case{"fattree:k=4,slots=3000", "atp", 12},
        Case{"testbed:slots=1024", "atp", 8}}) {
    SCOPED_TRACE(std::string(c.topology) + " " + c.planner);
    auto topo = topology::GenerateTopology(c.topology);
    ASSERT_TRUE(topo.ok()) << topo.status();
    const planner::Plan plan = PlanOf(*topo, c.planner, c.workers);
    auto entries_ok = [&](uint32_t base, uint32_t slots) {
      host_config::JobParams job;
      job.job_id = 1;
      job.token = 9;
      job.elements = wire::kDefaultElements;
      job.slot_base = base;
      job.slots = slots;
      auto configs = BuildSwitchConfigs(*topo, plan, job);
      if (!configs.ok()) return false;
      for (const auto& [node, config] : *configs) {
        if (!sw::ConfigToP4Entries(config).ok()) return false;
      }
      return true;
    };
    for (uint32_t base : {0u, 100u, 900u}) {
      auto limit = P4PoolLimit(*topo, plan, base);
      ASSERT_TRUE(limit.ok()) << limit.status();
      ASSERT_GT(*limit, 0u);
      EXPECT_LE(*limit, sw::kP4MaxPool);
      EXPECT_TRUE(entries_ok(base, *limit)) << base << ": " << *limit;
      EXPECT_FALSE(entries_ok(base, *limit + 1)) << base << ": " << *limit + 1;
      const uint32_t registers = std::min(1024u - base, sw::kP4MaxPool);
      auto tables = PoolLimit(*topo, plan, base);
      ASSERT_TRUE(tables.ok()) << tables.status();
      EXPECT_EQ(*limit, std::min(*tables, registers)) << base;
    }
  }
  // A base past the registers: the error names the switch.
  auto topo = topology::GenerateTopology("rack:hosts=9,slots=3000");
  ASSERT_TRUE(topo.ok());
  auto none = P4PoolLimit(*topo, PlanOf(*topo, "switchml", 8), 1024);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("switch \"tor\""), std::string::npos) << none.status();
}

}  // namespace
}  // namespace grid::control
