// Adversarial traffic against a running job (docs/security.md): seven ranks
// on the testbed, the eighth worker host an attacker that sends every class
// of tools/attacks.h while the ranks run allreduces. Each class must be
// dropped and counted under its reason where the threat model says, the
// switches' slots must see only the ranks' own chunks, and every sum must be
// exact. Then what a faulty member's host can do, and the worker's own
// checks, one at a time.
#include <atomic>
#include <cmath>
#include <thread>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/numerics.h"
#include "gtest/gtest.h"
#include "root/engine.h"
#include "tools/attacks.h"
#include "util/random.h"
#include "worker/cluster.h"
#include "worker/engine.h"
#include "worker/hand.h"

namespace grid {
namespace {

using testing::Answer;
using testing::HandTransport;
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

// Submits one operation of `count` elements to `engine` and polls once, so
// its first chunks are in `transport.sent`.
std::shared_ptr<internal::OpState> StartOne(worker::Engine& engine,
                                            const host_config::WorkerConfig& config, DataType type,
                                            void* send, void* recv, size_t count) {
  auto op = std::make_shared<internal::OpState>();
  op->type = type;
  op->send = send;
  op->recv = recv;
  op->count = count;
  op->deadline = absl::Now() + absl::Seconds(10);
  uint32_t op_seq = 0;
  engine.Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq),
                absl::Now());
  engine.Poll(absl::Now());
  return op;
}

// A float16 operation's results promise an exponent no float16 can have:
// the operation fails, naming the chunk, instead of returning garbage.
TEST(WorkerChecks, ExponentsBeyondTheTypeFailTheOperation) {
  const host_config::WorkerConfig config = testing::OneRankConfig(Options());
  HandTransport transport;
  EngineOptions options;
  worker::Engine engine(config, &transport, options);
  std::vector<uint16_t> in(128, 0x3c00), out(128);  // 1.0 in float16
  auto op = StartOne(engine, config, DataType::kFloat16, in.data(), out.data(), in.size());
  ASSERT_EQ(transport.sent.size(), 2u);  // two probes
  for (const auto& probe : transport.sent) {
    transport.inbox.push_back(
        Answer(config, probe, 200, config.aggregator_ip, config.next_hop_mac));
  }
  transport.sent.clear();
  engine.Poll(absl::Now());
  ASSERT_EQ(transport.sent.size(), 2u);  // the data, quantized with what was agreed
  for (const auto& data : transport.sent) {
    transport.inbox.push_back(Answer(config, data, 0, config.aggregator_ip, config.next_hop_mac));
  }
  engine.Poll(absl::Now());
  std::unique_lock<std::mutex> lock(op->mu);
  ASSERT_TRUE(op->done);
  EXPECT_EQ(op->status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(op->status.message(), ::testing::HasSubstr("exponent 200 is above what float16"));
  EXPECT_THAT(op->status.message(), ::testing::HasSubstr("chunk 0"));
}

// A float operation's exponent probes are header-only, and so are their
// results; its data chunks carry the job's elements, and a data chunk's
// result without them is malformed, not a sum.
TEST(WorkerChecks, ProbesAreHeaderOnlyAndDataIsNot) {
  const host_config::WorkerConfig config = testing::OneRankConfig(Options());
  HandTransport transport;
  worker::Engine engine(config, &transport, EngineOptions{});
  std::vector<float> in(2 * config.elements, 1.0f), out(in.size());
  auto op = StartOne(engine, config, DataType::kFloat32, in.data(), out.data(), in.size());
  ASSERT_EQ(transport.sent.size(), 2u);  // two probes
  for (const auto& probe : transport.sent) {
    EXPECT_EQ(probe.size(), wire::FrameBytes(0));
    const wire::Header h = wire::DecodeFrame(probe)->header;
    EXPECT_EQ(h.num_elements, 0);
    // One rank's proposal is the agreed exponent.
    transport.inbox.push_back(
        Answer(config, probe, h.next_exponent, config.aggregator_ip, config.next_hop_mac));
  }
  transport.sent.clear();
  engine.Poll(absl::Now());
  ASSERT_EQ(transport.sent.size(), 2u);
  std::vector<std::vector<uint8_t>> data = transport.sent;
  for (const auto& d : data) {
    EXPECT_EQ(d.size(), wire::FrameBytes(config.elements));
    // A data chunk's "result" with no elements.
    wire::FrameView v = *wire::DecodeFrame(d);
    v.header.type = wire::MessageType::kResult;
    v.header.num_elements = 0;
    wire::FrameAddress a = v.address;
    a.src_ip = config.aggregator_ip;
    a.dst_ip = config.ip;
    a.src_mac = config.next_hop_mac;
    a.dst_mac = config.mac;
    std::vector<uint8_t> empty(wire::FrameBytes(0));
    ASSERT_TRUE(wire::EncodeFrame(a, v.header, {}, absl::MakeSpan(empty)).ok());
    transport.inbox.push_back(empty);
  }
  engine.Poll(absl::Now());
  EXPECT_EQ(engine.stats().malformed, 2u);
  EXPECT_FALSE(op->done);
  for (const auto& d : data) transport.inbox.push_back(testing::AnswerFromAggregator(config, d));
  engine.Poll(absl::Now());
  std::unique_lock<std::mutex> lock(op->mu);
  ASSERT_TRUE(op->done);
  EXPECT_TRUE(op->status.ok()) << op->status;
  EXPECT_EQ(out[0], 1.0f);
}

// Operations submitted together (a group, the segments of one operation)
// are chained: the first one's last P data chunks propose the exponents of
// the next one's first chunks, so the next sends no probes and its data
// follows as soon as those results are in. (A previous operation shorter
// than the pool: Allreduce.GroupedFloatOperationsChainTheirExponents.)
TEST(WorkerChecks, OperationsSubmittedTogetherChainTheirExponents) {
  const host_config::WorkerConfig config = testing::OneRankConfig(Options());
  const uint32_t pool = config.slots;
  HandTransport transport;
  worker::Engine engine(config, &transport, EngineOptions{});
  std::vector<float> in1(size_t{pool} * config.elements, 1.0f), out1(in1.size());
  // Three chunks of other magnitudes than the first operation's.
  std::vector<float> in2(3 * config.elements), out2(in2.size());
  for (size_t i = 0; i < in2.size(); ++i) in2[i] = i < config.elements ? 1000.0f : 0.25f;
  auto op1 = std::make_shared<internal::OpState>();
  auto op2 = std::make_shared<internal::OpState>();
  for (auto [op, in, out] : {std::tuple{op1, &in1, &out1}, std::tuple{op2, &in2, &out2}}) {
    op->type = DataType::kFloat32;
    op->send = in->data();
    op->recv = out->data();
    op->count = in->size();
    op->deadline = absl::Now() + absl::Seconds(10);
  }
  uint32_t op_seq = 0;
  auto wire = testing::Prepared({op1, op2}, config.elements, pool, 0, op_seq);
  ASSERT_EQ(wire.size(), 2u);
  EXPECT_EQ(wire[1]->probes, 0u);
  const uint32_t data_seq2 = wire[1]->op_seq;
  // Without probes it takes one op_seq, its data's.
  EXPECT_EQ(data_seq2, wire[0]->op_seq + 1);
  engine.Submit(wire, absl::Now());
  auto poll = [&] {
    transport.sent.clear();
    engine.Poll(absl::Now());
    return transport.sent;
  };
  auto answer_all = [&](const std::vector<std::vector<uint8_t>>& frames) {
    for (const auto& f : frames) {
      transport.inbox.push_back(Answer(config, f, wire::DecodeFrame(f)->header.next_exponent,
                                       config.aggregator_ip, config.next_hop_mac));
    }
  };
  std::vector<std::vector<uint8_t>> sent = poll();
  ASSERT_EQ(sent.size(), std::min<uint32_t>(pool, EngineOptions{}.initial_window));
  // The window grows by one per result: answer until the first operation's
  // probes and data are all out, and check what its data proposes.
  uint32_t data1 = 0;
  const auto e_big = *numerics::BlockExponent({in2.data(), config.elements});
  const auto e_small = *numerics::BlockExponent({in2.data() + config.elements, config.elements});
  ASSERT_NE(e_big, e_small);
  for (int round = 0; round < 20 && data1 < pool; ++round) {
    for (const auto& f : sent) {
      const wire::Header h = wire::DecodeFrame(f)->header;
      // Probes are header-only: only the first operation's.
      if (h.num_elements == 0) {
        ASSERT_EQ(h.op_seq, wire[0]->op_seq - 1) << "the chained operation sent a probe";
      }
      ASSERT_NE(h.op_seq, data_seq2) << "its data went before its exponents were agreed";
      if (h.op_seq != wire[0]->op_seq) continue;
      ++data1;
      // Data chunk j proposes for chunk j + P: the second operation's j + P - pool.
      const uint8_t want = h.chunk == 0 ? e_big : h.chunk < 3 ? e_small : 0;
      EXPECT_EQ(h.next_exponent, want) << "chunk " << h.chunk;
    }
    answer_all(sent);
    sent = poll();
  }
  EXPECT_EQ(data1, pool);
  // The first operation's results agreed the second's exponents.
  ASSERT_EQ(sent.size(), 3u);
  for (const auto& f : sent) {
    const wire::Header h = wire::DecodeFrame(f)->header;
    EXPECT_EQ(h.op_seq, data_seq2);
    EXPECT_EQ(h.exponent, h.chunk == 0 ? e_big : e_small);
  }
  answer_all(sent);
  poll();
  for (const auto& op : {op1, op2}) {
    std::unique_lock<std::mutex> lock(op->mu);
    ASSERT_TRUE(op->done);
    EXPECT_TRUE(op->status.ok()) << op->status;
  }
  EXPECT_EQ(out1, in1);
  EXPECT_EQ(out2, in2);
}

// An operation submitted on its own while the one before is still out is
// not chained, but its probes go as soon as the stream reaches them: their
// round trip overlaps the previous operation's data.
TEST(WorkerChecks, AQueuedOperationsProbesTravelWithThePreviousData) {
  const host_config::WorkerConfig config = testing::OneRankConfig(Options());
  HandTransport transport;
  worker::Engine engine(config, &transport, EngineOptions{});
  std::vector<float> in(2 * config.elements, 1.0f), out1(in.size()), out2(in.size());
  uint32_t op_seq = 0;
  auto submit = [&](std::vector<float>& out) {
    auto op = std::make_shared<internal::OpState>();
    op->type = DataType::kFloat32;
    op->send = in.data();
    op->recv = out.data();
    op->count = in.size();
    op->deadline = absl::Now() + absl::Seconds(10);
    engine.Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq),
                absl::Now());
    return op;
  };
  auto op1 = submit(out1);
  auto op2 = submit(out2);
  transport.sent.clear();
  engine.Poll(absl::Now());
  ASSERT_EQ(transport.sent.size(), 2u);  // the first operation's probes
  for (const auto& f : transport.sent) {
    transport.inbox.push_back(Answer(config, f, wire::DecodeFrame(f)->header.next_exponent,
                                     config.aggregator_ip, config.next_hop_mac));
  }
  transport.sent.clear();
  engine.Poll(absl::Now());
  // Its two data chunks, then the second operation's two probes, in one round.
  ASSERT_EQ(transport.sent.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(transport.sent[i].size(), wire::FrameBytes(i < 2 ? config.elements : 0)) << i;
  }
  EXPECT_FALSE(op1->done);
}

// The shortest round trip of a chunk sent once is reported (what a pool
// must cover, grid-controller --rtt-us); a longer one does not replace it,
// and neither does a resent chunk's, which may answer either send.
TEST(WorkerChecks, TheShortestCleanRoundTripIsReported) {
  const host_config::WorkerConfig config = testing::OneRankConfig(Options());
  HandTransport transport;
  EngineOptions options;
  options.scan_interval = absl::Seconds(10);  // no scan, no resend by timer
  worker::Engine engine(config, &transport, options);
  EXPECT_EQ(engine.stats().min_rtt, absl::ZeroDuration());
  std::vector<float> in(3 * config.elements, 1.0f), out(in.size());
  const absl::Time t = absl::Now();
  auto op = std::make_shared<internal::OpState>();
  op->type = DataType::kFloat32;
  op->send = in.data();
  op->recv = out.data();
  op->count = in.size();
  op->deadline = t + absl::Seconds(60);
  uint32_t op_seq = 0;
  engine.Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq),
                absl::Now());
  transport.sent.clear();
  engine.Poll(t);
  ASSERT_EQ(transport.sent.size(), 3u);  // probes 0-2, sent at t
  const std::vector<std::vector<uint8_t>> probes = transport.sent;
  auto answer = [&](const std::vector<uint8_t>& f, absl::Duration at) {
    transport.inbox.push_back(Answer(config, f, wire::DecodeFrame(f)->header.next_exponent,
                                     config.aggregator_ip, config.next_hop_mac));
    engine.Poll(t + at);
  };
  answer(probes[0], absl::Milliseconds(5));
  EXPECT_EQ(engine.stats().min_rtt, absl::Milliseconds(5));
  ASSERT_EQ(transport.sent.size(), 4u);  // data 0, sent at t + 5 ms
  // A result marked RETRANSMIT (some rank's contribution was resent) says
  // nothing about the path, however fast (1 ms here).
  transport.inbox.push_back(Answer(config, transport.sent.back(), 0, config.aggregator_ip,
                                   config.next_hop_mac, wire::flags::kRetransmit));
  engine.Poll(t + absl::Milliseconds(6));
  EXPECT_EQ(engine.stats().min_rtt, absl::Milliseconds(5));
  answer(probes[1], absl::Milliseconds(7));  // 7 ms: longer, kept out
  EXPECT_EQ(engine.stats().min_rtt, absl::Milliseconds(5));
  ASSERT_EQ(transport.sent.size(), 5u);  // data 1, sent at t + 7 ms
  const std::vector<uint8_t> data1 = transport.sent.back();
  answer(data1, absl::Milliseconds(9));  // 2 ms: shorter, taken
  EXPECT_EQ(engine.stats().min_rtt, absl::Milliseconds(2));
}

// One scan resends a probe (header-only) and a data chunk (full): the engine
// flushes between them, since a transport batch has one frame size.
TEST(WorkerChecks, AScanResendsProbesAndDataInBatchesOfTheirOwnSize) {
  const host_config::WorkerConfig config = testing::OneRankConfig(Options());
  HandTransport transport;
  EngineOptions options;
  options.scan_interval = absl::Seconds(1);  // no scan until the last poll
  worker::Engine engine(config, &transport, options);
  std::vector<float> in(3 * config.elements, 1.0f), out(in.size());
  auto op = StartOne(engine, config, DataType::kFloat32, in.data(), out.data(), in.size());
  ASSERT_EQ(transport.sent.size(), 3u);  // probes 0-2
  const std::vector<std::vector<uint8_t>> probes = transport.sent;
  auto answer = [&](const std::vector<uint8_t>& f) {
    transport.inbox.push_back(Answer(config, f, wire::DecodeFrame(f)->header.next_exponent,
                                     config.aggregator_ip, config.next_hop_mac));
  };
  auto poll = [&](absl::Time at) {
    transport.sent.clear();
    engine.Poll(at);
    return transport.sent;
  };
  absl::Time t = absl::Now();
  answer(probes[0]);
  ASSERT_EQ(poll(t += absl::Milliseconds(1)).size(), 1u);  // data 0
  answer(probes[1]);
  const std::vector<std::vector<uint8_t>> d1 = poll(t += absl::Milliseconds(1));
  ASSERT_EQ(d1.size(), 1u);  // data 1; data 2 waits for probe 2
  answer(d1[0]);
  EXPECT_TRUE(poll(t += absl::Milliseconds(1)).empty());
  // Probe 2 and data 0, both sent before data 1, are lost by order.
  const std::vector<std::vector<uint8_t>> resent = poll(t + absl::Seconds(2));
  ASSERT_EQ(resent.size(), 2u);
  EXPECT_EQ(engine.stats().early_retransmissions, 2u);
  EXPECT_EQ(resent[0].size(), wire::FrameBytes(0));
  EXPECT_EQ(wire::DecodeFrame(resent[0])->header.chunk, 2u);
  EXPECT_EQ(resent[1].size(), wire::FrameBytes(config.elements));
  EXPECT_EQ(wire::DecodeFrame(resent[1])->header.chunk, 0u);
  EXPECT_EQ(engine.stats().malformed, 0u);
  std::unique_lock<std::mutex> lock(op->mu);
  EXPECT_FALSE(op->done);
}

// A best-effort switch's member resending a chunk in the other length than
// the switch's partial (header-only against elements): the root rejects it
// and answers nothing, as a switch drops it as bad_length.
TEST(RootChecks, AChunkInTheOtherLengthIsRejectedNotAnswered) {
  host_config::RootConfig config;
  config.job_id = 3;
  config.token = 77;
  config.world = 2;
  config.node = 1;
  config.slots = 4;
  config.elements = 4;
  config.ip = 0x0a000001;
  host_config::RootConfig::Contributor sw;
  sw.node = 10;
  sw.is_switch = true;
  sw.ip = 0x0a00000a;
  sw.next_hop_mac = {2, 0, 0, 0, 0, 10};
  sw.members = {{0, 0x0a000014}, {1, 0x0a000015}};
  config.contributors = {sw};
  HandTransport transport;
  root::RootEngine root(config, &transport);
  auto frame = [&](wire::MessageType type, uint32_t src_ip, uint16_t n, uint16_t chunk) {
    wire::Header h;
    h.type = type;
    h.job_id = config.job_id;
    h.job_token = config.token;
    h.op_seq = 5;
    h.chunk = chunk;
    h.slot = chunk;
    h.num_elements = n;
    if (type == wire::MessageType::kPartial) {
      h.agg_node = static_cast<uint16_t>(config.node);
      h.fan_in = 1;
      h.rank = wire::kAllRanks;
    } else {  // a member's DATA the switch passed on
      h.agg_node = static_cast<uint16_t>(sw.node);
      h.fan_in = 2;
      h.flags = wire::flags::kPassed | wire::flags::kRetransmit;
    }
    wire::FrameAddress a;
    a.src_ip = src_ip;
    a.dst_ip = config.ip;
    a.src_mac = sw.next_hop_mac;
    a.dst_mac = config.mac;
    std::vector<uint8_t> payload(size_t{n} * wire::kElementBytes, 1), f(wire::FrameBytes(n));
    EXPECT_TRUE(wire::EncodeFrame(a, h, payload, absl::MakeSpan(f)).ok());
    return f;
  };
  uint16_t chunk = 0;
  for (uint16_t partial_length : {uint16_t{4}, uint16_t{0}}) {
    SCOPED_TRACE(partial_length);
    root.OnFrame(frame(wire::MessageType::kPartial, sw.ip, partial_length, chunk));
    root.Flush();
    ASSERT_EQ(transport.sent.size(), 1u);  // the switch's share is the whole chunk
    EXPECT_EQ(wire::DecodeFrame(transport.sent[0])->header.num_elements, partial_length);
    transport.sent.clear();
    const uint64_t rejected = root.stats().rejected, resent = root.stats().results_resent;
    root.OnFrame(
        frame(wire::MessageType::kData, sw.members[0].ip, partial_length == 0 ? 4 : 0, chunk));
    root.Flush();
    EXPECT_TRUE(transport.sent.empty());
    EXPECT_EQ(root.stats().rejected, rejected + 1);
    EXPECT_EQ(root.stats().results_resent, resent);
    // In its own length, the same resend is answered.
    root.OnFrame(frame(wire::MessageType::kData, sw.members[0].ip, partial_length, chunk));
    root.Flush();
    ASSERT_EQ(transport.sent.size(), 1u);
    EXPECT_EQ(wire::DecodeFrame(transport.sent[0])->header.num_elements, partial_length);
    transport.sent.clear();
    ++chunk;
  }
}

// Results count only from the aggregation node, through the first hop.
TEST(WorkerChecks, ResultsFromElsewhereAreForeign) {
  const host_config::WorkerConfig config = testing::OneRankConfig(Options());
  HandTransport transport;
  worker::Engine engine(config, &transport, EngineOptions{});
  std::vector<int32_t> in(64, 1), out(64);
  auto op = StartOne(engine, config, DataType::kInt32, in.data(), out.data(), in.size());
  ASSERT_EQ(transport.sent.size(), 1u);
  const std::vector<uint8_t> request = transport.sent[0];
  wire::MacAddress other_mac = config.next_hop_mac;
  other_mac[5] ^= 1;
  transport.inbox.push_back(
      Answer(config, request, 0, config.aggregator_ip + 1, config.next_hop_mac));
  transport.inbox.push_back(Answer(config, request, 0, config.aggregator_ip, other_mac));
  engine.Poll(absl::Now());
  EXPECT_EQ(engine.stats().foreign, 2u);
  EXPECT_FALSE(op->done);
  transport.inbox.push_back(Answer(config, request, 0, config.aggregator_ip, config.next_hop_mac));
  engine.Poll(absl::Now());
  EXPECT_TRUE(op->done);
  EXPECT_EQ(out, in);  // the one contribution: its own
}

// ATP's second level at the root: a partial with PASSED counts as a
// best-effort switch's own only from that switch's proxy (S1, the root's
// ToR, through the root's first hop). From anyone else, or for a switch
// without a proxy, it is foreign and changes no sum.
TEST(RootChecks, ProxyPartialsCountOnlyFromTheProxy) {
  const topology::Topology topo = *topology::GenerateTopology("testbed");
  planner::PlannerOptions options;
  options.atp_best_effort = true;
  const planner::Plan plan = *(*planner::PlannerRegistry::WithBuiltins().Create("atp", options))
                                  ->Plan(topo, *planner::MakeJob(topo, 8, std::nullopt, 1));
  host_config::JobParams params;
  params.job_id = 5;
  params.token = 0x1234;
  params.slots = 4;
  params.elements = 4;
  const host_config::RootConfig config = *control::BuildRootConfig(topo, plan, params);
  const NodeId s1 = *topo.Find("S1"), s2 = *topo.Find("S2"), s3 = *topo.Find("S3");
  const wire::MacAddress first_hop = config.contributors[0].next_hop_mac;
  auto partial = [&](NodeId from, NodeId agg_node, uint16_t fan_in, uint8_t flags, int32_t value) {
    wire::Header h;
    h.type = wire::MessageType::kPartial;
    h.flags = flags;
    h.job_id = params.job_id;
    h.job_token = params.token;
    h.agg_node = static_cast<uint16_t>(agg_node);
    h.fan_in = fan_in;
    h.chunk = 0;
    h.exponent = 130;
    h.num_elements = params.elements;
    wire::FrameAddress a;
    a.src_ip = control::NodeIp(from);
    a.dst_ip = config.ip;
    a.src_mac = first_hop;
    a.dst_mac = config.mac;
    std::vector<uint8_t> payload(4 * params.elements);
    for (int i = 0; i < params.elements; ++i) wire::StoreElement(payload.data(), i, value);
    std::vector<uint8_t> f(wire::FrameBytes(params.elements));
    (void)wire::EncodeFrame(a, h, payload, absl::MakeSpan(f));
    return f;
  };
  const auto root_fan_in = static_cast<uint16_t>(config.contributors.size());
  const uint8_t kPassed = wire::flags::kPassed;
  HandTransport transport;
  root::RootEngine engine(config, &transport);
  // Forged: S2's chunk "completed" by S2 itself, by S3, or by a worker; and
  // a proxy partial for S1, which has no proxy.
  engine.OnFrame(partial(s2, s2, 3, kPassed, 1000));
  engine.OnFrame(partial(s3, s2, 3, kPassed, 1000));
  engine.OnFrame(partial(plan.job.workers[2], s2, 3, kPassed, 1000));
  engine.OnFrame(partial(s1, s1, 2, kPassed, 1000));
  EXPECT_EQ(engine.stats().foreign, 4u);
  EXPECT_EQ(engine.stats().contributions, 0u);
  // The real ones: S2's chunk from its proxy, S1's and S3's own partials.
  engine.OnFrame(partial(s1, s2, 3, kPassed, 3));
  engine.OnFrame(partial(s1, config.node, root_fan_in, 0, 2));
  engine.Flush();
  EXPECT_TRUE(transport.sent.empty());
  engine.OnFrame(partial(s3, config.node, root_fan_in, 0, 3));
  engine.Flush();
  EXPECT_EQ(engine.stats().proxied, 1u);
  EXPECT_EQ(engine.stats().completed, 1u);
  ASSERT_EQ(transport.sent.size(), 3u);  // one RESULT per contributor
  const wire::FrameView result = *wire::DecodeFrame(transport.sent[0]);
  EXPECT_EQ(wire::LoadElement(result.payload, 0), 3 + 2 + 3);
}

}  // namespace
}  // namespace grid
