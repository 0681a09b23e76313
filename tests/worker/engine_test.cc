// The worker engine (lib/worker/engine.h), one engine driven by hand on a
// clock the test moves: its loss rules (docs/worker.md, "Loss recovery"),
// under which a chunk's round trip waits for every member, so the engine
// must not treat another rank's loss as its own (each test fails on the TCP
// rule it replaces); then its own checks of what comes back.
#include "worker/engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grid/numerics.h"
#include "gtest/gtest.h"
#include "support/hand.h"
#include "trace/recorder.h"

namespace grid {
namespace {

using testing::Answer;
using testing::AnswerFromAggregator;
using testing::HandTransport;

constexpr size_t kChunks = 300;

// One rank's engine with one int32 operation of kChunks chunks submitted.
struct Rig {
  explicit Rig(EngineOptions o, size_t chunks = kChunks, trace::Recorder* trace = nullptr)
      : options(o) {
    config = testing::OneRankConfig(testing::ClusterOptions{});
    engine = std::make_unique<worker::Engine>(config, &transport, options);
    engine->SetTrace(trace);
    in.assign(chunks * config.elements, 1);
    out.resize(in.size());
    op = std::make_shared<internal::OpState>();
    op->type = DataType::kInt32;
    op->send = in.data();
    op->recv = out.data();
    op->count = in.size();
    op->deadline = now + absl::Hours(1);
    uint32_t op_seq = 0;
    engine->Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq), now);
  }

  // Moves the clock by `step` and polls; returns what the engine sent.
  std::vector<std::vector<uint8_t>> Step(absl::Duration step) {
    now += step;
    transport.sent.clear();
    engine->Poll(now);
    return transport.sent;
  }

  static wire::Header HeaderOf(const std::vector<uint8_t>& frame) {
    return wire::DecodeFrame(frame)->header;
  }

  EngineOptions options;
  host_config::WorkerConfig config;
  HandTransport transport;
  std::unique_ptr<worker::Engine> engine;
  std::vector<int32_t> in, out;
  std::shared_ptr<internal::OpState> op;
  absl::Time now = absl::Now();
};

EngineOptions Options() {
  EngineOptions o;
  o.rto = absl::Milliseconds(10);
  o.min_rto = absl::Milliseconds(1);
  o.max_rto = absl::Milliseconds(500);
  o.scan_interval = absl::Milliseconds(1);
  o.initial_window = 16;
  return o;
}

// Only a config Communicator::Create refuses gets here: chunk headers the
// wire refuses (fan_in 0). The engine fails every operation, naming the
// header, after the first batch (a window of 100 fills batches of 32, so the
// batch flushes while chunks are still being queued), and stops there: what
// went out is zeroed frames, which switches drop.
TEST(Sending, HeadersTheWireRefusesFailEveryOperation) {
  host_config::WorkerConfig config = testing::OneRankConfig(testing::ClusterOptions{});
  config.fan_in = 0;
  EngineOptions o = Options();
  o.initial_window = 100;
  HandTransport transport;
  worker::Engine engine(config, &transport, o);
  std::vector<int32_t> in(kChunks * config.elements, 1), out(in.size());
  auto op = std::make_shared<internal::OpState>();
  op->type = DataType::kInt32;
  op->send = in.data();
  op->recv = out.data();
  op->count = in.size();
  const absl::Time now = absl::Now();
  op->deadline = now + absl::Hours(1);
  uint32_t op_seq = 0;
  engine.Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq), now);
  engine.Poll(now);
  ASSERT_TRUE(op->done);
  EXPECT_EQ(op->status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(op->status.message().find("chunk header"), std::string::npos) << op->status;
  EXPECT_FALSE(engine.failed().ok());
  EXPECT_EQ(transport.sent.size(), size_t{o.batch});
  for (const auto& f : transport.sent) {
    EXPECT_TRUE(std::all_of(f.begin(), f.end(), [](uint8_t b) { return b == 0; }));
  }
  engine.Poll(now + absl::Milliseconds(5));  // nothing left to send or scan
  EXPECT_EQ(transport.sent.size(), size_t{o.batch});
}

// RFC 6298 doubles the RTO on a timeout and TCP halves the window: here a
// timeout leaves the RTO alone and the window no smaller than it started.
TEST(LossRecovery, ATimeoutNeitherDoublesTheRtoNorHalvesTheWindowBelowItsStart) {
  Rig rig(Options());
  std::vector<std::vector<uint8_t>> first = rig.Step(absl::ZeroDuration());
  ASSERT_EQ(first.size(), 16u);
  // Every chunk but the first answered after 1 ms: slow start grows the window.
  for (size_t i = 1; i < first.size(); ++i) {
    rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, first[i]));
  }
  rig.Step(absl::Milliseconds(1));
  const uint32_t window = rig.engine->window();
  const absl::Duration rto = rig.engine->rto();
  ASSERT_GT(window, 16u);
  ASSERT_LT(rto, absl::Milliseconds(10));  // measured
  // Nothing more comes back: every chunk in flight times out.
  for (int i = 0; i < 12; ++i) rig.Step(absl::Milliseconds(1));
  ASSERT_GT(rig.engine->stats().retransmissions, 0u);
  EXPECT_EQ(rig.engine->rto(), rto);
  EXPECT_LT(rig.engine->window(), window);  // it halved ...
  EXPECT_GE(rig.engine->window(), 16u);     // ... but not below where it started
}

// A chunk that only waits for another rank's repair keeps being resent at
// most 8 RTOs apart while other chunks are answered, so its own lost result
// is asked for again soon; once nothing has been answered for 2 x max_rto
// (a path is down) it backs off further.
TEST(LossRecovery, AChunkWaitingForOthersBacksOffAtMostEightfoldWhileResultsFlow) {
  Rig rig(Options());
  std::vector<absl::Time> resends;  // of chunk 0, never answered
  absl::Time last_result = rig.now;
  std::vector<std::vector<uint8_t>> sent = rig.Step(absl::ZeroDuration());
  const absl::Time start = rig.now;
  while (rig.now - start < absl::Seconds(3)) {
    for (const auto& frame : sent) {
      const wire::Header h = Rig::HeaderOf(frame);
      if (h.chunk == 0) {
        if (h.flags & wire::flags::kRetransmit) resends.push_back(rig.now);
      } else if (!(h.flags & wire::flags::kRetransmit)) {
        rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, frame));
        last_result = rig.now + absl::Milliseconds(1);
      }
    }
    sent = rig.Step(absl::Milliseconds(1));
  }
  const absl::Duration rto = rig.engine->rto();
  const absl::Duration cap = 8 * rto + 2 * rig.options.scan_interval;
  const absl::Time silent_from = last_result + 2 * rig.options.max_rto;
  ASSERT_GE(resends.size(), 10u);
  absl::Duration widest_flowing = absl::ZeroDuration(), widest_silent = absl::ZeroDuration();
  for (size_t i = 1; i < resends.size(); ++i) {
    const absl::Duration gap = resends[i] - resends[i - 1];
    if (resends[i] <= silent_from) {
      widest_flowing = std::max(widest_flowing, gap);
    } else {
      widest_silent = std::max(widest_silent, gap);
    }
  }
  EXPECT_LE(widest_flowing, cap) << "RTO " << rto;
  EXPECT_GT(widest_silent, cap) << "RTO " << rto;
}

// Karn's rule, for the whole chunk: a result whose chunk any rank sent again
// (RETRANSMIT, kept by the switches and the root) measures that rank's
// repair, not the network, and is not sampled even on this rank's first send.
TEST(LossRecovery, ARoundTripWithAnyRanksResendIsNotSampled) {
  EngineOptions o = Options();
  o.rto = absl::Milliseconds(200);
  Rig rig(o);
  std::vector<std::vector<uint8_t>> first = rig.Step(absl::ZeroDuration());
  ASSERT_GE(first.size(), 2u);
  rig.transport.inbox.push_back(
      AnswerFromAggregator(rig.config, first[0], wire::flags::kRetransmit));
  rig.Step(absl::Milliseconds(50));
  EXPECT_EQ(rig.engine->rto(), absl::Milliseconds(200));
  rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, first[1]));
  rig.Step(absl::ZeroDuration());
  EXPECT_EQ(rig.engine->rto(), absl::Milliseconds(150));  // srtt 50 + 4 x rttvar 25
}

// A queue the RTT estimate cannot see: every result carries another rank's
// RETRANSMIT, so Karn's rule samples none and the RTO stays at its first
// 10 ms, while results come back 4 per ms in order and up to 64 chunks wait,
// 16 ms deep. The RTO follows the queue (in flight / result rate), so a
// chunk whose result is on its way is not sent again.
TEST(LossRecovery, AChunkQueuedBehindTheWindowIsNotSentAgain) {
  Rig rig(Options(), 20000);
  std::deque<std::vector<uint8_t>> queue;
  int first_sends = 0, resends = 0;
  std::vector<std::vector<uint8_t>> sent = rig.Step(absl::ZeroDuration());
  for (int ms = 0; ms < 500; ++ms) {
    for (auto& frame : sent) {
      if (Rig::HeaderOf(frame).flags & wire::flags::kRetransmit) {
        ++resends;
      } else {
        ++first_sends;
        queue.push_back(std::move(frame));
      }
    }
    for (int i = 0; i < 4 && !queue.empty(); ++i) {
      rig.transport.inbox.push_back(
          AnswerFromAggregator(rig.config, queue.front(), wire::flags::kRetransmit));
      queue.pop_front();
    }
    sent = rig.Step(absl::Milliseconds(1));
  }
  ASSERT_GE(first_sends, 1500);
  EXPECT_LE(resends, first_sends / 200) << first_sends << " first sends";
}

// Loss by order (RACK): chunk 3 is lost while the chunks sent after it are
// answered. It is sent again within a round trip and a reordering window,
// long before its 200 ms timeout, which is all an RTO rule would have; and
// nothing else is sent again.
TEST(LossRecovery, AChunkLostAmongAnsweredOnesIsResentByOrder) {
  EngineOptions o = Options();
  o.rto = absl::Milliseconds(200);
  o.min_rto = absl::Milliseconds(200);
  Rig rig(o);
  std::vector<std::vector<uint8_t>> sent = rig.Step(absl::ZeroDuration());
  ASSERT_EQ(sent.size(), 16u);
  int resends_of_3 = 0, other_resends = 0;
  absl::Time resent_at = absl::InfinitePast();
  const absl::Time start = rig.now;
  for (int ms = 0; ms < 20; ++ms) {
    for (const auto& frame : sent) {
      const wire::Header h = Rig::HeaderOf(frame);
      const bool resend = (h.flags & wire::flags::kRetransmit) != 0;
      if (h.chunk == 3 && resend) {
        ++resends_of_3;
        resent_at = rig.now;
      } else if (resend) {
        ++other_resends;
      }
      if (h.chunk != 3 || resend) {
        rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, frame));
      }
    }
    sent = rig.Step(absl::Milliseconds(1));
  }
  EXPECT_EQ(resends_of_3, 1);
  EXPECT_LE(resent_at - start, absl::Milliseconds(5));
  EXPECT_EQ(other_resends, 0);
  EXPECT_EQ(rig.engine->stats().early_retransmissions, 1u);
}

// A stall (no result for an RTO) resends only its oldest chunk, as a probe.
// Here the other ranks start 300 ms late: the probe backs off, and when they
// start, every result comes back and nothing more is sent. Resending the
// whole window on every timeout sent 16 chunks per backoff step.
TEST(LossRecovery, AStallResendsOnlyItsOldestChunk) {
  Rig rig(Options());
  std::vector<std::vector<uint8_t>> sent = rig.Step(absl::ZeroDuration());
  ASSERT_EQ(sent.size(), 16u);
  const std::vector<std::vector<uint8_t>> first_sends = std::move(sent);
  sent.clear();
  uint64_t probes = 0;
  for (int ms = 0; ms < 300; ++ms) {
    for (const auto& frame : sent) {
      const wire::Header h = Rig::HeaderOf(frame);
      ASSERT_TRUE(h.flags & wire::flags::kRetransmit);
      EXPECT_EQ(h.chunk, 0u) << "only the oldest chunk probes a stall";
      ++probes;
    }
    sent = rig.Step(absl::Milliseconds(1));
  }
  EXPECT_GE(probes, 2u);
  EXPECT_LE(probes, 6u);  // 10, 20, 40, 80, 160 ms apart
  // The late ranks arrive: the first sends are answered, in order.
  for (const auto& frame : first_sends) {
    rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, frame));
  }
  const uint64_t before = rig.engine->stats().retransmissions;
  for (int ms = 0; ms < 20; ++ms) {
    for (const auto& frame : rig.Step(absl::Milliseconds(1))) {
      rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, frame));
    }
  }
  EXPECT_EQ(rig.engine->stats().retransmissions, before);
}

// A lost tail: the last 4 chunks of a window vanish and nothing is sent
// after them. The stall's probe (the oldest of them) comes back alone, and
// the other 3 follow a reordering window later, not one timeout each.
TEST(LossRecovery, AStallProbeAnsweredAloneResendsTheRestOfTheTail) {
  EngineOptions o = Options();
  Rig rig(o, 16);  // one window: nothing is sent after the tail
  std::vector<std::vector<uint8_t>> sent = rig.Step(absl::ZeroDuration());
  ASSERT_EQ(sent.size(), 16u);
  for (size_t i = 0; i < 12; ++i) {
    rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, sent[i]));
  }
  sent = rig.Step(absl::Milliseconds(1));
  ASSERT_TRUE(sent.empty());
  absl::Time probe_at = absl::InfinitePast(), rest_at = absl::InfinitePast();
  int resent = 0;
  for (int ms = 0; ms < 100 && resent < 4; ++ms) {
    for (const auto& frame : sent) {
      const wire::Header h = Rig::HeaderOf(frame);
      ASSERT_TRUE(h.flags & wire::flags::kRetransmit);
      ++resent;
      if (h.chunk == 12) {
        probe_at = rig.now;
        rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, frame));
      } else {
        EXPECT_GT(h.chunk, 12u);
        rest_at = rig.now;
      }
    }
    sent = rig.Step(absl::Milliseconds(1));
  }
  ASSERT_EQ(resent, 4);
  EXPECT_GT(rest_at, probe_at);
  EXPECT_LE(rest_at - probe_at, absl::Milliseconds(4));
}

// Answers every first send at once, one step of 1 ms later, marking one
// answer in `mark_every` CONGESTION; returns the window after each step.
std::vector<uint32_t> RunMarked(Rig& rig, int mark_every, absl::Duration how_long) {
  std::vector<uint32_t> windows;
  std::vector<std::vector<uint8_t>> sent = rig.Step(absl::ZeroDuration());
  int answered = 0;
  for (absl::Time end = rig.now + how_long; rig.now < end;) {
    for (const auto& frame : sent) {
      if (Rig::HeaderOf(frame).flags & wire::flags::kRetransmit) continue;
      const bool mark = ++answered % mark_every == 0;
      rig.transport.inbox.push_back(
          AnswerFromAggregator(rig.config, frame, mark ? wire::flags::kCongestion : 0));
    }
    sent = rig.Step(absl::Milliseconds(1));
    windows.push_back(rig.engine->window());
  }
  return windows;
}

// DCTCP: with 5% of results marked, the window settles where a window's
// growth (+1) meets its decrease (cwnd * alpha / 2), about 2 / 0.05 = 40
// chunks. Halving on every mark, once per RTO, held it at a few chunks.
TEST(Congestion, AFewMarksShrinkTheWindowByTheirShareNotByHalf) {
  Rig rig(Options(), 200000);
  const std::vector<uint32_t> windows = RunMarked(rig, 20, absl::Seconds(1));
  ASSERT_GE(windows.size(), 1000u);
  const uint32_t low = *std::min_element(windows.begin() + windows.size() / 2, windows.end());
  EXPECT_GE(low, 24u);
  EXPECT_NEAR(rig.engine->marked_fraction(), 0.05, 0.02);
}

// Every result marked: the average goes to 1, and each window halves.
TEST(Congestion, EveryResultMarkedHalvesTheWindowEachWindow) {
  Rig rig(Options(), 20000);
  const std::vector<uint32_t> windows = RunMarked(rig, 1, absl::Milliseconds(50));
  EXPECT_EQ(windows.back(), 1u);
  EXPECT_GT(rig.engine->marked_fraction(), 0.9);
}

// The worker's own checks, one at a time, on a rank of the testbed's job
// as the adversarial tests run it (tests/security/adversarial_test.cc).
testing::ClusterOptions CheckCluster() {
  testing::ClusterOptions o;
  o.workers = 7;
  o.planner = "switchml";
  o.slots = 16;
  return o;
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
  engine.Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq), absl::Now());
  engine.Poll(absl::Now());
  return op;
}

// A float16 operation's results promise an exponent no float16 can have:

// the operation fails, naming the chunk, instead of returning garbage.

TEST(WorkerChecks, ExponentsBeyondTheTypeFailTheOperation) {
  const host_config::WorkerConfig config = testing::OneRankConfig(CheckCluster());
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
  const host_config::WorkerConfig config = testing::OneRankConfig(CheckCluster());
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
  const host_config::WorkerConfig config = testing::OneRankConfig(CheckCluster());
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
  const host_config::WorkerConfig config = testing::OneRankConfig(CheckCluster());
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
    engine.Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq), absl::Now());
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
  const host_config::WorkerConfig config = testing::OneRankConfig(CheckCluster());
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
  engine.Submit(testing::Prepared({op}, config.elements, config.slots, 0, op_seq), absl::Now());
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
  const host_config::WorkerConfig config = testing::OneRankConfig(CheckCluster());
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

// Results count only from the aggregation node, through the first hop.

TEST(WorkerChecks, ResultsFromElsewhereAreForeign) {
  const host_config::WorkerConfig config = testing::OneRankConfig(CheckCluster());
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

}  // namespace
}  // namespace grid

namespace grid {
namespace {

// GRID_TRACE's timeline of a lane (docs/observability.md): the operation as
// an async slice, what stopped the lane from sending as slices named as
// grid-report reads them, and each resend with its reason.
TEST(Tracing, RecordsTheOperationItsWaitsAndItsResends) {
  trace::Recorder trace(4096);
  EngineOptions o = Options();
  o.window = 4;
  o.initial_window = 4;
  Rig rig(o, 8, &trace);
  std::vector<std::vector<uint8_t>> first = rig.Step(absl::ZeroDuration());
  ASSERT_EQ(first.size(), 4u);
  // Nothing comes back for two RTOs: the stream stalled, and its oldest
  // chunk is probed.
  for (int i = 0; i < 25; ++i) rig.Step(absl::Milliseconds(1));
  ASSERT_GT(rig.engine->stats().retransmissions, 0u);
  // Then the first chunks are answered, and every chunk after them as it is
  // sent, to the end of the operation.
  for (const auto& f : first) rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, f));
  for (int round = 0; round < 20 && !rig.engine->Idle(); ++round) {
    for (const auto& f : rig.Step(absl::Microseconds(100))) {
      rig.transport.inbox.push_back(AnswerFromAggregator(rig.config, f));
    }
  }
  ASSERT_TRUE(rig.engine->Idle());
  rig.Step(absl::Milliseconds(1));  // the lane's last wait ends
  std::map<std::string, int> count;
  int open = 0;
  for (const trace::Event& e : trace.Events()) {
    const std::string name = e.name;
    ++count[absl::StrCat(std::string(1, static_cast<char>(e.phase)), " ", name)];
    if (e.phase == trace::Phase::kBegin) ++open;
    if (e.phase == trace::Phase::kEnd) --open;
    ASSERT_GE(open, 0) << name;
    ASSERT_LE(open, 1) << name;  // one wait at a time
  }
  EXPECT_EQ(open, 0);
  EXPECT_EQ(count["b allreduce"], 1);
  EXPECT_EQ(count["e allreduce"], 1);
  EXPECT_GE(count["B window full"], 1);
  EXPECT_GE(count["B results wait"], 1);
  EXPECT_GE(count["i stall probe"], 1);
  EXPECT_GE(count["i window cut (loss)"], 1);
  EXPECT_GE(count["C chunks"], 1);
  EXPECT_EQ(trace.dropped(), 0u);
}

}  // namespace
}  // namespace grid
