// Adversarial traffic against a running job (docs/security.md): seven ranks
// on the testbed, the eighth worker host an attacker that sends every class
// of tools/attacks.h while the ranks run allreduces. Each class must be
// dropped and counted under its reason where the threat model says, the
// switches' slots must see only the ranks' own chunks, and every sum must be
// exact. Then what a faulty member's host can do.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <thread>
#include <tuple>

#include "absl/strings/str_format.h"
#include "api/health.h"
#include "gmock/gmock.h"
#include "grid/numerics.h"
#include "gtest/gtest.h"
#include "node/status.h"
#include "support/cluster.h"
#include "tools/attacks.h"
#include "util/random.h"

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

// Drop notices (docs/security.md, "Drop notices"): the ranks read the drops
// each node counts against their job from the store; nothing goes back on
// the wire. Seven ranks join through a store (so the switches report
// there), and the attacker on W8 floods them with `classes`, in turn, until
// the ranks have run allreduces for `seconds` (their health threads read
// the nodes' statuses every 250 ms meanwhile); every sum must be exact and
// no rank may fail.
class DropNotices : public ::testing::Test {
 protected:
  void SetUp() override {
    transport_ = *cluster_.fabric().Attach(*cluster_.topology().Find("W8"));
    auto setup =
        tools::MakeAttackSetup(cluster_.topology(), *cluster_.topology().Find("W8"),
                               cluster_.workers(), cluster_.root_config(), cluster_.switches());
    ASSERT_TRUE(setup.ok()) << setup.status();
    setup_ = *setup;
    dir_ = ::testing::TempDir() + "/drop_notices_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    CommunicatorOptions c;
    c.engine.timeout = absl::Seconds(60);
    std::vector<absl::Status> joined = cluster_.Rejoin(c, dir_);
    for (int r = 0; r < kWorld; ++r) ASSERT_TRUE(joined[r].ok()) << joined[r];
  }

  // Returns how many frames the attacker sent.
  uint64_t FloodWhileRunning(const std::vector<Attack>& classes, absl::Duration seconds) {
    return Flood(classes, [&] {
      const absl::Time until = absl::Now() + seconds;
      while (absl::Now() < until) RunAndCheck(cluster_);
    });
  }

  // Floods the job with `classes`, in turn, while `meanwhile` runs.
  uint64_t Flood(const std::vector<Attack>& classes, const std::function<void()>& meanwhile) {
    std::atomic<bool> done{false};
    uint64_t sent = 0;
    std::thread attacker([&] {
      for (uint64_t i = 0; !done.load() || i < 400; ++i) {
        const std::vector<uint8_t> f = tools::AttackFrame(classes[i % classes.size()], setup_, i);
        const absl::Span<const uint8_t> frame(f);
        transport_->Send(absl::MakeConstSpan(&frame, 1));
        ++sent;
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
    meanwhile();
    done.store(true);
    attacker.join();
    return sent;
  }

  // What the ranks read: the switches' drops other than stale, summed, under
  // the job's own (job, token) and under any other pair.
  std::pair<uint64_t, uint64_t> StoredDrops() {
    auto store = OpenStore("file:" + dir_);
    EXPECT_TRUE(store.ok());
    uint64_t own = 0, others = 0;
    for (const auto& [node, config] : cluster_.switches()) {
      auto text = (*store)->Get(node::NodeStatusKey(config.name), absl::Seconds(5));
      node::NodeStatus status;
      EXPECT_TRUE(text.ok() && node::ParseNodeStatus(*text, &status)) << config.name;
      for (const node::JobDrops& d : status.drops) {
        uint64_t n = 0;
        for (int r = 0; r < node::kNumJobDrops; ++r) {
          if (r != static_cast<int>(node::JobDrop::kStale)) n += d.counts[r];
        }
        (d.job == setup_.victim.job_id && d.token == setup_.victim.token ? own : others) += n;
      }
    }
    return {own, others};
  }

  testing::Cluster cluster_{Options()};
  std::unique_ptr<Transport> transport_;
  tools::AttackSetup setup_;
  std::string dir_;
};

// A host without the token floods the job with frames under its id (or
// another) and a token it made up: it gets no frame back, and its drops are
// counted under the tokens it made up, which no rank judges.
TEST_F(DropNotices, AForeignHostGetsNoneAndCannotFailTheJob) {
  const uint64_t sent =
      FloodWhileRunning({Attack::kWrongToken, Attack::kWrongJob}, absl::Seconds(2));
  size_t answers = 0;
  transport_->Receive(1 << 20, [&](absl::Span<const uint8_t>) { ++answers; });
  EXPECT_EQ(answers, 0u) << "the foreign host got frames back";
  const auto [own, others] = StoredDrops();
  EXPECT_EQ(own, 0u);
  EXPECT_GT(others, sent / 2) << sent << " frames sent";
}

// A host that holds the token (it read one packet, or the store) forges
// frames that the switches refuse under the job's own token: not_member,
// bad_ingress and bad_source. Those reach the ranks too, but only fail a
// job that is stalled (api::kDropStall): this one's own frames get through,
// so every rank finishes exact while the forged drops are counted.
TEST_F(DropNotices, AHostWithTheTokenCannotFailAJobThatProgresses) {
  FloodWhileRunning({Attack::kNonMember, Attack::kImpersonate, Attack::kSpoofedSource},
                    absl::Seconds(3));
  const auto [own, others] = StoredDrops();
  EXPECT_GT(own, 100u);
}

// The same forger while the ranks' callers pause between operations for
// longer than api::kDropStall (a training step's compute, a checkpoint):
// a rank that waits for no operation is not stalled, so the forged drops
// it reads meanwhile do not fail the next one.
TEST_F(DropNotices, AHostWithTheTokenCannotFailAJobBetweenOperations) {
  Flood({Attack::kNonMember, Attack::kImpersonate, Attack::kSpoofedSource}, [&] {
    for (int pause = 0; pause < 2; ++pause) {
      RunAndCheck(cluster_);
      absl::SleepFor(api::kDropStall + absl::Milliseconds(600));
    }
    RunAndCheck(cluster_);
  });
  const auto [own, others] = StoredDrops();
  EXPECT_GT(own, 100u);
}

}  // namespace
}  // namespace grid
