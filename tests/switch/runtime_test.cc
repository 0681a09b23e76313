// The switch runtime (lib/switch/runtime.h): what happens between a port and
// the pipeline, on a virtual clock: faults, queues, rate limits, the
// aggregation capacity, back-pressure and the queue depths the pipeline
// marks CONGESTION from. Frames are pooled buffers (switch/frame_pool.h), as
// grid-switch's UDP ports have them.
#include "switch/runtime.h"

#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "fabric.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "switch/counter_fields.h"
#include "switch/frame_pool.h"
#include "switch/metrics.h"

namespace grid::sw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Buffer = FramePool::Buffer;

// The testbed with SwitchML's plan, seen from S2, which aggregates ranks
// 2, 3 and 6 and forwards other traffic by address.
class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_ = testing::MakeJob("testbed", "switchml", 8);
    s2_ = job_.node("S2");
    in_ = job_.PortTo(s2_, job_.plan.job.workers[2]);
    out_ = job_.PortTo(s2_, job_.plan.job.workers[3]);
  }

  std::unique_ptr<SwitchRuntime<PoolOps>> Make(std::vector<PortShaping> shaping,
                                               SwitchConfig config) {
    auto p = Pipeline::Create(config);
    EXPECT_TRUE(p.ok()) << p.status();
    return std::make_unique<SwitchRuntime<PoolOps>>(*std::move(p), shaping, 1, PoolOps{&pool_});
  }
  std::unique_ptr<SwitchRuntime<PoolOps>> Make(std::vector<PortShaping> shaping = {}) {
    return Make(std::move(shaping), job_.configs.at(s2_));
  }

  // A plain UDP packet from W3 to W4 (forwarded by address, in place), its
  // last byte `tag`.
  std::vector<uint8_t> Other(uint8_t tag) const {
    std::vector<uint8_t> f = testing::OtherFrame(job_, 2, 3);
    f.back() = tag;
    return f;
  }

  void Feed(SwitchRuntime<PoolOps>& rt, const std::vector<uint8_t>& bytes, uint16_t port) {
    std::optional<Buffer*> b = rt.ops().Make(bytes);
    ASSERT_TRUE(b.has_value());
    rt.Handle(*b, port);
  }

  // Sends what `rt` lets out at `now_ns`, taking at most `room` frames a
  // call; records each port's frames (their last byte) and frees them.
  size_t Flush(SwitchRuntime<PoolOps>& rt, int64_t now_ns, size_t room = 1000) {
    return rt.Flush(now_ns, [&](uint16_t port, absl::Span<Buffer*> frames) {
      const size_t n = std::min(room, frames.size());
      for (size_t i = 0; i < n; ++i) {
        sent_[port].push_back(frames[i]->back());
        bytes_[port].push_back(*frames[i]);
        pool_.Free(frames[i]);
      }
      return n;
    });
  }

  testing::Job job_;
  topology::NodeId s2_ = 0;
  uint16_t in_ = 0, out_ = 0;
  FramePool pool_{4096};
  std::map<uint16_t, std::vector<int>> sent_;
  std::map<uint16_t, std::vector<std::vector<uint8_t>>> bytes_;
};

TEST_F(RuntimeTest, ForwardsInPlaceAndReturnsEveryBuffer) {
  auto rt = Make();
  for (uint8_t t = 0; t < 5; ++t) Feed(*rt, Other(t), in_);
  EXPECT_EQ(Flush(*rt, 0), 5u);
  EXPECT_THAT(sent_[out_], ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(pool_.available(), pool_.size());
  EXPECT_EQ(rt->pipeline().counters().other_forwarded, 5u);
  EXPECT_FALSE(rt->Backlog());
}

TEST_F(RuntimeTest, BuiltFramesComeFromThePoolAndFailedAllocationsAreCounted) {
  // Three members' DATA complete a chunk: S2 builds the partial.
  auto rt = Make();
  Feed(*rt, testing::DataFrame(job_, 2, 1, 0, {1, 2, 3, 4}), in_);
  Feed(*rt, testing::DataFrame(job_, 3, 1, 0, {1, 2, 3, 4}),
       job_.PortTo(s2_, job_.plan.job.workers[3]));
  Feed(*rt, testing::DataFrame(job_, 6, 1, 0, {1, 2, 3, 4}),
       job_.PortTo(s2_, job_.plan.job.workers[6]));
  Flush(*rt, 0);
  const uint16_t root = job_.PortTo(s2_, job_.node("S1"));
  ASSERT_EQ(bytes_[root].size(), 1u);
  EXPECT_EQ(wire::DecodeFrame(bytes_[root][0])->header.type, wire::MessageType::kPartial);
  EXPECT_EQ(pool_.available(), pool_.size());
  // With the pool empty, the next partial has nowhere to go: a queue drop.
  std::vector<Buffer*> taken;
  Feed(*rt, testing::DataFrame(job_, 2, 1, 1, {1, 2, 3, 4}), in_);
  Feed(*rt, testing::DataFrame(job_, 3, 1, 1, {1, 2, 3, 4}),
       job_.PortTo(s2_, job_.plan.job.workers[3]));
  std::optional<Buffer*> last = rt->ops().Make(testing::DataFrame(job_, 6, 1, 1, {1, 2, 3, 4}));
  while (Buffer* b = pool_.Alloc()) taken.push_back(b);
  rt->Handle(*last, job_.PortTo(s2_, job_.plan.job.workers[6]));
  EXPECT_EQ(rt->drops().queue, 1u);
  for (Buffer* b : taken) pool_.Free(b);
  EXPECT_EQ(pool_.available(), pool_.size());
}

TEST_F(RuntimeTest, ARateLimitSendsWhatTheTimeAllows) {
  // 1 Gbps is a bit per ns: a frame of B bytes every 8B ns, after the
  // bucket's burst.
  std::vector<PortShaping> shaping(job_.configs.at(s2_).num_ports);
  shaping[out_].gbps = 1;
  auto rt = Make(shaping);
  const size_t bytes = Other(0).size();
  const size_t burst = static_cast<size_t>(RuntimeTunables::kBucketBurstBits / (8.0 * bytes));
  const int frames = static_cast<int>(burst) + 100;
  for (int t = 0; t < frames; ++t) Feed(*rt, Other(static_cast<uint8_t>(t)), in_);
  size_t sent = 0;
  while (Flush(*rt, 0) > 0) sent = sent_[out_].size();
  EXPECT_EQ(sent, burst);
  EXPECT_TRUE(rt->Backlog());
  EXPECT_EQ(rt->depth(out_), frames - burst);
  // 10 frames' worth of time later, 10 more.
  Flush(*rt, static_cast<int64_t>(10 * 8 * bytes));
  EXPECT_EQ(sent_[out_].size(), burst + 10);
  // The order is kept throughout.
  for (size_t i = 0; i < sent_[out_].size(); ++i) EXPECT_EQ(sent_[out_][i], i % 256);
}

TEST_F(RuntimeTest, TheQueueDepthMarksCongestion) {
  SwitchConfig config = job_.configs.at(s2_);
  config.congestion_threshold = 4;
  auto rt = Make({}, config);
  const uint16_t root = job_.PortTo(s2_, job_.node("S1"));
  // The port toward the root takes nothing: its queue grows a partial per
  // chunk, and each Flush tells the pipeline the depth.
  for (uint32_t chunk = 0; chunk < 8; ++chunk) {
    for (int rank : {2, 3, 6}) {
      Feed(*rt, testing::DataFrame(job_, rank, 1, chunk, {1, 2, 3, 4}),
           job_.PortTo(s2_, job_.plan.job.workers[rank]));
    }
    Flush(*rt, 0, 0);
  }
  EXPECT_EQ(rt->depth(root), 8u);
  Flush(*rt, 0);
  ASSERT_EQ(bytes_[root].size(), 8u);
  // A partial built behind more than 4 queued carries CONGESTION.
  for (uint32_t chunk = 0; chunk < 8; ++chunk) {
    const wire::Header h = wire::DecodeFrame(bytes_[root][chunk])->header;
    EXPECT_EQ(h.chunk, chunk);
    EXPECT_EQ((h.flags & wire::flags::kCongestion) != 0, chunk > 4) << "chunk " << chunk;
  }
  EXPECT_EQ(rt->depth(root), 0u);
  EXPECT_EQ(pool_.available(), pool_.size());
}

TEST_F(RuntimeTest, FaultsAreTheLinksAndAHeldFrameIsNeverStranded) {
  std::vector<PortShaping> shaping(job_.configs.at(s2_).num_ports);
  shaping[out_].faults.reorder = 1;
  auto rt = Make(shaping);
  for (uint8_t t = 0; t < 5; ++t) Feed(*rt, Other(t), in_);
  Flush(*rt, 0);
  EXPECT_THAT(sent_[out_], ElementsAre(1, 0, 3, 2));
  EXPECT_TRUE(rt->Backlog());  // frame 4 is held
  Flush(*rt, 0);               // nothing follows it: it goes
  EXPECT_THAT(sent_[out_], ElementsAre(1, 0, 3, 2, 4));
  EXPECT_FALSE(rt->Backlog());

  shaping[out_].faults = {.loss = 1};
  auto lossy = Make(shaping);
  for (uint8_t t = 0; t < 5; ++t) Feed(*lossy, Other(t), in_);
  Flush(*lossy, 0);
  EXPECT_EQ(lossy->drops().impaired, 5u);
  shaping[out_].faults = {.duplicate = 1};
  auto dup = Make(shaping);
  sent_.clear();
  for (uint8_t t = 0; t < 3; ++t) Feed(*dup, Other(t), in_);
  Flush(*dup, 0);
  EXPECT_THAT(sent_[out_], ElementsAre(0, 0, 1, 1, 2, 2));
  EXPECT_EQ(pool_.available(), pool_.size());
}

TEST_F(RuntimeTest, WhatAPortRefusesWaitsInOrderAndAFullQueueDrops) {
  auto rt = Make();
  for (uint8_t t = 0; t < 10; ++t) Feed(*rt, Other(t), in_);
  EXPECT_EQ(Flush(*rt, 0, 3), 3u);
  EXPECT_EQ(rt->depth(out_), 7u);
  EXPECT_EQ(Flush(*rt, 0, 0), 0u);
  EXPECT_EQ(Flush(*rt, 0), 7u);
  EXPECT_THAT(sent_[out_], ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
  // Beyond kQueueFrames, frames are dropped and counted.
  const size_t over = RuntimeTunables::kQueueFrames + 5;
  for (size_t t = 0; t < over; ++t) Feed(*rt, Other(static_cast<uint8_t>(t)), in_);
  EXPECT_EQ(rt->depth(out_), RuntimeTunables::kQueueFrames);
  EXPECT_EQ(rt->drops().queue, 5u);
  rt->Drain();
  EXPECT_EQ(pool_.available(), pool_.size());
}

TEST_F(RuntimeTest, TheCapacityIsGrantedAsTheGivenTimePasses) {
  SwitchConfig config = job_.configs.at(s2_);
  config.capacity_gbps = 1;  // a bit per ns
  auto rt = Make({}, config);
  const uint16_t root = job_.PortTo(s2_, job_.node("S1"));
  auto member_port = [&](int rank) { return job_.PortTo(s2_, job_.plan.job.workers[rank]); };
  // No time passes: chunks complete until the starting burst is spent.
  rt->Tick(1000);
  uint32_t stuck = 0;
  for (uint32_t chunk = 0; chunk < 100000 && stuck == 0; ++chunk) {
    const size_t before = bytes_[root].size();
    for (int r : {2, 3, 6})
      Feed(*rt, testing::DataFrame(job_, r, 1, chunk, {1, 1, 1, 1}), member_port(r));
    Flush(*rt, 1000);
    if (bytes_[root].size() == before) stuck = chunk;
  }
  ASSERT_GT(stuck, 0u);
  EXPECT_GT(rt->pipeline().counters().drops[static_cast<int>(Drop::kOverCapacity)], 0u);
  // Three frames' time later (given twice: the same time adds nothing
  // more), the stuck chunk's retransmissions are aggregated.
  const double frame_bits = 8.0 * wire::FrameBytes(4);
  const auto later = static_cast<int64_t>(1000 + 3 * frame_bits);
  rt->Tick(later);
  rt->Tick(later);
  for (int r : {2, 3, 6}) {
    Feed(*rt, testing::DataFrame(job_, r, 1, stuck, {1, 1, 1, 1}, wire::flags::kRetransmit),
         member_port(r));
  }
  const size_t before = bytes_[root].size();
  Flush(*rt, later);
  ASSERT_EQ(bytes_[root].size(), before + 1);
  EXPECT_EQ(wire::DecodeFrame(bytes_[root].back())->header.chunk, stuck);
  // Another chunk at the same time finds no credit.
  for (int r : {2, 3, 6}) {
    Feed(*rt, testing::DataFrame(job_, r, 1, stuck + 1, {1, 1, 1, 1}), member_port(r));
  }
  Flush(*rt, later);
  EXPECT_EQ(bytes_[root].size(), before + 1);
  rt->Drain();
  EXPECT_EQ(pool_.available(), pool_.size());
}

TEST(Runtime, OwnerLaneIsTheSlotModLanesForGridAndLaneZeroElse) {
  testing::Job job = testing::MakeJob("testbed", "switchml", 8, 1, 16);
  for (uint32_t chunk = 0; chunk < 16; ++chunk) {
    const std::vector<uint8_t> f = testing::DataFrame(job, 2, 1, chunk, {1, 2, 3, 4});
    EXPECT_EQ(OwnerLane(f, 3), chunk % 3);
    EXPECT_EQ(OwnerLane(f, 1), 0u);
  }
  std::vector<uint8_t> other = testing::DataFrame(job, 2, 1, 5, {1, 2, 3, 4});
  const uint16_t dns = wire::HostToNet16(53);
  std::memcpy(other.data() + wire::kUdpOffset + 2, &dns, 2);
  EXPECT_EQ(OwnerLane(other, 3), 0u);
  EXPECT_EQ(OwnerLane(absl::MakeConstSpan(other).first(20), 3), 0u);
}

TEST(Runtime, PortShapingNamesTheKeyAtFault) {
  auto s = ParsePortShaping("2:loss=0.5,gbps=10,reorder=0.1");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->first, 2);
  EXPECT_EQ(s->second.faults.loss, 0.5);
  EXPECT_EQ(s->second.faults.reorder, 0.1);
  EXPECT_EQ(s->second.gbps, 10);
  EXPECT_THAT(ParsePortShaping("x:loss=1").status().message(), HasSubstr("PORT:"));
  EXPECT_THAT(ParsePortShaping("0:gbps=-1").status().message(), HasSubstr("gbps"));
  EXPECT_THAT(ParsePortShaping("0:loss=7").status().message(), HasSubstr("loss"));
  EXPECT_THAT(ParsePortShaping("0:fast=1").status().message(), HasSubstr("unknown key \"fast\""));
  EXPECT_EQ(CapacityShare(100, -1, 0.5, 2), 25);
  EXPECT_EQ(CapacityShare(100, 40, 1, 4), 10);
}

}  // namespace
// Each per-job counter, by the one table of their names, in every view:
// the sum over lcores, the JSON and the Prometheus text.
TEST(Counters, EveryJobCounterInEveryView) {
  Counters c;
  uint64_t v = 0;
  for (const JobCounterField& f : kJobCounterFields) c.jobs[7].*f.member = ++v;
  c.drops[static_cast<int>(Drop::kStale)] = 5;
  c.ports.resize(2);
  c.ports[1].tx_bytes = 999;
  Counters twice = c;
  twice.Add(c);
  const std::string json = CountersToJson(c);
  const std::string text =
      CountersToPrometheus("S1", twice, {node::JobDrops{7, 9, {0, 0, 0, 0, 0, 4}}});
  v = 0;
  for (const JobCounterField& f : kJobCounterFields) {
    ++v;
    EXPECT_EQ(twice.jobs[7].*f.member, 2 * v) << f.name;
    EXPECT_THAT(json, ::testing::HasSubstr(absl::StrFormat("\"%s\":%d", f.name, v)));
    EXPECT_THAT(text,
                ::testing::HasSubstr(absl::StrFormat(
                    "grid_switch_job_%s_total{switch=\"S1\",job=\"7\"} %d\n", f.name, 2 * v)));
  }
  EXPECT_THAT(text,
              ::testing::HasSubstr("grid_switch_drops_total{switch=\"S1\",reason=\"stale\"} 10\n"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "grid_switch_port_tx_bytes_total{switch=\"S1\",port=\"1\"} 1998\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("grid_switch_job_drops_total{switch=\"S1\",job=\"7\","
                                         "token=\"9\",reason=\"stale\"} 4\n"));
}

}  // namespace grid::sw
