// The worker's loss rules (docs/worker.md, "Loss recovery"), one engine
// driven by hand on a clock the test moves: under random loss a chunk's
// round trip waits for every member, so the engine must not treat another
// rank's loss as its own. Each test fails on the TCP rule it replaces.
#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "worker/engine.h"
#include "worker/hand.h"

namespace grid {
namespace {

using testing::AnswerFromAggregator;
using testing::HandTransport;

constexpr size_t kChunks = 300;

// One rank's engine with one int32 operation of kChunks chunks submitted.
struct Rig {
  explicit Rig(EngineOptions o, size_t chunks = kChunks) : options(o) {
    config = testing::OneRankConfig(testing::ClusterOptions{});
    engine = std::make_unique<worker::Engine>(config, &transport, options);
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

}  // namespace
}  // namespace grid
