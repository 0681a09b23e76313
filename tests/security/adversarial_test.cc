// Adversarial traffic against a running job (docs/security.md): seven ranks
// on the testbed, the eighth worker host an attacker that sends every class
// of tools/attacks.h while the ranks run allreduces. Each class must be
// dropped and counted under its reason where the threat model says, the
// switches' slots must see only the ranks' own chunks, and every sum must be
// exact. Then what a faulty member's host can do.
#include <atomic>
#include <cmath>
#include <thread>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/numerics.h"
#include "gtest/gtest.h"
#include "tools/attacks.h"
#include "util/random.h"
#include "support/cluster.h"

namespace grid {
namespace {

using tools::Attack;
using topology::NodeId;

constexpr int kWorld = 7;
constexpr size_t kCount = 64 * 40 + 17;  // int32 and float32 elements per operation
constexpr int kIterations = 3;

testing::ClusterOptions Options() {
  testing::ClusterOptions o;
  o.workers = kWorld;      // W1..W7: W8's host is free for the attacker
  o.planner = "switchml";  // W8's switch, S3, aggregates W5 and W6
  o.slots = 16;
  o.comm.engine.timeout = absl::Seconds(60);
  return o;
}

// Where each class must end up: a switch's drop reason, the root's foreign
// counter, or the imitated member's.
struct Expect {
  enum Where { kSwitch, kRoot, kVictim } where;
  int reason = 0;
};

Expect Expected(Attack a) {
  auto at = [](sw::Drop d) { return Expect{Expect::kSwitch, static_cast<int>(d)}; };
  auto codec = [](wire::WireError e) { return Expect{Expect::kSwitch, static_cast<int>(e)}; };
  switch (a) {
    case Attack::kWrongToken:
      return at(sw::Drop::kBadToken);
    case Attack::kWrongJob:
      return at(sw::Drop::kUnknownJob);
    case Attack::kNonMember:
      return at(sw::Drop::kNotMember);
    case Attack::kImpersonate:
    case Attack::kOldData:
    case Attack::kOldResult:
    case Attack::kBadSlot:
    case Attack::kExponent:
    case Attack::kCollisionFlood:
      return at(sw::Drop::kBadIngress);  // the attacker's port is not the member's nor the root's
    case Attack::kSpoofedSource:
    case Attack::kSpoofedPartial:
      return at(sw::Drop::kBadSource);  // its own port takes only its own address
    case Attack::kForeignResult:
      return {Expect::kVictim, 0};
    case Attack::kForgedPartial:
      return {Expect::kRoot, 0};
    case Attack::kLengthMismatch:
      return codec(wire::WireError::kGridPayloadLength);
    case Attack::kTruncated:
      return codec(wire::WireError::kTruncated);
    case Attack::kTtl1:
      return at(sw::Drop::kTtlExpired);
    case Attack::kIpOptions:
      return codec(wire::WireError::kIpHeaderLength);
    case Attack::kIpFragment:
      return codec(wire::WireError::kIpFragment);
    case Attack::kEnd:
      break;
  }
  return {};
}

uint64_t SwitchDrops(testing::Cluster& c, int reason) {
  uint64_t n = 0;
  for (const auto& [node, config] : c.switches())
    n += c.fabric().SwitchCounters(node)->drops[reason];
  return n;
}

uint64_t Counted(testing::Cluster& c, const Expect& e, int victim) {
  switch (e.where) {
    case Expect::kSwitch:
      return SwitchDrops(c, e.reason);
    case Expect::kRoot:
      return c.root_stats().foreign;
    case Expect::kVictim:
      return c.comm(victim).stats().foreign;
  }
  return 0;
}

std::vector<int32_t> Ints(int rank, int iteration) {
  util::Random rng(static_cast<uint64_t>(rank) * 1000 + iteration);
  std::vector<int32_t> v(kCount);
  for (int32_t& x : v) x = static_cast<int32_t>(rng.Below(1u << 20)) - (1 << 19);
  return v;
}

std::vector<float> Floats(int rank, int iteration) {
  util::Random rng(static_cast<uint64_t>(rank) * 7777 + iteration);
  std::vector<float> v(kCount);
  for (float& x : v) x = static_cast<float>(rng.Uniform(-1, 1));
  return v;
}

// Runs kIterations of an int32 and a float32 allreduce on every rank and
// checks every element: int32 exactly, float32 within the numerics bound.
void RunAndCheck(testing::Cluster& cluster) {
  std::vector<std::vector<int32_t>> ints(kWorld);
  std::vector<std::vector<float>> floats(kWorld);
  std::atomic<int> failures{0};
  for (int it = 0; it < kIterations; ++it) {
    cluster.Run([&](int r) {
      ints[r] = Ints(r, it);
      floats[r].assign(kCount, 0);
      const std::vector<float> in = Floats(r, it);
      if (!cluster.comm(r)
               .AllReduce(ints[r].data(), ints[r].data(), kCount, DataType::kInt32)
               .ok() ||
          !cluster.comm(r)
               .AllReduce(in.data(), floats[r].data(), kCount, DataType::kFloat32)
               .ok()) {
        ++failures;
      }
    });
    ASSERT_EQ(failures.load(), 0);
    std::vector<int32_t> want(kCount, 0);
    for (int r = 0; r < kWorld; ++r) {
      const std::vector<int32_t> in = Ints(r, it);
      for (size_t i = 0; i < kCount; ++i) want[i] += in[i];
    }
    for (int r = 0; r < kWorld; ++r) ASSERT_EQ(ints[r], want) << "rank " << r;
    for (size_t i = 0; i < kCount; ++i) {
      double exact = 0, magnitude = 0;
      uint8_t e = 0;
      const size_t block = i / 64 * 64;
      for (int r = 0; r < kWorld; ++r) {
        const std::vector<float> in = Floats(r, it);
        exact += in[i];
        magnitude += std::fabs(in[i]);
        e = std::max(
            e, *numerics::BlockExponent({in.data() + block, std::min<size_t>(64, kCount - block)}));
      }
      const double bound = numerics::SumErrorBound(e, kWorld, kWorld, magnitude);
      for (int r = 0; r < kWorld; ++r) {
        ASSERT_LE(std::fabs(floats[r][i] - exact), bound) << "rank " << r << " element " << i;
      }
    }
  }
}

// The DATA each aggregating switch should have added: its members' chunks,
// once each.
uint64_t ExpectedData(int members) {
  const uint64_t chunks = (kCount + 63) / 64;
  const uint64_t probes = std::min<uint64_t>(chunks, Options().slots);
  return static_cast<uint64_t>(members) * kIterations * (chunks + probes + chunks);
}

class Adversarial : public ::testing::TestWithParam<int> {};

TEST_P(Adversarial, IsDroppedCountedAndNeverReachesASum) {
  const Attack attack = static_cast<Attack>(GetParam());
  testing::Cluster cluster(Options());
  const NodeId attacker = *cluster.topology().Find("W8");
  auto transport = cluster.fabric().Attach(attacker);
  ASSERT_TRUE(transport.ok()) << transport.status();
  auto setup = tools::MakeAttackSetup(cluster.topology(), attacker, cluster.workers(),
                                      cluster.root_config(), cluster.switches());
  ASSERT_TRUE(setup.ok()) << setup.status();
  const int victim = setup->victim.rank;
  const Expect expect = Expected(attack);
  const uint64_t before = Counted(cluster, expect, victim);

  std::atomic<bool> done{false};
  uint64_t sent = 0;
  std::thread attacker_thread([&] {
    // At least 200 frames, spread over the whole run.
    for (uint64_t i = 0; !done.load() || i < 200; ++i) {
      const std::vector<uint8_t> f = tools::AttackFrame(attack, *setup, i);
      const absl::Span<const uint8_t> frame(f);
      (*transport)->Send(absl::MakeConstSpan(&frame, 1));
      ++sent;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  RunAndCheck(cluster);
  done.store(true);
  attacker_thread.join();

  // Every frame counted where the threat model says (a result for the
  // member waits in its inbox until its progress thread reads it).
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (Counted(cluster, expect, victim) - before < sent && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Counted(cluster, expect, victim) - before, sent)
      << tools::AttackName(attack) << ": " << sent << " frames sent";
  // The slots saw the ranks' own chunks, each once, and nothing else.
  for (const planner::Aggregator& a : planner::Aggregators(cluster.plan())) {
    const sw::Counters counters = *cluster.fabric().SwitchCounters(a.node);
    EXPECT_EQ(counters.jobs.begin()->second.data, ExpectedData(static_cast<int>(a.members.size())))
        << "switch " << a.node;
    EXPECT_EQ(counters.drops[static_cast<int>(sw::Drop::kCollision)], 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryClass, Adversarial, ::testing::Range(0, tools::kNumAttacks),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string(tools::AttackName(static_cast<Attack>(param.param)));
                         });

// A member's own host replaying its old chunks, or sending slots beyond the
// pool: it passes every origin check, and still cannot touch a sum.
TEST(FaultyMember, ReplaysAndBadSlotsFromItsOwnHost) {
  testing::Cluster cluster(Options());
  auto setup = tools::MakeAttackSetup(cluster.topology(), *cluster.topology().Find("W8"),
                                      cluster.workers(), cluster.root_config(), cluster.switches());
  ASSERT_TRUE(setup.ok());
  // The member's host sends as itself.
  const NodeId host = setup->victim.node;
  setup->attacker_ip = setup->victim.ip;
  setup->attacker_mac = setup->victim.mac;
  setup->first_hop_mac = setup->victim.next_hop_mac;
  RunAndCheck(cluster);  // the operations the replays come from are over
  const uint64_t stale_before = SwitchDrops(cluster, static_cast<int>(sw::Drop::kStale)) +
                                SwitchDrops(cluster, static_cast<int>(sw::Drop::kDuplicate));
  const uint64_t slot_before = SwitchDrops(cluster, static_cast<int>(sw::Drop::kBadSlot));
  for (uint64_t i = 0; i < 64; ++i) {
    cluster.fabric().InjectFrom(host, tools::AttackFrame(Attack::kOldData, *setup, i));
    cluster.fabric().InjectFrom(host, tools::AttackFrame(Attack::kBadSlot, *setup, i));
  }
  EXPECT_EQ(SwitchDrops(cluster, static_cast<int>(sw::Drop::kStale)) +
                SwitchDrops(cluster, static_cast<int>(sw::Drop::kDuplicate)) - stale_before,
            64u);
  EXPECT_EQ(SwitchDrops(cluster, static_cast<int>(sw::Drop::kBadSlot)) - slot_before, 64u);
  RunAndCheck(cluster);
}

}  // namespace
}  // namespace grid
