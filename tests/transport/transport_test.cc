// The transports: kernel UDP (link and datagram modes), fault injection,
// verbs (skipped without a device), DPDK on net_ring and af_packet.
#include "grid/transport.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/store.h"
#include "grid/wire.h"
#include "gtest/gtest.h"
#include "transport/lanes.h"
#include "transport/test_frames.h"
#include "transport/udp.h"

namespace grid {
namespace {

using testing::Drain;
using testing::Frame;
using testing::FreePortPair;

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(UdpTransport, LinkCarriesWholeFramesBothWays) {
  const int p = FreePortPair();
  auto a = OpenTransport(absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d", p, p + 1));
  auto b = OpenTransport(absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d", p + 1, p));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t c = 0; c < 100; ++c) frames.push_back(Frame(1, 2, c));
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  EXPECT_EQ((*a)->Send(spans), frames.size());
  const auto got = Drain(**b, frames.size());
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], frames[i]);
  // A short non-GRID frame crosses a link too (the ring baseline's acks).
  const std::vector<uint8_t> small(20, 0xab);
  const absl::Span<const uint8_t> one[] = {small};
  (*b)->Send(one);
  const auto back = Drain(**a, 1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], small);
  EXPECT_GE((*a)->PollFd(), 0);
  EXPECT_THAT((*a)->Describe(), HasSubstr("udp-link"));
}

// A link sends runs of same-size frames as one GSO datagram each and cuts
// GRO's coalesced datagrams back into frames: every frame arrives whole and
// in order, Receive hands out at most `max` and keeps the rest for the next
// call, and a stranger's frames are counted one by one.
TEST(UdpTransport, LinkCoalescesRunsOfFramesAndCutsThemApart) {
  const int p = FreePortPair() + 6;
  auto a = OpenTransport(absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d", p, p + 1));
  auto b = OpenTransport(absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d", p + 1, p));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  if (!absl::StrContains((*a)->Describe(), "gso")) {
    GTEST_SKIP() << "this kernel has no UDP GSO/GRO: " << (*a)->Describe();
  }
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t c = 0; c < 60; ++c) frames.push_back(Frame(1, 2, c, 1024));
  frames.emplace_back(20, 0xab);  // a short frame between runs
  for (uint32_t c = 60; c < 130; ++c) frames.push_back(Frame(1, 2, c, 64));
  for (uint32_t c = 130; c < 200; ++c) frames.push_back(Frame(1, 2, c, 352));
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  EXPECT_EQ((*a)->Send(spans), frames.size());
  std::vector<std::vector<uint8_t>> got;
  (*b)->WaitReadable(absl::Seconds(2));
  EXPECT_LE(
      (*b)->Receive(5, [&](absl::Span<const uint8_t> f) { got.emplace_back(f.begin(), f.end()); }),
      5u);
  ASSERT_EQ(got.size(), 5u) << "the first datagram holds a run of 60 frames";
  const absl::Time before = absl::Now();
  (*b)->WaitReadable(absl::Seconds(2));  // frames are waiting: no wait
  EXPECT_LT(absl::Now() - before, absl::Milliseconds(500));
  for (auto& f : Drain(**b, frames.size() - got.size())) got.push_back(std::move(f));
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], frames[i]) << "frame " << i;
  // From anyone but the link's other end: dropped, each frame counted.
  auto stranger =
      OpenTransport(absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d", p - 6, p + 1));
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  std::vector<absl::Span<const uint8_t>> run(spans.begin(), spans.begin() + 10);
  (*stranger)->Send(run);
  EXPECT_TRUE(Drain(**b, 1).empty());
  EXPECT_EQ((*b)->foreign_frames(), 10u);
}

TEST(UdpTransport, DatagramModeRebuildsFramesWithTheSendersAddress) {
  const int p = FreePortPair() + 2;
  const uint32_t ip_a = 0x0a000001, ip_b = 0x0a000002;
  auto a =
      OpenTransport(absl::StrFormat("udp:bind=127.0.0.1:%d,route=10.0.0.2@127.0.0.1:%d", p, p + 1));
  auto b =
      OpenTransport(absl::StrFormat("udp:bind=127.0.0.1:%d,route=10.0.0.1@127.0.0.1:%d", p + 1, p));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  const std::vector<uint8_t> f = Frame(ip_a, ip_b, 42);
  const absl::Span<const uint8_t> one[] = {f};
  (*a)->Send(one);
  const auto got = Drain(**b, 1);
  ASSERT_EQ(got.size(), 1u);
  auto v = wire::DecodeFrame(got[0]);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->header.chunk, 42u);
  EXPECT_EQ(v->address.src_ip, ip_a);  // mapped back through the route
}

// A rank's progress threads each get a socket: a SO_REUSEPORT group whose
// BPF program picks the socket by the datagram's slot field.
TEST(UdpTransport, LanesReceiveTheFramesOfTheirSlots) {
  const int p = FreePortPair() + 16000;
  auto a =
      OpenTransport(absl::StrFormat("udp:bind=127.0.0.1:%d,route=10.0.0.2@127.0.0.1:%d", p, p + 1));
  auto b =
      OpenTransport(absl::StrFormat("udp:bind=127.0.0.1:%d,route=10.0.0.1@127.0.0.1:%d", p + 1, p));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  auto lanes = (*a)->OpenLanes(3);
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  ASSERT_EQ(lanes->size(), 3u);
  EXPECT_THAT((*lanes)[1]->Describe(), HasSubstr("lane 1 of 3"));
  std::vector<std::vector<uint8_t>> frames;
  for (uint16_t slot = 0; slot < 30; ++slot) {
    frames.push_back(Frame(0x0a000002, 0x0a000001, slot, 64, slot));
  }
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  ASSERT_EQ((*b)->Send(spans), frames.size());
  for (uint32_t k = 0; k < 3; ++k) {
    const auto got = Drain(*(*lanes)[k], 10);
    ASSERT_EQ(got.size(), 10u) << "lane " << k;
    for (const auto& f : got) EXPECT_EQ(wire::PeekSlot(f) % 3, static_cast<int>(k));
  }
  // A lane sends from the same address: the peer takes it.
  const std::vector<uint8_t> back = Frame(0x0a000001, 0x0a000002, 4, 64, 4);
  const absl::Span<const uint8_t> one[] = {back};
  (*lanes)[2]->Send(one);
  EXPECT_EQ(Drain(**b, 1).size(), 1u);
  // Port 0: every lane takes the port the kernel chose for the first socket.
  auto any = OpenTransport("udp:bind=127.0.0.1:0");
  ASSERT_TRUE(any.ok()) << any.status();
  auto two = (*any)->OpenLanes(2);
  ASSERT_TRUE(two.ok()) << two.status();
  const std::string d0 = (*two)[0]->Describe(), d1 = (*two)[1]->Describe();
  EXPECT_THAT(d0, Not(HasSubstr(":0 ")));
  EXPECT_EQ(d0.substr(0, d0.find(' ', 4)), d1.substr(0, d1.find(' ', 4))) << d0 << " / " << d1;
  // A link's threads share its socket (its peer's GSO runs arrive whole).
  auto link =
      OpenTransport(absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d", p + 2, p + 3));
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_TRUE(absl::IsUnimplemented((*link)->OpenLanes(2).status()));
}

// A transport that records calls into it that overlap (a transport need
// not be thread-safe) and echoes what it is sent, one frame per slot.
class OverlapChecker final : public Transport {
 public:
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    Enter();
    for (auto f : frames) queue_.emplace_back(f.begin(), f.end());
    Leave();
    return frames.size();
  }
  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    Enter();
    size_t n = 0;
    while (n < max && !queue_.empty()) {
      on_frame(queue_.front());
      queue_.erase(queue_.begin());
      ++n;
    }
    Leave();
    return n;
  }
  void WaitReadable(absl::Duration timeout) override {
    Enter();
    absl::SleepFor(std::min(timeout, absl::Microseconds(50)));
    Leave();
  }
  std::string Describe() const override { return "overlap checker"; }
  std::atomic<int> overlaps{0};

 private:
  void Enter() {
    if (inside_.fetch_add(1) != 0) ++overlaps;
  }
  void Leave() { inside_.fetch_sub(1); }
  std::atomic<int> inside_{0};
  std::vector<std::vector<uint8_t>> queue_;
};

// Lanes sharing one transport: every frame reaches the lane of its slot, and
// no two calls into the transport overlap, though each lane sends, receives
// and waits from its own thread.
TEST(TransportLanes, ASharedTransportIsCalledByOneLaneAtATime) {
  auto owned = std::make_unique<OverlapChecker>();
  OverlapChecker* checker = owned.get();
  auto lanes = transport::SplitIntoLanes(std::move(owned), 3);
  ASSERT_EQ(lanes.size(), 3u);
  std::vector<int> wrong(3, 0), got(3, 0);
  std::vector<std::thread> threads;
  for (uint32_t k = 0; k < 3; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 300; ++i) {
        const std::vector<uint8_t> f =
            Frame(1, 2, i, 4, static_cast<uint16_t>((i % 3 + k) % 3 + 3 * (i % 5)));
        const absl::Span<const uint8_t> one[] = {f};
        lanes[k]->Send(one);
        lanes[k]->Receive(8, [&](absl::Span<const uint8_t> frame) {
          ++got[k];
          if (wire::PeekSlot(frame) % 3 != static_cast<int>(k)) ++wrong[k];
        });
        lanes[k]->WaitReadable(absl::Microseconds(20));
      }
    });
  }
  for (auto& t : threads) t.join();
  // What is left, drained by each lane.
  for (uint32_t k = 0; k < 3; ++k) {
    for (int i = 0; i < 100; ++i) {
      lanes[k]->Receive(64, [&](absl::Span<const uint8_t> frame) {
        ++got[k];
        if (wire::PeekSlot(frame) % 3 != static_cast<int>(k)) ++wrong[k];
      });
    }
  }
  EXPECT_EQ(checker->overlaps.load(), 0);
  EXPECT_EQ(wrong, std::vector<int>(3, 0));
  EXPECT_EQ(got[0] + got[1] + got[2], 900);
}

// SendBuilt's default: frames built in a buffer, then Send, which may take
// fewer (back-pressure); what it took is returned and nothing after it is
// sent.
TEST(Transport, SendBuiltByDefaultBuildsThenSends) {
  class Recording final : public Transport {
   public:
    explicit Recording(size_t room) : room_(room) {}
    size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
      const size_t n = std::min(room_, frames.size());
      for (size_t i = 0; i < n; ++i) sent.emplace_back(frames[i].begin(), frames[i].end());
      room_ -= n;
      return n;
    }
    size_t Receive(size_t, absl::FunctionRef<void(absl::Span<const uint8_t>)>) override {
      return 0;
    }
    void WaitReadable(absl::Duration) override {}
    std::string Describe() const override { return "recording"; }
    std::vector<std::vector<uint8_t>> sent;

   private:
    size_t room_;
  };
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t c = 0; c < 150; ++c) frames.push_back(Frame(1, 2, c));
  auto build = [&](size_t i, absl::Span<uint8_t> out) {
    ASSERT_EQ(out.size(), frames[i].size());
    std::copy(frames[i].begin(), frames[i].end(), out.begin());
  };
  Recording roomy(1000);
  EXPECT_EQ(roomy.SendBuilt(frames.size(), frames[0].size(), build), frames.size());
  EXPECT_EQ(roomy.sent, frames);
  Recording full(70);  // takes 64, then 6 of the next burst
  EXPECT_EQ(full.SendBuilt(frames.size(), frames[0].size(), build), 70u);
  EXPECT_EQ(full.sent, std::vector<std::vector<uint8_t>>(frames.begin(), frames.begin() + 70));
  // A program's wrapper whose Send forwards through its inner transport's
  // SendBuilt, putting a tag before each frame: the inner call builds in a
  // buffer of its own, not over the frames the outer call is sending.
  class Tagging final : public Transport {
   public:
    explicit Tagging(Transport* inner) : inner_(inner) {}
    size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
      return inner_->SendBuilt(frames.size(), frames[0].size() + 8,
                               [&](size_t i, absl::Span<uint8_t> out) {
                                 std::fill(out.begin(), out.begin() + 8, 0xAB);
                                 std::copy(frames[i].begin(), frames[i].end(), out.begin() + 8);
                               });
    }
    size_t Receive(size_t, absl::FunctionRef<void(absl::Span<const uint8_t>)>) override {
      return 0;
    }
    void WaitReadable(absl::Duration) override {}
    std::string Describe() const override { return "tagging"; }

   private:
    Transport* inner_;
  };
  Recording inner(1000);
  Tagging outer(&inner);
  EXPECT_EQ(outer.SendBuilt(frames.size(), frames[0].size(), build), frames.size());
  ASSERT_EQ(inner.sent.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(std::vector<uint8_t>(inner.sent[i].begin() + 8, inner.sent[i].end()), frames[i])
        << "frame " << i;
  }
}

TEST(UdpTransport, FaultInjectionDropsAndDuplicates) {
  const int p = FreePortPair() + 4;
  auto lossy = OpenTransport(
      absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d,loss=1", p, p + 1));
  auto dup = OpenTransport(
      absl::StrFormat("udp-link:bind=127.0.0.1:%d,peer=127.0.0.1:%d,dup=1", p + 1, p));
  ASSERT_TRUE(lossy.ok() && dup.ok());
  const std::vector<uint8_t> f = Frame(1, 2, 1);
  const absl::Span<const uint8_t> one[] = {f};
  (*lossy)->Send(one);
  EXPECT_TRUE(Drain(**dup, 1).empty());
  (*dup)->Send(one);
  EXPECT_EQ(Drain(**lossy, 2).size(), 2u);
  EXPECT_THAT((*dup)->Describe(), HasSubstr("dup 1"));
}

TEST(UdpTransport, BadSpecsNameThePart) {
  EXPECT_THAT(OpenTransport("udp:").status().message(), HasSubstr("bind is required"));
  EXPECT_THAT(OpenTransport("udp-link:bind=127.0.0.1:1").status().message(),
              HasSubstr("needs peer"));
  EXPECT_THAT(OpenTransport("udp:bind=127.0.0.1:99999").status().message(), HasSubstr("bind"));
  EXPECT_THAT(OpenTransport("udp:bind=127.0.0.1:1,colour=blue").status().message(),
              HasSubstr("unknown key \"colour\""));
  EXPECT_THAT(OpenTransport("udp:bind=127.0.0.1:1,loss=2").status().message(), HasSubstr("loss"));
  // Found by host_config_fuzz: a seed beyond 2^64 was converted from a double.
  EXPECT_THAT(
      OpenTransport("udp:bind=127.0.0.1:1,seed=1" + std::string(90, '1')).status().message(),
      HasSubstr("seed: expected a whole number"));
  EXPECT_THAT(OpenTransport("udp:bind=127.0.0.1:1,seed=1.5").status().message(),
              HasSubstr("seed: expected a whole number"));
  EXPECT_THAT(OpenTransport("carrier-pigeon:").status().message(), HasSubstr("unknown kind"));
  // dpdk: specs: tests/transport/dpdk_test.cc, or, in a build without DPDK,
  // the error that says so and names what to use instead.
  const absl::Status dpdk = OpenTransport("dpdk:--no-pci -- bogus").status();
  if (absl::IsUnimplemented(dpdk)) {
    EXPECT_THAT(dpdk.message(), AllOf(HasSubstr("GRID_WITH_DPDK"), HasSubstr("udp:")));
  }
}

// A transport kind of the program's own, opened by scheme like the built-ins.
TEST(TransportRegistry, AProgramsOwnKindOpensByScheme) {
  TransportRegistry registry = TransportRegistry::WithBuiltins();
  std::string seen;
  ASSERT_TRUE(registry
                  .Register("pair",
                            [&](std::string_view spec) {
                              seen = std::string(spec);
                              // "pair:A,B": a UDP link from port A to port B.
                              const std::string rest(spec.substr(5));
                              const std::string a = rest.substr(0, rest.find(','));
                              const std::string b = rest.substr(rest.find(',') + 1);
                              return OpenTransport("udp-link:bind=127.0.0.1:" + a +
                                                   ",peer=127.0.0.1:" + b);
                            })
                  .ok());
  const int p = 30000 + static_cast<int>(::getpid() % 2000) * 8 + 6;
  auto t = registry.Open(absl::StrFormat("pair:%d,%d", p, p + 1));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(seen, absl::StrFormat("pair:%d,%d", p, p + 1));
  EXPECT_THAT((*t)->Describe(), HasSubstr("udp-link"));
  EXPECT_EQ(registry.Register("pair", OpenTransport).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Register("a b", OpenTransport).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register("empty", nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(registry.Open("smoke:1").status().message(),
              HasSubstr("known: dpdk, pair, udp, udp-link, verbs"));
  // The built-in registry does not know it.
  EXPECT_THAT(OpenTransport("pair:1,2").status().message(), HasSubstr("unknown kind \"pair\""));
}

TEST(VerbsTransport, OpensOrSkipsWithAClearReason) {
  auto t = OpenTransport("verbs:mac=02:00:00:00:00:01");
  if (!t.ok() && (t.status().code() == absl::StatusCode::kUnavailable ||
                  t.status().code() == absl::StatusCode::kUnimplemented ||
                  t.status().code() == absl::StatusCode::kNotFound)) {
    GTEST_SKIP() << "no RDMA device here: " << t.status().message();
  }
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)->Describe(), HasSubstr("verbs"));
}

TEST(VerbsTransport, RejectsABadSpec) {
  auto t = OpenTransport("verbs:port=1");
  if (t.status().code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << t.status().message();
  }
  EXPECT_THAT(t.status().message(), HasSubstr("mac="));
  EXPECT_THAT(OpenTransport("verbs:mac=02:00:00:00:00:01,speed=9").status().message(),
              ::testing::AnyOf(HasSubstr("not \"speed=9\""), HasSubstr("no verbs transport")));
}

}  // namespace
}  // namespace grid

