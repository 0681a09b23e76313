// The one fault applier (transport/faults.h) and ImpairedTransport, the
// transports' wrapper around it: what each fault does to the order of
// frames, and that back-pressure reaches the caller.
#include "transport/faults.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "grid/transport.h"
#include "gtest/gtest.h"
#include "transport/impaired.h"

namespace grid::transport {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Frames are numbers here: what went out, in order.
std::vector<int> Through(const LinkFaults& faults, int frames, bool release = true) {
  FaultApplier<int> link(faults);
  std::vector<int> out;
  auto emit = [&](int f) { out.push_back(f); };
  for (int f = 0; f < frames; ++f) {
    link.Apply(f, [](const int& x) { return std::optional<int>(x); }, [](int) {}, emit);
  }
  if (release) link.Release(emit);
  return out;
}

TEST(FaultApplier, WithoutFaultsEveryFrameGoesOnceInOrder) {
  std::vector<int> want(100);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(Through({}, 100), want);
}

TEST(FaultApplier, LossDropsDuplicationCopiesInPlace) {
  EXPECT_TRUE(Through({.loss = 1}, 10).empty());
  EXPECT_THAT(Through({.duplicate = 1}, 3), ElementsAre(0, 0, 1, 1, 2, 2));
}

TEST(FaultApplier, AHeldFrameGoesRightBehindTheNextOne) {
  // Every copy that can be held is: the link holds one at a time, so frames
  // swap in pairs.
  EXPECT_THAT(Through({.reorder = 1}, 6), ElementsAre(1, 0, 3, 2, 5, 4));
  // The last one is held until the link releases it: nothing strands it.
  EXPECT_THAT(Through({.reorder = 1}, 3, false), ElementsAre(1, 0));
  EXPECT_THAT(Through({.reorder = 1}, 3, true), ElementsAre(1, 0, 2));
}

TEST(FaultApplier, EveryFrameArrivesExactlyAsOftenAsTheDrawsSay) {
  const LinkFaults faults{.loss = 0.1, .duplicate = 0.1, .reorder = 0.2, .seed = 42};
  FaultApplier<int> link(faults);
  std::vector<int> out;
  std::vector<int> lost;
  auto emit = [&](int f) { out.push_back(f); };
  for (int f = 0; f < 10000; ++f) {
    link.Apply(f, [](const int& x) { return std::optional<int>(x); },
               [&](int x) { lost.push_back(x); }, emit);
  }
  link.Release(emit);
  const FaultInjector& d = link.injector();
  EXPECT_EQ(lost.size(), d.lost());
  EXPECT_EQ(out.size(), 10000 - d.lost() + d.duplicated());
  EXPECT_GT(d.reordered(), 1000u);
  // A frame overtakes at most one other: no frame is more than two places
  // from where it was sent, counting its duplicate.
  int out_of_order = 0;
  for (size_t i = 1; i < out.size(); ++i) out_of_order += out[i] < out[i - 1];
  EXPECT_GT(out_of_order, 1000);
  std::vector<int> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  EXPECT_EQ(sorted.size() + lost.size(), 10000u);
  // The same seed draws the same fates.
  FaultApplier<int> again(faults);
  std::vector<int> out2;
  for (int f = 0; f < 10000; ++f) {
    again.Apply(f, [](const int& x) { return std::optional<int>(x); }, [](int) {},
                [&](int x) { out2.push_back(x); });
  }
  again.Release([&](int x) { out2.push_back(x); });
  EXPECT_EQ(out, out2);
}

TEST(FaultApplier, ADuplicateThatCannotBeMadeIsNotSent) {
  FaultApplier<int> link({.duplicate = 1});
  std::vector<int> out;
  link.Apply(7, [](const int&) { return std::optional<int>(); }, [](int) {},
             [&](int x) { out.push_back(x); });
  EXPECT_THAT(out, ElementsAre(7));
}

TEST(LinkFaults, ParseASpecOrNameTheKeyAtFault) {
  auto f = ParseLinkFaults("loss=0.25,dup=0.5,reorder=1,seed=9");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->loss, 0.25);
  EXPECT_EQ(f->duplicate, 0.5);
  EXPECT_EQ(f->reorder, 1);
  EXPECT_EQ(f->seed, 9u);
  EXPECT_THAT(ParseLinkFaults("loss=2").status().message(), HasSubstr("loss"));
  EXPECT_THAT(ParseLinkFaults("foo=1").status().message(), HasSubstr("\"foo=1\""));
  EXPECT_THAT(ParseLinkFaults("loss").status().message(), HasSubstr("\"loss\""));
  EXPECT_FALSE(ParseLinkFaults("seed=3", false).ok());
}

// A transport that takes at most `room` frames per call, and records them.
class Narrow final : public Transport {
 public:
  size_t room = 1000;
  std::vector<std::vector<uint8_t>> sent;
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    const size_t n = std::min(room, frames.size());
    for (size_t i = 0; i < n; ++i) sent.emplace_back(frames[i].begin(), frames[i].end());
    return n;
  }
  size_t Receive(size_t, absl::FunctionRef<void(absl::Span<const uint8_t>)>) override {
    return 0;
  }
  void WaitReadable(absl::Duration) override {}
  std::string Describe() const override { return "narrow"; }
};

std::vector<std::vector<uint8_t>> Frames(int n) {
  std::vector<std::vector<uint8_t>> f;
  for (int i = 0; i < n; ++i) f.push_back({static_cast<uint8_t>(i)});
  return f;
}

std::vector<int> Tags(const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<int> t;
  for (const auto& f : frames) t.push_back(f[0]);
  return t;
}

// Sends `frames` the way an engine does: what was not taken, again.
std::vector<int> SendAll(ImpairedTransport& t, Narrow& inner, int n, int rounds = 100) {
  const auto frames = Frames(n);
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  size_t done = 0;
  for (int r = 0; r < rounds && done < spans.size(); ++r) {
    done += t.Send(absl::MakeSpan(spans).subspan(done));
  }
  EXPECT_EQ(done, spans.size());
  t.ReleaseHeld();
  return Tags(inner.sent);
}

TEST(ImpairedTransport, TellsTheCallerWhatTheInnerTransportDidNotTake) {
  auto inner = std::make_unique<Narrow>();
  Narrow* in = inner.get();
  in->room = 3;
  ImpairedTransport t(std::move(inner), LinkFaults{});
  const auto frames = Frames(10);
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  EXPECT_EQ(t.Send(spans), 3u);  // the caller keeps 3..9
  EXPECT_THAT(Tags(in->sent), ElementsAre(0, 1, 2));
  in->room = 0;
  EXPECT_EQ(t.Send(absl::MakeSpan(spans).subspan(3)), 0u);
  in->room = 1000;
  EXPECT_EQ(t.Send(absl::MakeSpan(spans).subspan(3)), 7u);
  EXPECT_THAT(Tags(in->sent), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
}

TEST(ImpairedTransport, UnderBackPressureNothingIsLostOrSentTwiceThatTheFaultsDidNotSay) {
  // Reordering only: every frame must go out exactly once, whatever the
  // inner transport refuses, including the frame a refusal catches held.
  for (size_t room : {1, 2, 3, 5}) {
    auto inner = std::make_unique<Narrow>();
    Narrow* in = inner.get();
    in->room = room;
    ImpairedTransport t(std::move(inner), LinkFaults{.reorder = 0.5, .seed = room});
    std::vector<int> got = SendAll(t, *in, 200, 1000);
    EXPECT_EQ(got.size(), 200u) << "room " << room;
    std::sort(got.begin(), got.end());
    std::vector<int> want(200);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(got, want) << "room " << room;
    EXPECT_GT(t.injector().reordered(), 0u);
  }
}

TEST(ImpairedTransport, LostFramesCountAsTaken) {
  auto inner = std::make_unique<Narrow>();
  Narrow* in = inner.get();
  ImpairedTransport t(std::move(inner), LinkFaults{.loss = 1});
  const auto frames = Frames(4);
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  EXPECT_EQ(t.Send(spans), 4u);
  EXPECT_TRUE(in->sent.empty());
}

}  // namespace
}  // namespace grid::transport
