#include <array>
#include <cstring>
#include <nlohmann/json.hpp>

#include "aggregation/elements.h"
#include "fabric.h"
#include "gmock/gmock.h"
#include "grid/switch.h"
#include "gtest/gtest.h"
#include "numerics/kernels.h"
#include "util/random.h"

namespace grid::sw {
namespace {

using testing::DataFrame;
using ::testing::HasSubstr;
using testing::Job;

// The testbed with SwitchML's plan: S1 aggregates W1, W2 (ranks 0, 1); S2
// aggregates W3, W4, W7 (ranks 2, 3, 6); S3 aggregates W5, W6, W8 (4, 5, 7).
class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_ = testing::MakeJob("testbed", "switchml", 8);
    s1_ = job_.node("S1");
    s2_ = job_.node("S2");
    auto p = Pipeline::Create(job_.configs.at(s2_));
    ASSERT_TRUE(p.ok()) << p.status();
    s2p_ = std::make_unique<Pipeline>(*std::move(p));
  }

  // Feeds a frame to S2 as if it came from `rank`'s host.
  Output Feed(std::vector<uint8_t> frame, int from_rank = 2) {
    return FeedOn(std::move(frame), job_.PortTo(s2_, job_.plan.job.workers[from_rank]));
  }
  // Feeds a frame to S2 on `port`.
  Output FeedOn(std::vector<uint8_t> frame, uint16_t port) {
    Output out;
    s2p_->Process(absl::MakeSpan(frame), port, &out);
    last_input_ = frame;
    return out;
  }
  // The port of S2 that leads to the root (S1's).
  uint16_t RootPort() const { return job_.PortTo(s2_, s1_); }

  wire::FrameView Decode(const Output& out, size_t i) {
    auto v = wire::DecodeFrame(out.Bytes(out.frames[i], last_input_));
    EXPECT_TRUE(v.ok()) << v.status();
    return v.value_or(wire::FrameView{});
  }

  uint64_t Drops(int reason) const { return s2p_->counters().drops[reason]; }
  uint64_t Drops(Drop reason) const { return Drops(static_cast<int>(reason)); }
  uint64_t Drops(wire::WireError reason) const { return Drops(static_cast<int>(reason)); }

  Job job_;
  topology::NodeId s1_, s2_;
  std::unique_ptr<Pipeline> s2p_;
  std::vector<uint8_t> last_input_;
};

std::vector<uint8_t> ResultFrame(const Job& j, topology::NodeId sw, uint16_t rank) {
  wire::Header h;
  h.type = wire::MessageType::kResult;
  h.job_id = j.params.job_id;
  h.job_token = j.params.token;
  h.rank = rank;
  h.agg_node = static_cast<uint16_t>(sw);
  h.path = j.labels.from_root.at(sw);
  h.fan_in = j.root_fan_in;
  h.chunk = 5;
  h.num_elements = 2;
  wire::FrameAddress a;
  a.src_ip = control::NodeIp(j.plan.job.root);
  a.dst_ip = control::NodeIp(sw);
  std::vector<uint8_t> payload(8, 0);
  wire::StoreElement(payload.data(), 0, 42);
  std::vector<uint8_t> f(wire::FrameBytes(2));
  (void)wire::EncodeFrame(a, h, payload, absl::MakeSpan(f));
  return f;
}

TEST_F(PipelineTest, AggregatesAndCompletes) {
  EXPECT_TRUE(Feed(DataFrame(job_, 2, 1, 0, {1, 2, 3, -4})).frames.empty());
  EXPECT_TRUE(Feed(DataFrame(job_, 3, 1, 0, {10, 20, 30, -40}), 3).frames.empty());
  Output out = Feed(DataFrame(job_, 6, 1, 0, {100, 200, 300, -400}), 6);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].port, job_.PortTo(s2_, s1_));  // toward the root at S1
  const wire::FrameView v = Decode(out, 0);
  EXPECT_EQ(v.header.type, wire::MessageType::kPartial);
  EXPECT_EQ(v.header.agg_node, job_.plan.job.root);
  EXPECT_EQ(v.header.rank, wire::kAllRanks);
  EXPECT_EQ(v.header.fan_in, 3);  // three switches contribute at the root
  EXPECT_EQ(v.header.path, job_.labels.to_root.at(s2_));
  EXPECT_EQ(v.header.next_exponent, 126);  // max of 122, 123, 126
  EXPECT_EQ(v.header.flags & wire::flags::kRetransmit, 0);
  EXPECT_EQ(v.address.dst_ip, control::NodeIp(job_.plan.job.root));
  EXPECT_EQ(v.address.src_ip, control::NodeIp(s2_));
  const int32_t expect[] = {111, 222, 333, -444};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(wire::LoadElement(v.payload, i), expect[i]);
  const JobCounters& jc = s2p_->counters().jobs.at(7);
  EXPECT_EQ(jc.data, 3u);
  EXPECT_EQ(jc.partials, 1u);
}

// SIGHUP's reload keeps a running job's slots (chunks in flight are not
// lost), unless the job's token changed: a new token is a new run, which
// the old run's complete copies must not answer with the old sums.
TEST_F(PipelineTest, AReloadKeepsAJobsSlotsUnlessItsTokenChanged) {
  for (int r : {2, 3, 6}) Feed(DataFrame(job_, r, 1, 0, {1, 2, 3, 4}), r);
  ASSERT_EQ(s2p_->counters().jobs.at(7).partials, 1u);
  SwitchConfig same = job_.configs.at(s2_);
  ASSERT_TRUE(s2p_->Reload(same).ok());
  // Rank 2 sends chunk 0 again: the kept copy answers it as a resend.
  Output out = Feed(DataFrame(job_, 2, 1, 0, {1, 2, 3, 4}), 2);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(s2p_->counters().jobs.at(7).partials_resent, 1u);

  SwitchConfig next_run = same;
  next_run.jobs.at(7).token ^= 0x1234;
  ASSERT_TRUE(s2p_->Reload(next_run).ok());
  job_.params.token = next_run.jobs.at(7).token;
  // The next run's chunk 0 starts a fresh sum: nothing goes out until every
  // member has sent it, and the sum is the new run's.
  EXPECT_TRUE(Feed(DataFrame(job_, 2, 1, 0, {5, 5, 5, 5}), 2).frames.empty());
  EXPECT_TRUE(Feed(DataFrame(job_, 3, 1, 0, {5, 5, 5, 5}), 3).frames.empty());
  out = Feed(DataFrame(job_, 6, 1, 0, {5, 5, 5, 5}), 6);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(wire::LoadElement(Decode(out, 0).payload, 0), 15);
  EXPECT_EQ(s2p_->counters().jobs.at(7).partials_resent, 1u);
}

// Feeds S2's members' chunks 0, 1, ... until S2 stops aggregating them;
// returns the first chunk that did not complete.
uint32_t Exhaust(Pipeline& p, const Job& job, uint16_t (*port)(const Job&, int)) {
  Output out;
  for (uint32_t chunk = 0; chunk < 100000; ++chunk) {
    size_t partials = 0;
    for (int r : {2, 3, 6}) {
      auto f = DataFrame(job, r, 1, chunk, {1, 1, 1, 1});
      out.Clear();
      p.Process(absl::MakeSpan(f), port(job, r), &out);
      for (const OutFrame& o : out.frames) {
        partials += wire::DecodeFrame(out.Bytes(o, f))->header.type == wire::MessageType::kPartial;
      }
    }
    if (partials == 0) return chunk;
  }
  return 0;
}

uint16_t MemberPort(const Job& job, int rank) {
  return job.PortTo(job.node("S2"), job.plan.job.workers[rank]);
}

// The burst is a window of every member: 3 members x 256 slots of 1024
// elements (3.2 MB), not only 64 KiB, so a poll round after the switch was
// descheduled does not drop what its members sent within their windows.
TEST(PipelineCapacity, AJobOfWideFramesGetsABurstOfEveryMembersWindow) {
  Job wide = testing::MakeJob("testbed", "switchml", 8, 1, /*slots=*/256, wire::kMaxElements);
  SwitchConfig config = wide.configs.at(wide.node("S2"));
  config.capacity_gbps = 1;
  const double frame_bits = 8.0 * wire::FrameBytes(wire::kMaxElements);
  EXPECT_EQ(Pipeline::CapacityBurstBits(config), 3 * 256 * frame_bits);
  Pipeline p = *Pipeline::Create(config);
  const std::vector<int32_t> values(wire::kMaxElements, 1);
  Output out;
  const int frames = 3 * 256;  // every member's window, 3.2 MB: fifty 64 KiB bursts
  for (int i = 0; i < frames; ++i) {
    const int rank = std::array{2, 3, 6}[i % 3];
    auto f = DataFrame(wide, rank, 1, static_cast<uint32_t>(i / 3), values);
    out.Clear();
    p.Process(absl::MakeSpan(f), MemberPort(wide, rank), &out);
  }
  EXPECT_EQ(p.counters().drops[static_cast<int>(Drop::kOverCapacity)], 0u);
  EXPECT_EQ(p.counters().jobs.at(7).data, static_cast<uint64_t>(frames));
  // The burst is still a burst: frames beyond it are dropped.
  for (int i = frames; i < 2 * frames; ++i) {
    const int rank = std::array{2, 3, 6}[i % 3];
    auto f = DataFrame(wide, rank, 1, static_cast<uint32_t>(i / 3), values);
    out.Clear();
    p.Process(absl::MakeSpan(f), MemberPort(wide, rank), &out);
  }
  EXPECT_EQ(p.counters().jobs.at(7).data, static_cast<uint64_t>(frames));
  EXPECT_EQ(p.counters().drops[static_cast<int>(Drop::kOverCapacity)],
            static_cast<uint64_t>(frames));
}

// A job of few members and a small pool still gets the 64 KiB burst, or 192
// of its frames; two jobs get both their windows.
TEST(PipelineCapacity, TheBurstIsNeverBelow64KiBAndCoversEveryJob) {
  Job narrow = testing::MakeJob("testbed", "switchml", 8, 1, /*slots=*/4, 4);
  SwitchConfig config = narrow.configs.at(narrow.node("S2"));
  EXPECT_EQ(Pipeline::CapacityBurstBits(config), Pipeline::kCapacityBurstBits);
  Job wide = testing::MakeJob("testbed", "switchml", 8, 1, /*slots=*/4, wire::kMaxElements);
  config = wide.configs.at(wide.node("S2"));
  const double frame_bits = 8.0 * wire::FrameBytes(wire::kMaxElements);
  EXPECT_EQ(Pipeline::CapacityBurstBits(config), Pipeline::kCapacityBurstFrames * frame_bits);
  Job big = testing::MakeJob("testbed", "switchml", 8, 1, /*slots=*/256, wire::kMaxElements);
  config = big.configs.at(big.node("S2"));
  SwitchConfig other = config;
  sw::JobEntry second = config.jobs.begin()->second;
  second.job_id = 8;
  config.jobs.emplace(8, second);
  EXPECT_EQ(Pipeline::CapacityBurstBits(config), 2 * 3 * 256 * frame_bits);
  EXPECT_EQ(Pipeline::CapacityBurstBits(other), 3 * 256 * frame_bits);
}

TEST_F(PipelineTest, CapacityDropsDataBeyondItAndCreditRestoresIt) {
  SwitchConfig config = job_.configs.at(s2_);
  config.capacity_gbps = 1;
  Pipeline p = *Pipeline::Create(config);
  const uint32_t stuck = Exhaust(p, job_, MemberPort);
  ASSERT_GT(stuck, 0u);
  const uint64_t dropped = p.counters().drops[static_cast<int>(Drop::kOverCapacity)];
  EXPECT_GT(dropped, 0u);
  // The starting burst: what was aggregated fits in it.
  EXPECT_LE(p.counters().jobs.at(7).data * 8.0 * wire::FrameBytes(4),
            Pipeline::CapacityBurstBits(config));
  // Credit for three frames lets the dropped ones in on retransmission.
  p.AddCapacityCredit(3 * 8.0 * wire::FrameBytes(4));
  Output out;
  for (int r : {2, 3, 6}) {
    auto f = DataFrame(job_, r, 1, stuck, {1, 1, 1, 1}, wire::flags::kRetransmit);
    out.Clear();
    p.Process(absl::MakeSpan(f), MemberPort(job_, r), &out);
  }
  ASSERT_EQ(out.frames.size(), 1u);
  auto partial = wire::DecodeFrame(out.Bytes(out.frames[0], {}));
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->header.type, wire::MessageType::kPartial);
  // No capacity configured: credit is ignored and nothing is ever dropped.
  Pipeline unlimited = *Pipeline::Create(job_.configs.at(s2_));
  EXPECT_EQ(Exhaust(unlimited, job_, MemberPort), 0u);
}

TEST_F(PipelineTest, BestEffortPassesWholeChunksOnWhenOutOfCapacity) {
  SwitchConfig config = job_.configs.at(s2_);
  config.capacity_gbps = 1;
  config.jobs.at(7).aggregate->best_effort = true;
  Pipeline p = *Pipeline::Create(config);
  const uint32_t chunk = Exhaust(p, job_, MemberPort);
  ASSERT_GT(chunk, 0u);
  EXPECT_EQ(p.counters().drops[static_cast<int>(Drop::kOverCapacity)], 0u);
  const uint64_t passed_before = p.counters().jobs.at(7).passed;
  EXPECT_EQ(passed_before, 3u);  // the chunk Exhaust stopped at, every member's DATA
  // The next chunk: with credit for it arriving after its first packet, it
  // is still passed on whole, never split between the switch and the root.
  const uint32_t next = chunk + 1;
  Output out;
  for (int r : {2, 3, 6}) {
    auto f = DataFrame(job_, r, 1, next, {r, r, r, r});
    out.Clear();
    p.Process(absl::MakeSpan(f), MemberPort(job_, r), &out);
    ASSERT_EQ(out.frames.size(), 1u) << "rank " << r;
    EXPECT_EQ(out.frames[0].port, RootPort());
    auto v = wire::DecodeFrame(out.Bytes(out.frames[0], f));
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->header.type, wire::MessageType::kData);
    EXPECT_NE(v->header.flags & wire::flags::kPassed, 0);
    EXPECT_EQ(v->header.rank, r);
    EXPECT_EQ(v->header.agg_node, s2_);  // the root knows whose member it is
    EXPECT_EQ(v->header.path, job_.labels.to_root.at(s2_));
    EXPECT_EQ(v->address.src_ip, control::NodeIp(job_.plan.job.workers[r]));
    EXPECT_EQ(v->address.dst_ip, control::NodeIp(job_.plan.job.root));
    EXPECT_EQ(wire::LoadElement(v->payload, 0), r);
    p.AddCapacityCredit(1e9);
  }
  // A retransmission of a passed chunk is passed on again.
  auto again = DataFrame(job_, 3, 1, next, {3, 3, 3, 3}, wire::flags::kRetransmit);
  out.Clear();
  p.Process(absl::MakeSpan(again), MemberPort(job_, 3), &out);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(p.counters().jobs.at(7).passed_chunks, 2u);
  // With credit, the chunk after aggregates here again.
  for (int r : {2, 3, 6}) {
    auto f = DataFrame(job_, r, 1, next + 1, {1, 1, 1, 1});
    out.Clear();
    p.Process(absl::MakeSpan(f), MemberPort(job_, r), &out);
  }
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(wire::DecodeFrame(out.Bytes(out.frames[0], {}))->header.type,
            wire::MessageType::kPartial);
}

// ATP's second level: with a best-effort plan, S1 (the root's ToR) is the
// proxy of S2 and S3. S2's passed chunk is aggregated at S1 and goes to the
// root as one partial that stands for S2's; a retransmission into the
// complete proxy copy resends it; without capacity, S1 passes the chunk on
// to the root in turn.
TEST_F(PipelineTest, ProxyAtTheRootsTorCompletesPassedChunks) {
  Job j = job_;
  j.plan.best_effort = true;
  j.configs = *control::BuildSwitchConfigs(j.topo, j.plan, j.params);
  const SwitchConfig& s1c = j.configs.at(s1_);
  ASSERT_EQ(s1c.jobs.at(7).proxies.size(), 2u);  // S2's and S3's
  const JobEntry::Aggregate& proxy = s1c.jobs.at(7).proxies.at(static_cast<uint16_t>(s2_));
  EXPECT_EQ(proxy.root_node, s2_);
  EXPECT_GE(proxy.slot_base, s1c.jobs.at(7).aggregate->slot_base + j.params.slots);
  EXPECT_TRUE(j.configs.at(s2_).jobs.at(7).proxies.empty());
  // S2 without credit passes the chunk after the one Exhaust stopped at.
  SwitchConfig s2c = j.configs.at(s2_);
  s2c.capacity_gbps = 1;
  Pipeline s2 = *Pipeline::Create(s2c);
  const uint32_t chunk = Exhaust(s2, j, MemberPort) + 1;
  std::vector<std::vector<uint8_t>> passed;
  for (int r : {2, 3, 6}) {
    auto f = DataFrame(j, r, 1, chunk, {r, 10 * r, 0, -r});
    Output out;
    s2.Process(absl::MakeSpan(f), MemberPort(j, r), &out);
    ASSERT_EQ(out.frames.size(), 1u);
    const auto bytes = out.Bytes(out.frames[0], f);
    passed.emplace_back(bytes.begin(), bytes.end());
  }
  Pipeline s1 = *Pipeline::Create(s1c);
  const uint16_t from_s2 = j.PortTo(s1_, s2_), to_root = j.PortTo(s1_, j.plan.job.root);
  Output out;
  for (size_t i = 0; i < passed.size(); ++i) {
    std::vector<uint8_t> f = passed[i];
    out.Clear();
    s1.Process(absl::MakeSpan(f), from_s2, &out);
  }
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].port, to_root);
  auto partial = wire::DecodeFrame(out.Bytes(out.frames[0], {}));
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(partial->header.type, wire::MessageType::kPartial);
  EXPECT_NE(partial->header.flags & wire::flags::kPassed, 0);
  EXPECT_EQ(partial->header.agg_node, s2_);
  EXPECT_EQ(partial->header.fan_in, 3);
  EXPECT_EQ(partial->header.chunk, chunk);
  EXPECT_EQ(partial->address.src_ip, control::NodeIp(s1_));
  EXPECT_EQ(wire::LoadElement(partial->payload, 1), 10 * (2 + 3 + 6));
  EXPECT_EQ(s1.counters().jobs.at(7).proxied, 3u);
  EXPECT_EQ(s1.counters().jobs.at(7).data, 0u);
  // A member's retransmission, passed on again by S2, gets the partial again.
  auto again =
      DataFrame(j, 3, 1, chunk, {3, 30, 0, -3}, wire::flags::kRetransmit | wire::flags::kPassed);
  out.Clear();
  s1.Process(absl::MakeSpan(again), from_s2, &out);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(s1.counters().jobs.at(7).partials_resent, 1u);
  // Passed DATA on another port than S2's is refused.
  std::vector<uint8_t> wrong_port = passed[0];
  out.Clear();
  s1.Process(absl::MakeSpan(wrong_port), j.PortTo(s1_, j.node("S3")), &out);
  EXPECT_TRUE(out.frames.empty());
  EXPECT_EQ(s1.counters().drops[static_cast<int>(Drop::kBadIngress)], 1u);
  // Without capacity at S1, the proxy passes a chunk on to the root, whole.
  SwitchConfig tight = s1c;
  tight.capacity_gbps = 1;
  Pipeline s1t = *Pipeline::Create(tight);
  for (uint32_t c = 0;; ++c) {
    ASSERT_LT(c, 100000u) << "the starting burst never ran out";
    auto f = DataFrame(j, 2, 1, c, {1, 1, 1, 1}, wire::flags::kPassed);
    out.Clear();
    s1t.Process(absl::MakeSpan(f), from_s2, &out);
    if (out.frames.empty()) {  // taken into a proxy copy: complete it
      for (int r : {3, 6}) {
        auto g = DataFrame(j, r, 1, c, {1, 1, 1, 1}, wire::flags::kPassed);
        out.Clear();
        s1t.Process(absl::MakeSpan(g), from_s2, &out);
      }
      ASSERT_EQ(out.frames.size(), 1u);  // the partial
      continue;
    }
    ASSERT_EQ(out.frames.size(), 1u);
    auto on = wire::DecodeFrame(out.Bytes(out.frames[0], f));
    ASSERT_TRUE(on.ok()) << on.status();
    EXPECT_EQ(on->header.type, wire::MessageType::kData);
    EXPECT_EQ(on->header.agg_node, s2_);
    EXPECT_EQ(on->header.path, j.labels.to_root.at(s2_));
    EXPECT_EQ(out.frames[0].port, to_root);
    EXPECT_EQ(on->address.src_ip, control::NodeIp(j.plan.job.workers[2]));
    break;
  }
  EXPECT_EQ(s1t.counters().jobs.at(7).passed, 1u);
}

TEST_F(PipelineTest, DuplicateIntoIncompleteIsDropped) {
  Feed(DataFrame(job_, 2, 1, 0, {1, 1, 1, 1}));
  EXPECT_TRUE(
      Feed(DataFrame(job_, 2, 1, 0, {1, 1, 1, 1}, wire::flags::kRetransmit)).frames.empty());
  EXPECT_EQ(Drops(Drop::kDuplicate), 1u);
  // The duplicate was not added: the sum is still one contribution each.
  Feed(DataFrame(job_, 3, 1, 0, {1, 1, 1, 1}), 3);
  Output out = Feed(DataFrame(job_, 6, 1, 0, {1, 1, 1, 1}), 6);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(wire::LoadElement(Decode(out, 0).payload, 0), 3);
}

TEST_F(PipelineTest, RetransmissionIntoCompleteResendsThePartial) {
  for (int r : {2, 3, 6}) Feed(DataFrame(job_, r, 1, 0, {5, 5, 5, 5}), r);
  Output out = Feed(DataFrame(job_, 3, 1, 0, {5, 5, 5, 5}, wire::flags::kRetransmit), 3);
  ASSERT_EQ(out.frames.size(), 1u);
  const wire::FrameView v = Decode(out, 0);
  EXPECT_EQ(v.header.type, wire::MessageType::kPartial);
  EXPECT_EQ(v.header.rank, 3);  // who asked, so the root can answer it alone
  EXPECT_NE(v.header.flags & wire::flags::kRetransmit, 0);
  EXPECT_EQ(wire::LoadElement(v.payload, 0), 15);  // never added twice
  EXPECT_EQ(s2p_->counters().jobs.at(7).partials_resent, 1u);
}

TEST_F(PipelineTest, ShadowCopiesAndReuse) {
  // P = 8 slots: chunk 0 (slot 0, copy 0), chunk 8 (slot 0, copy 1), chunk 16 (slot 0, copy 0).
  for (int r : {2, 3, 6}) Feed(DataFrame(job_, r, 1, 0, {1, 0, 0, 0}), r);
  Feed(DataFrame(job_, 2, 1, 8, {2, 0, 0, 0}));  // copy 1, independent of copy 0
  Output resend = Feed(DataFrame(job_, 6, 1, 0, {1, 0, 0, 0}, wire::flags::kRetransmit), 6);
  ASSERT_EQ(resend.frames.size(), 1u);  // copy 0 still holds chunk 0's sum
  EXPECT_EQ(wire::LoadElement(Decode(resend, 0).payload, 0), 3);
  for (int r : {3, 6}) Feed(DataFrame(job_, r, 1, 8, {2, 0, 0, 0}), r);
  // Chunk 16 reuses copy 0: the first contribution overwrites chunk 0's sum.
  Feed(DataFrame(job_, 2, 1, 16, {7, 0, 0, 0}));
  Feed(DataFrame(job_, 3, 1, 16, {7, 0, 0, 0}), 3);
  Output out = Feed(DataFrame(job_, 6, 1, 16, {7, 0, 0, 0}), 6);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(wire::LoadElement(Decode(out, 0).payload, 0), 21);
  EXPECT_EQ(Decode(out, 0).header.chunk, 16u);
  // A late packet of chunk 0 must not disturb chunk 16's copy.
  EXPECT_TRUE(Feed(DataFrame(job_, 2, 1, 0, {1, 0, 0, 0})).frames.empty());
  EXPECT_EQ(Drops(Drop::kStale), 1u);
}

TEST_F(PipelineTest, CollisionIsSignalledToTheSender) {
  Feed(DataFrame(job_, 2, 1, 0, {1, 1, 1, 1}));                   // chunk 0 in progress in copy 0
  Output out = Feed(DataFrame(job_, 3, 1, 16, {1, 1, 1, 1}), 3);  // chunk 16: same copy
  EXPECT_EQ(Drops(Drop::kCollision), 1u);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].port, job_.PortTo(s2_, job_.plan.job.workers[3]));
  const wire::FrameView v = Decode(out, 0);
  EXPECT_EQ(v.header.type, wire::MessageType::kSignal);
  EXPECT_NE(v.header.flags & wire::flags::kCollision, 0);
  EXPECT_EQ(v.header.rank, 3);
  EXPECT_EQ(v.header.chunk, 16u);
  EXPECT_EQ(v.address.dst_ip, control::NodeIp(job_.plan.job.workers[3]));
  // Chunk 0 is untouched and still completes.
  Feed(DataFrame(job_, 3, 1, 0, {1, 1, 1, 1}), 3);
  EXPECT_EQ(Feed(DataFrame(job_, 6, 1, 0, {1, 1, 1, 1}), 6).frames.size(), 1u);
}

TEST_F(PipelineTest, AdmissionChecksNeverTouchState) {
  std::vector<uint8_t> f = DataFrame(job_, 2, 1, 0, {9, 9, 9, 9});
  std::memset(f.data() + wire::kGridOffset + offsetof(wire::WireHeader, job_token), 0x55, 4);
  EXPECT_TRUE(Feed(f).frames.empty());
  EXPECT_EQ(Drops(Drop::kBadToken), 1u);
  EXPECT_TRUE(Feed(DataFrame(job_, 0, 1, 0, {9, 9, 9, 9})).frames.empty());  // W1: a member of S1
  std::vector<uint8_t> nm = DataFrame(job_, 0, 1, 0, {9, 9, 9, 9});
  // Readdress it to S2 so S2 aggregates it: rank 0 is not S2's member.
  wire::Header h = wire::DecodeFrame(nm)->header;
  h.agg_node = static_cast<uint16_t>(s2_);
  h.fan_in = 3;
  ASSERT_TRUE(wire::EncodeHeader(h, absl::MakeSpan(nm).subspan(wire::kGridOffset)).ok());
  FeedOn(nm, RootPort());
  EXPECT_EQ(Drops(Drop::kNotMember), 1u);
  h.job_id = 99;
  ASSERT_TRUE(wire::EncodeHeader(h, absl::MakeSpan(nm).subspan(wire::kGridOffset)).ok());
  FeedOn(nm, RootPort());
  EXPECT_EQ(Drops(Drop::kUnknownJob), 1u);
  // Nothing above reached a slot: a clean chunk 0 sums to exactly 3.
  for (int r : {2, 3, 6}) {
    Output out = Feed(DataFrame(job_, r, 1, 0, {1, 1, 1, 1}), r);
    if (r == 6) {
      ASSERT_EQ(out.frames.size(), 1u);
      EXPECT_EQ(wire::LoadElement(Decode(out, 0).payload, 0), 3);
    }
  }
}

// A rank's chunks count only from its own host, on the plan's path, and
// results only from the root: nobody can speak for a member or for the root
// (docs/security.md). None of these touches a slot.
TEST_F(PipelineTest, SpoofedMembersAndResultsAreDropped) {
  const uint16_t w3 = job_.PortTo(s2_, job_.plan.job.workers[2]);
  const uint16_t w4 = job_.PortTo(s2_, job_.plan.job.workers[3]);
  const uint16_t s3 = job_.PortTo(s2_, job_.node("S3"));
  auto from = [&](std::vector<uint8_t> f, uint32_t src) {
    wire::Ipv4Header ip;
    std::memcpy(&ip, f.data() + wire::kIpv4Offset, sizeof(ip));
    ip.src = wire::HostToNet32(src);
    ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
    std::memcpy(f.data() + wire::kIpv4Offset, &ip, sizeof(ip));
    return f;
  };
  const uint32_t w3_ip = control::NodeIp(job_.plan.job.workers[2]);
  const uint32_t w4_ip = control::NodeIp(job_.plan.job.workers[3]);
  const uint32_t root_ip = control::NodeIp(job_.plan.job.root);
  // W3's host sends as rank 3 (W4), with its own address: the wrong port.
  FeedOn(from(DataFrame(job_, 3, 1, 0, {9, 9, 9, 9}), w3_ip), w3);
  EXPECT_EQ(Drops(Drop::kBadIngress), 1u);
  // ... with W4's address: its own port allows only its own address.
  FeedOn(DataFrame(job_, 3, 1, 0, {9, 9, 9, 9}), w3);
  EXPECT_EQ(Drops(Drop::kBadSource), 1u);
  // From the fabric (S3's port), as W4: the wrong port for rank 3.
  FeedOn(DataFrame(job_, 3, 1, 0, {9, 9, 9, 9}), s3);
  EXPECT_EQ(Drops(Drop::kBadIngress), 2u);
  // On W4's port, but from W3's address.
  FeedOn(from(DataFrame(job_, 3, 1, 0, {9, 9, 9, 9}), w3_ip), w4);
  EXPECT_EQ(Drops(Drop::kBadSource), 2u);
  // Results: from a host's port, from the wrong side, from the wrong address.
  FeedOn(ResultFrame(job_, s2_, wire::kAllRanks), w3);
  EXPECT_EQ(Drops(Drop::kBadSource), 3u);
  FeedOn(ResultFrame(job_, s2_, wire::kAllRanks), s3);
  EXPECT_EQ(Drops(Drop::kBadIngress), 3u);
  FeedOn(from(ResultFrame(job_, s2_, wire::kAllRanks), w4_ip), RootPort());
  EXPECT_EQ(Drops(Drop::kBadSource), 4u);
  EXPECT_EQ(s2p_->counters().jobs.at(7).data, 0u);
  EXPECT_EQ(s2p_->counters().jobs.at(7).replicas, 0u);
  // The real members' chunk 0 sums to exactly 3, and the root's result
  // reaches all three.
  Output partial;
  for (int r : {2, 3, 6}) partial = Feed(DataFrame(job_, r, 1, 0, {1, 1, 1, 1}), r);
  ASSERT_EQ(partial.frames.size(), 1u);
  EXPECT_EQ(wire::LoadElement(Decode(partial, 0).payload, 0), 3);
  EXPECT_EQ(
      FeedOn(from(ResultFrame(job_, s2_, wire::kAllRanks), root_ip), RootPort()).frames.size(), 3u);
}

// An exponent probe has no elements: its copy sums exponents alone and its
// partial leaves header-only. A copy's first contribution decides its length;
// the same chunk in the other length is dropped and changes nothing.
TEST_F(PipelineTest, HeaderOnlyProbesSumExponentsAlone) {
  EXPECT_TRUE(Feed(DataFrame(job_, 2, 1, 0, {})).frames.empty());
  EXPECT_TRUE(Feed(DataFrame(job_, 3, 1, 0, {1, 2, 3, 4}), 3).frames.empty());
  EXPECT_EQ(Drops(Drop::kBadLength), 1u);
  EXPECT_TRUE(Feed(DataFrame(job_, 3, 1, 0, {}), 3).frames.empty());
  Output out = Feed(DataFrame(job_, 6, 1, 0, {}), 6);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].length, wire::FrameBytes(0));
  wire::FrameView v = Decode(out, 0);
  EXPECT_EQ(v.header.type, wire::MessageType::kPartial);
  EXPECT_EQ(v.header.num_elements, 0);
  EXPECT_EQ(v.header.next_exponent, 126);  // max of 122, 123, 126
  // A probe resent into the complete copy: the header-only partial again.
  out = Feed(DataFrame(job_, 3, 1, 0, {}, wire::flags::kRetransmit), 3);
  ASSERT_EQ(out.frames.size(), 1u);
  v = Decode(out, 0);
  EXPECT_EQ(v.header.num_elements, 0);
  EXPECT_EQ(v.header.rank, 3);
  // ... but not in the other length.
  EXPECT_TRUE(
      Feed(DataFrame(job_, 3, 1, 0, {7, 7, 7, 7}, wire::flags::kRetransmit), 3).frames.empty());
  EXPECT_EQ(Drops(Drop::kBadLength), 2u);

  // A copy with elements refuses a header-only contribution of its chunk,
  // and its sum is the others' alone.
  Feed(DataFrame(job_, 2, 1, 1, {1, 1, 1, 1}));
  EXPECT_TRUE(Feed(DataFrame(job_, 3, 1, 1, {}), 3).frames.empty());
  EXPECT_EQ(Drops(Drop::kBadLength), 3u);
  Feed(DataFrame(job_, 3, 1, 1, {2, 2, 2, 2}), 3);
  out = Feed(DataFrame(job_, 6, 1, 1, {4, 4, 4, 4}), 6);
  ASSERT_EQ(out.frames.size(), 1u);
  v = Decode(out, 0);
  EXPECT_EQ(v.header.num_elements, 4);
  EXPECT_EQ(wire::LoadElement(v.payload, 0), 7);
  EXPECT_EQ(s2p_->counters().jobs.at(7).partials, 2u);
}

TEST_F(PipelineTest, BadSlotFanInAndLength) {
  auto rewrite = [&](auto edit) {
    std::vector<uint8_t> f = DataFrame(job_, 2, 1, 0, {1, 2, 3, 4});
    wire::Header h = wire::DecodeFrame(f)->header;
    edit(h);
    EXPECT_TRUE(wire::EncodeHeader(h, absl::MakeSpan(f).subspan(wire::kGridOffset)).ok());
    return f;
  };
  Feed(rewrite([](wire::Header& h) { h.slot = 8; }));
  EXPECT_EQ(Drops(Drop::kBadSlot), 1u);
  Feed(rewrite([](wire::Header& h) { h.fan_in = 4; }));
  EXPECT_EQ(Drops(Drop::kBadFanIn), 1u);
  // Every packet of the job carries exactly its 4 elements per packet.
  Feed(DataFrame(job_, 2, 1, 0, {1, 2, 3, 4, 5}));
  EXPECT_EQ(Drops(Drop::kBadLength), 1u);
  Feed(DataFrame(job_, 2, 1, 0, {1, 2}));
  EXPECT_EQ(Drops(Drop::kBadLength), 2u);
  EXPECT_EQ(s2p_->counters().jobs.at(7).data, 0u);
}

TEST_F(PipelineTest, MalformedAndOtherTraffic) {
  std::vector<uint8_t> f = DataFrame(job_, 2, 1, 0, {1, 2, 3, 4});
  f[wire::kGridOffset] = 9;  // version
  Feed(f);
  EXPECT_EQ(Drops(static_cast<int>(wire::WireError::kGridVersion)), 1u);
  EXPECT_STREQ(DropName(static_cast<int>(wire::WireError::kGridVersion)), "grid.version");
  // A non-GRID UDP packet to W4 goes by the IPv4 routes.
  std::vector<uint8_t> other = testing::OtherFrame(job_, 2, 3);
  wire::Ipv4Header ip;
  std::memcpy(&ip, other.data() + wire::kIpv4Offset, sizeof(ip));
  Output out = Feed(other);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].port, job_.PortTo(s2_, job_.plan.job.workers[3]));
  EXPECT_TRUE(out.frames[0].is_input);
  EXPECT_EQ(s2p_->counters().other_forwarded, 1u);
  // Short non-GRID packets (a 60-byte TCP segment) are forwarded too.
  std::vector<uint8_t> tcp(other.begin(), other.begin() + 60);
  tcp[wire::kIpv4Offset + offsetof(wire::Ipv4Header, protocol)] = 6;
  ip.protocol = 6;
  ip.total_length = wire::HostToNet16(46);
  ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(tcp.data() + wire::kIpv4Offset, &ip, sizeof(ip));
  ASSERT_EQ(Feed(tcp).frames.size(), 1u);
  EXPECT_EQ(s2p_->counters().other_forwarded, 2u);
  ip.dst = wire::HostToNet32(0x08080808);
  ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(other.data() + wire::kIpv4Offset, &ip, sizeof(ip));
  Feed(other);
  EXPECT_EQ(Drops(Drop::kNoRoute), 1u);
}

// What every router checks before it forwards, for GRID and other traffic
// alike: a readable header, a verifying checksum, a TTL left.
TEST_F(PipelineTest, RouterChecksDropWithTheirReason) {
  const std::vector<uint8_t> data = DataFrame(job_, 2, 1, 0, {1, 2, 3, 4});
  auto with_ip = [&](auto edit, bool fix_checksum = true) {
    std::vector<uint8_t> f = data;
    wire::Ipv4Header ip;
    std::memcpy(&ip, f.data() + wire::kIpv4Offset, sizeof(ip));
    ip.dst = wire::HostToNet32(control::NodeIp(job_.plan.job.workers[3]));
    edit(ip);
    if (fix_checksum) ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
    std::memcpy(f.data() + wire::kIpv4Offset, &ip, sizeof(ip));
    const uint16_t dns = wire::HostToNet16(53);  // not GRID: plain IPv4 forwarding
    std::memcpy(f.data() + wire::kUdpOffset + 2, &dns, 2);
    return f;
  };
  Feed(with_ip([](wire::Ipv4Header& ip) { ip.ttl = 1; }));
  EXPECT_EQ(Drops(Drop::kTtlExpired), 1u);
  Feed(with_ip([](wire::Ipv4Header& ip) { ip.checksum ^= 1; }, false));
  EXPECT_EQ(Drops(wire::WireError::kIpChecksum), 1u);
  Feed(with_ip([](wire::Ipv4Header& ip) { ip.version_ihl = 0x46; }));
  EXPECT_EQ(Drops(wire::WireError::kIpHeaderLength), 1u);
  Feed(with_ip([](wire::Ipv4Header& ip) { ip.version_ihl = 0x65; }));
  EXPECT_EQ(Drops(wire::WireError::kIpVersion), 1u);
  EXPECT_EQ(s2p_->counters().other_forwarded, 0u);
  // A GRID packet passing through with TTL 1.
  std::vector<uint8_t> through = DataFrame(job_, 2, 1, 0, {1, 2, 3, 4});
  wire::Header h = wire::DecodeFrame(through)->header;
  h.agg_node = static_cast<uint16_t>(s1_);
  ASSERT_TRUE(wire::EncodeHeader(h, absl::MakeSpan(through).subspan(wire::kGridOffset)).ok());
  wire::Ipv4Header ip;
  std::memcpy(&ip, through.data() + wire::kIpv4Offset, sizeof(ip));
  ip.ttl = 1;
  ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(through.data() + wire::kIpv4Offset, &ip, sizeof(ip));
  EXPECT_TRUE(Feed(through).frames.empty());
  EXPECT_EQ(Drops(Drop::kTtlExpired), 2u);
  EXPECT_EQ(s2p_->counters().total_drops(), 5u);
}

// A sender's kernel may checksum its datagrams; a switch that rewrites a
// packet's addresses or flags sends it with no UDP checksum, so the next
// kernel does not drop it (wire-protocol.md).
TEST_F(PipelineTest, EmittedGridPacketsCarryNoUdpChecksum) {
  std::vector<uint8_t> result = ResultFrame(job_, s2_, wire::kAllRanks);
  const uint16_t kernel_checksum = wire::HostToNet16(0x1234);
  std::memcpy(result.data() + wire::kUdpOffset + 6, &kernel_checksum, 2);
  Output out = FeedOn(result, RootPort());
  ASSERT_EQ(out.frames.size(), 3u);
  for (const OutFrame& f : out.frames) {
    const absl::Span<const uint8_t> bytes = out.Bytes(f, last_input_);
    EXPECT_EQ(bytes[wire::kUdpOffset + 6], 0);
    EXPECT_EQ(bytes[wire::kUdpOffset + 7], 0);
  }
}

TEST_F(PipelineTest, ForwardsByLabel) {
  // S2's partial crosses S1 on its way to the PS: S1 forwards by label.
  auto s1 = Pipeline::Create(job_.configs.at(s1_));
  ASSERT_TRUE(s1.ok());
  for (int r : {2, 3}) Feed(DataFrame(job_, r, 1, 0, {1, 1, 1, 1}), r);
  Output partial = Feed(DataFrame(job_, 6, 1, 0, {1, 1, 1, 1}), 6);
  ASSERT_EQ(partial.frames.size(), 1u);
  std::vector<uint8_t> frame(partial.Bytes(partial.frames[0], last_input_).begin(),
                             partial.Bytes(partial.frames[0], last_input_).end());
  const uint8_t ttl = frame[wire::kIpv4Offset + 8];
  s1->SetQueueDepth(job_.PortTo(s1_, job_.plan.job.root), 1000);  // a deep queue
  Output out;
  s1->Process(absl::MakeSpan(frame), job_.PortTo(s1_, s2_), &out);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_TRUE(out.frames[0].is_input);
  EXPECT_EQ(out.frames[0].port, job_.PortTo(s1_, job_.plan.job.root));
  auto v = wire::DecodeFrame(frame);  // the checksum still verifies after the TTL change
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(frame[wire::kIpv4Offset + 8], ttl - 1);
  EXPECT_EQ(v->address.dst_mac, control::NodeMac(job_.plan.job.root));
  EXPECT_NE(v->header.flags & wire::flags::kCongestion, 0);  // marked by the deep queue
  EXPECT_EQ(s1->counters().forwarded, 1u);
  // Unknown label: dropped.
  std::vector<uint8_t> lost = frame;
  wire::Header h = v->header;
  h.path = 999;
  ASSERT_TRUE(wire::EncodeHeader(h, absl::MakeSpan(lost).subspan(wire::kGridOffset)).ok());
  s1->Process(absl::MakeSpan(lost), 0, &out);
  EXPECT_EQ(s1->counters().drops[static_cast<int>(Drop::kNoRoute)], 1u);
}

TEST_F(PipelineTest, ReplicatesResultsToMembers) {
  Output out = FeedOn(ResultFrame(job_, s2_, wire::kAllRanks), RootPort());
  ASSERT_EQ(out.frames.size(), 3u);
  std::vector<int> ranks;
  for (size_t i = 0; i < out.frames.size(); ++i) {
    const wire::FrameView v = Decode(out, i);
    ranks.push_back(v.header.rank);
    const topology::NodeId host = job_.plan.job.workers[v.header.rank];
    EXPECT_EQ(out.frames[i].port, job_.PortTo(s2_, host));
    EXPECT_EQ(v.address.dst_ip, control::NodeIp(host));
    EXPECT_EQ(v.header.path, job_.labels.result[v.header.rank]);
    EXPECT_EQ(wire::LoadElement(v.payload, 0), 42);
  }
  EXPECT_THAT(ranks, ::testing::UnorderedElementsAre(2, 3, 6));
  // A result for one rank (answering its retransmission) goes to it alone.
  Output one = FeedOn(ResultFrame(job_, s2_, 6), RootPort());
  ASSERT_EQ(one.frames.size(), 1u);
  EXPECT_EQ(Decode(one, 0).header.rank, 6);
  FeedOn(ResultFrame(job_, s2_, 0), RootPort());  // not S2's member
  EXPECT_EQ(Drops(Drop::kNotMember), 1u);
  const JobCounters& jc = s2p_->counters().jobs.at(7);
  EXPECT_EQ(jc.results, 2u);
  EXPECT_EQ(jc.replicas, 4u);
}

TEST_F(PipelineTest, CountersAndOverflow) {
  const int32_t big = 1 << 30;
  Feed(DataFrame(job_, 2, 1, 1, {big, 0, 0, 0}));
  Feed(DataFrame(job_, 3, 1, 1, {big, 0, 0, 0}), 3);
  Output out = Feed(DataFrame(job_, 6, 1, 1, {big, 0, 0, 0}), 6);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_NE(Decode(out, 0).header.flags & wire::flags::kOverflow, 0);
  EXPECT_EQ(s2p_->counters().jobs.at(7).overflows, 1u);
  const PortCounters& in = s2p_->counters().ports[job_.PortTo(s2_, job_.plan.job.workers[2])];
  EXPECT_EQ(in.rx_packets, 1u);
  EXPECT_EQ(in.rx_bytes, wire::FrameBytes(4));
  EXPECT_EQ(s2p_->counters().ports[job_.PortTo(s2_, s1_)].tx_packets, 1u);
  s2p_->ResetCounters();
  EXPECT_EQ(s2p_->counters().jobs.at(7).overflows, 0u);
  EXPECT_EQ(s2p_->counters().total_drops(), 0u);
}

TEST(Elements, SimdAddMatchesScalarIncludingOverflow) {
  if (!numerics::internal::HaveAvx2()) GTEST_SKIP() << "CPU has no AVX2";
  util::Random rng(3);
  for (size_t n : {0, 1, 7, 8, 9, 64, 65, 1024}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<int32_t> a(n), b(n);
      std::vector<uint8_t> payload(4 * n);
      for (size_t i = 0; i < n; ++i) {
        // Mostly small, sometimes near the edges so sums wrap.
        a[i] = static_cast<int32_t>(rng.Next());
        const int32_t v =
            trial % 3 ? static_cast<int32_t>(rng.Below(1000)) : static_cast<int32_t>(rng.Next());
        wire::StoreElement(payload.data(), i, v);
      }
      b = a;
      const bool wrapped_scalar = aggregation::AddElementsScalar(a.data(), payload.data(), n);
      const bool wrapped_simd = aggregation::AddElementsAvx2(b.data(), payload.data(), n);
      ASSERT_EQ(a, b) << n;
      ASSERT_EQ(wrapped_scalar, wrapped_simd) << n << " trial " << trial;
    }
  }
}

TEST(SwitchConfig, JsonRoundTripAndValidation) {
  Job job = testing::MakeJob("fattree:k=4,prog=random:0.5,cap=uniform:100:3200,seed=4", "grid", 10);
  for (const auto& [node, c] : job.configs) {
    const std::string json = ConfigToJson(c);
    auto parsed = ParseConfigJson(json);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(ConfigToJson(*parsed), json);
  }
  // C_s and best effort survive the round trip.
  SwitchConfig with = job.configs.begin()->second;
  with.capacity_gbps = 12.5;
  for (auto& [id, entry] : with.jobs) {
    if (entry.aggregate) entry.aggregate->best_effort = true;
  }
  auto back = ParseConfigJson(ConfigToJson(with));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->capacity_gbps, 12.5);
  EXPECT_EQ(ConfigToJson(*back), ConfigToJson(with));
  with.capacity_gbps = -1;
  EXPECT_THAT(ValidateConfig(with).message(), HasSubstr("capacity_gbps"));
  EXPECT_THAT(ParseConfigJson("{\"format\": \"grid-switch/1\", \"name\": \"s\", \"node_id\": 1, "
                              "\"ip\": \"10.0.0.1\", \"mac\": \"02:00:00:00:00:01\", "
                              "\"ports\": 1, \"capacity_gbps\": \"fast\"}")
                  .status()
                  .message(),
              HasSubstr("capacity_gbps"));
  SwitchConfig c = job.configs.begin()->second;
  c.num_ports = 0;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("ports must be >= 1"));
  // Two jobs with overlapping pools on an aggregating switch.
  auto agg = std::find_if(job.configs.begin(), job.configs.end(), [](const auto& kv) {
    return kv.second.jobs.at(7).aggregate.has_value();
  });
  ASSERT_NE(agg, job.configs.end());
  SwitchConfig two = agg->second;
  JobEntry other = two.jobs.at(7);
  other.job_id = 8;
  two.jobs[8] = other;
  EXPECT_THAT(ValidateConfig(two).message(), HasSubstr("overlap another pool"));
  // A best-effort plan's proxies (ATP's second level) survive the round
  // trip, and a proxy that does not stand for its owner is refused.
  Job atp = testing::MakeJob("testbed", "switchml", 8);
  atp.plan.best_effort = true;
  auto atp_configs = control::BuildSwitchConfigs(atp.topo, atp.plan, atp.params);
  ASSERT_TRUE(atp_configs.ok()) << atp_configs.status();
  SwitchConfig s1 = atp_configs->at(atp.node("S1"));
  ASSERT_EQ(s1.jobs.at(7).proxies.size(), 2u);
  auto s1_back = ParseConfigJson(ConfigToJson(s1));
  ASSERT_TRUE(s1_back.ok()) << s1_back.status();
  EXPECT_EQ(ConfigToJson(*s1_back), ConfigToJson(s1));
  SwitchConfig bad_proxy = s1;
  bad_proxy.jobs.at(7).proxies.begin()->second.root_node = s1.node_id;
  EXPECT_THAT(ValidateConfig(bad_proxy).message(), HasSubstr("stands for its owner"));
  bad_proxy = s1;
  bad_proxy.jobs.at(7).proxies.begin()->second.slot_base = 0;  // the job's own pool
  EXPECT_THAT(ValidateConfig(bad_proxy).message(), HasSubstr("overlap another pool"));
  bad_proxy = s1;
  bad_proxy.jobs.at(7).proxies.begin()->second.best_effort = false;
  EXPECT_THAT(ValidateConfig(bad_proxy).message(), HasSubstr("a proxy is best effort"));
  // A PS-side ToR without the slots for the proxies' pools is an error
  // that names the job and both switches (S2's pool fits here, S3's not).
  atp.params.slots = 4096 / 3 + 1;
  EXPECT_THAT(control::BuildSwitchConfigs(atp.topo, atp.plan, atp.params).status().message(),
              HasSubstr("switch \"S1\", proxy for \"S3\": its pool"));
  SwitchConfig members = agg->second;
  members.jobs.at(7).aggregate->fan_in += 1;
  EXPECT_THAT(ValidateConfig(members).message(), HasSubstr("fan_in"));
  EXPECT_THAT(ParseConfigJson("{\"format\": \"grid-switch/1\", \"name\": 3}").status().message(),
              HasSubstr("name: must be a string"));
  EXPECT_THAT(ParseConfigJson("[").status().message(), HasSubstr("switch config JSON"));
  EXPECT_EQ(*wire::ParseIp("10.0.1.2"), 0x0a000102u);
  EXPECT_FALSE(wire::ParseIp("10.0.1").ok());
  EXPECT_FALSE(wire::ParseIp("10.0.1.256").ok());
  EXPECT_EQ(wire::MacToString(*wire::ParseMac("02:00:00:00:01:0a")), "02:00:00:00:01:0a");
  EXPECT_FALSE(wire::ParseMac("02:00:00:00:01").ok());
}

TEST(SwitchConfig, P4Entries) {
  Job job = testing::MakeJob("testbed", "switchml", 8, 1, 256, wire::kDefaultElements);
  const SwitchConfig& s2 = job.configs.at(job.node("S2"));
  auto text = ConfigToP4Entries(s2);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("\"GridIngress.job\""));
  EXPECT_THAT(*text, HasSubstr("\"job_aggregate\""));
  size_t members = 0, replicas = 0;
  for (size_t at = 0; (at = text->find("\"set_member\"", at)) != std::string::npos; ++at) ++members;
  for (size_t at = 0; (at = text->find("\"set_replica\"", at)) != std::string::npos; ++at)
    ++replicas;
  EXPECT_EQ(members, 3u);
  EXPECT_EQ(replicas, 3u);
  // The P4 targets take 64-element packets and 32 members at most.
  Job small = testing::MakeJob("testbed", "switchml", 8, 1, 8, 4);
  EXPECT_THAT(ConfigToP4Entries(small.configs.at(small.node("S2"))).status().message(),
              HasSubstr("aggregate 64 elements per packet, not 4"));
  // ... and 1024 slots, and member bits 0-31.
  SwitchConfig big = s2;
  big.jobs.begin()->second.aggregate->slot_base = kP4MaxSlots - 10;
  EXPECT_THAT(ConfigToP4Entries(big).status().message(), HasSubstr("the P4 targets have 1024"));
  SwitchConfig high_bit = s2;
  high_bit.jobs.begin()->second.aggregate->members[0].bit = 40;
  EXPECT_THAT(ConfigToP4Entries(high_bit).status().message(), HasSubstr("bit 40"));
}

// The Tofino program orders a member's chunks in a copy by 11 bits of
// op_seq; 2P stream positions apart, op_seq has moved at most 2P, so the
// pool must stay under 512 (docs/switch.md, "Tofino").
TEST(SwitchConfig, P4EntriesRefuseAPoolTheTofinoTagCannotOrder) {
  Job job = testing::MakeJob("testbed", "switchml", 8, 1, kP4MaxPool, wire::kDefaultElements);
  EXPECT_TRUE(ConfigToP4Entries(job.configs.at(job.node("S2"))).ok());
  Job wide = testing::MakeJob("testbed", "switchml", 8, 1, kP4MaxPool + 1, wire::kDefaultElements);
  const absl::Status refused = ConfigToP4Entries(wide.configs.at(wide.node("S2"))).status();
  EXPECT_THAT(refused.message(), HasSubstr("switch \"S2\" job 7: a pool of 512 slots"));
  EXPECT_THAT(refused.message(), HasSubstr("at most 511"));
  // The software switch orders 32 bits of op_seq and takes the pool.
  EXPECT_TRUE(ValidateConfig(wide.configs.at(wide.node("S2"))).ok());
  // A job's own limit is named before the threshold its width would break:
  // a 1024-element frame (4172 bytes) is 14 cells of 320, and 50,000 frames
  // are beyond the programs' 19-bit threshold.
  Job wider = testing::MakeJob("testbed", "switchml", 8, 1, 8, 1024);
  SwitchConfig s2 = wider.configs.at(wider.node("S2"));
  s2.congestion_threshold = 50000;
  EXPECT_THAT(ConfigToP4Entries(s2, 320).status().message(),
              HasSubstr("aggregate 64 elements per packet, not 1024"));
}

// BMv2 counts queued packets; a Tofino counts cells. With a cell size the
// threshold becomes cells, each queued packet counted as the widest frame
// (332 bytes for 64 elements: 5 cells of 80 bytes, 3 of 128).
TEST(SwitchConfig, P4ThresholdsCountPacketsOrTofinoCells) {
  Job job = testing::MakeJob("testbed", "switchml", 8, 1, 256, wire::kDefaultElements);
  SwitchConfig s2 = job.configs.at(job.node("S2"));
  s2.congestion_threshold = 40;
  auto threshold = [](const absl::StatusOr<std::string>& text) -> int64_t {
    if (!text.ok()) return -1;
    const auto doc = nlohmann::json::parse(*text);
    for (const auto& e : doc["default_actions"]) {
      if (e["action"] == "set_egress_identity") return e["params"]["threshold"].get<int64_t>();
    }
    return -2;
  };
  EXPECT_EQ(threshold(ConfigToP4Entries(s2)), 40);
  EXPECT_EQ(threshold(ConfigToP4Entries(s2, 80)), 200);
  EXPECT_EQ(threshold(ConfigToP4Entries(s2, 128)), 120);
  EXPECT_EQ(threshold(ConfigToP4Entries(s2, 4096)), 40);  // a frame in one cell
  // Beyond the programs' 19-bit threshold: named, not truncated.
  s2.congestion_threshold = 200000;
  EXPECT_EQ(threshold(ConfigToP4Entries(s2)), 200000);
  auto too_deep = ConfigToP4Entries(s2, 80);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_THAT(too_deep.status().message(), HasSubstr("switch \"S2\""));
  EXPECT_THAT(too_deep.status().message(), HasSubstr("1000000 cells"));
}

TEST(SwitchConfig, BuiltFromAPlan) {
  Job job =
      testing::MakeJob("fattree:k=4,prog=random:0.5,cap=uniform:100:3200,seed=4", "grid-paths", 10);
  for (const planner::Aggregator& a : planner::Aggregators(job.plan)) {
    const SwitchConfig& c = job.configs.at(a.node);
    const auto& agg = *c.jobs.at(7).aggregate;
    ASSERT_EQ(agg.members.size(), a.members.size());
    for (size_t i = 0; i < a.members.size(); ++i) EXPECT_EQ(agg.members[i].rank, a.members[i]);
    EXPECT_EQ(agg.to_root_label, job.labels.to_root.at(a.node));
    EXPECT_EQ(agg.root_fan_in, job.root_fan_in);
  }
  // Every hop of every labelled path has a label route to the next hop.
  for (size_t l = 0; l < job.labels.paths.size(); ++l) {
    const auto& nodes = job.labels.paths[l].nodes;
    for (size_t i = 0; i + 1 < nodes.size(); ++i) {
      if (!job.topo.node(nodes[i]).is_switch()) continue;
      const auto& routes = job.configs.at(nodes[i]).label_routes;
      auto it = routes.find(static_cast<uint16_t>(l + 1));
      ASSERT_NE(it, routes.end());
      EXPECT_EQ(job.topo.neighbors(nodes[i])[it->second.port].node, nodes[i + 1]);
    }
  }
}

}  // namespace
}  // namespace grid::sw
