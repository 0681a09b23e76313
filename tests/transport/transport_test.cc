// The transports: kernel UDP (link and datagram modes), fault injection,
// verbs (skipped without a device), DPDK on net_ring and af_packet.
#include "grid/transport.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <rte_ethdev.h>
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
#include "transport/udp.h"

namespace grid {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

int FreePortPair() {
  // Ports from the pid, so parallel test runs rarely collide.
  return 30000 + static_cast<int>(::getpid() % 2000) * 8;
}

std::vector<uint8_t> Frame(uint32_t src, uint32_t dst, uint32_t chunk, uint16_t n = 4,
                           uint16_t slot = 0) {
  wire::Header h;
  h.type = wire::MessageType::kData;
  h.job_id = 9;
  h.fan_in = 1;
  h.slot = slot;
  h.chunk = chunk;
  h.num_elements = n;
  wire::FrameAddress a;
  a.src_ip = src;
  a.dst_ip = dst;
  std::vector<uint8_t> payload(n * 4u, 7), frame(wire::FrameBytes(n));
  EXPECT_TRUE(wire::EncodeFrame(a, h, payload, absl::MakeSpan(frame)).ok());
  return frame;
}

std::vector<std::vector<uint8_t>> Drain(Transport& t, size_t want) {
  std::vector<std::vector<uint8_t>> got;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (got.size() < want && absl::Now() < deadline) {
    t.Receive(32, [&](absl::Span<const uint8_t> f) { got.emplace_back(f.begin(), f.end()); });
    t.WaitReadable(absl::Milliseconds(5));
  }
  return got;
}

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
  EXPECT_THAT(OpenTransport("dpdk:--no-pci -- seed=1" + std::string(90, '1')).status().message(),
              HasSubstr("not \"seed=1"));
  EXPECT_THAT(OpenTransport("carrier-pigeon:").status().message(), HasSubstr("unknown kind"));
  EXPECT_THAT(OpenTransport("dpdk:--no-pci -- bogus").status().message(),
              HasSubstr("not \"bogus\""));
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

namespace grid {
namespace {

// DPDK with the net_ring driver, whose transmit rings are its receive rings:
// what the transport sends comes back, over two queue pairs.
// A DPDK transport on net_ring with two queue pairs, its EAL files under
// /var/run/dpdk/PREFIX.
absl::StatusOr<std::unique_ptr<Transport>> OpenNetRing(const std::string& prefix) {
  return OpenTransport(
      "dpdk:--no-huge --no-pci -m 64 --no-shconf --no-telemetry "
      "--log-level=error --file-prefix=" +
      prefix + " --vdev=net_ring0 -- queues=2");
}

TEST(DpdkTransport, NetRingLoopsFramesBackOverSeveralQueues) {
  const std::string prefix = absl::StrFormat("gt%d", static_cast<int>(::getpid()));
  auto t = OpenNetRing(prefix);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT((*t)->Describe(), HasSubstr("2 queue pairs"));
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t c = 0; c < 200; ++c) frames.push_back(Frame(1, 2, c));
  for (size_t at = 0; at < frames.size(); at += 20) {
    std::vector<absl::Span<const uint8_t>> spans(frames.begin() + at, frames.begin() + at + 20);
    (*t)->Send(spans);
  }
  auto got = Drain(**t, frames.size());
  ASSERT_EQ(got.size(), frames.size());
  std::sort(got.begin(), got.end());
  std::sort(frames.begin(), frames.end());
  EXPECT_EQ(got, frames);
  // Frames built in the transport's mbufs (SendBuilt) come back the same,
  // in bursts longer than one.
  const size_t taken =
      (*t)->SendBuilt(frames.size(), frames[0].size(), [&](size_t i, absl::Span<uint8_t> out) {
        ASSERT_EQ(out.size(), frames[i].size());
        std::copy(frames[i].begin(), frames[i].end(), out.begin());
      });
  EXPECT_EQ(taken, frames.size());
  got = Drain(**t, frames.size());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, frames);
  // A second DPDK transport in the same process is refused, not crashed.
  EXPECT_EQ(OpenTransport("dpdk:--no-pci").status().code(), absl::StatusCode::kFailedPrecondition);
  t->reset();
  std::error_code ec;
  std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
}

// Lanes of a DPDK port (Transport::OpenLanes, the spec asking for as many
// queue pairs): lane k sends and receives on queue pair k, and a frame of
// lane k's slots that comes in on another lane's queue is passed to lane k.
// net_ring loops each queue back onto itself, so half of what each lane
// sends comes back on the wrong lane's queue. Two threads, one per lane,
// each get exactly the frames of their slots, and each lane sent on its own
// queue only.
TEST(DpdkTransport, LanesOwnTheirQueuePairsAndPassOnOthersFrames) {
  const std::string prefix = absl::StrFormat("gl%d", static_cast<int>(::getpid()));
  auto t = OpenNetRing(prefix);
  ASSERT_TRUE(t.ok()) << t.status();
  // Three lanes of two queue pairs are not the port's own: the threads
  // share the transport instead (transport::LanesOf).
  EXPECT_EQ((*t)->OpenLanes(3).status().code(), absl::StatusCode::kUnimplemented);
  auto lanes = (*t)->OpenLanes(2);
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  ASSERT_EQ(lanes->size(), 2u);
  EXPECT_THAT((*lanes)[1]->Describe(), HasSubstr("lane 1 of 2 on queue pair 1"));
  t->reset();  // the lanes keep the port open
  constexpr int kFrames = 100;
  std::vector<std::vector<uint8_t>> sent[2], got[2];
  for (uint32_t k = 0; k < 2; ++k) {
    for (uint32_t c = 0; c < kFrames; ++c) {
      sent[k].push_back(Frame(1, 2, 1000 * k + c, 4, static_cast<uint16_t>(c)));
    }
  }
  std::atomic<int> done{0};
  auto run = [&](uint32_t k) {
    Transport& lane = *(*lanes)[k];
    for (size_t at = 0; at < sent[k].size(); at += 20) {
      std::vector<absl::Span<const uint8_t>> spans(sent[k].begin() + at, sent[k].begin() + at + 20);
      lane.Send(spans);
    }
    // Each lane keeps receiving until both have all theirs: a lane passes
    // the other's frames on only while it receives.
    bool mine = false;
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (done.load() < 2 && absl::Now() < deadline) {
      lane.Receive(32,
                   [&](absl::Span<const uint8_t> f) { got[k].emplace_back(f.begin(), f.end()); });
      if (!mine && got[k].size() >= kFrames) {
        mine = true;
        done.fetch_add(1);
      }
      lane.WaitReadable(absl::Milliseconds(1));
    }
  };
  std::thread other(run, 1);
  run(0);
  other.join();
  for (uint32_t k = 0; k < 2; ++k) {
    std::vector<std::vector<uint8_t>> want;
    for (const auto& f : sent[0]) {
      if (wire::PeekSlot(f) % 2 == static_cast<int>(k)) want.push_back(f);
    }
    for (const auto& f : sent[1]) {
      if (wire::PeekSlot(f) % 2 == static_cast<int>(k)) want.push_back(f);
    }
    std::sort(want.begin(), want.end());
    std::sort(got[k].begin(), got[k].end());
    EXPECT_EQ(got[k], want) << "lane " << k;
  }
  rte_eth_stats stats{};
  ASSERT_EQ(rte_eth_stats_get(0, &stats), 0);
  EXPECT_EQ(stats.q_opackets[0], static_cast<uint64_t>(kFrames));
  EXPECT_EQ(stats.q_opackets[1], static_cast<uint64_t>(kFrames));
  lanes->clear();
  std::error_code ec;
  std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
}

}  // namespace
}  // namespace grid

namespace grid {
namespace {

// DPDK's af_packet driver on one end of a veth pair, a kernel packet socket
// on the other: frames cross both ways. Skips where veth pairs cannot be
// made (no iproute2, no CAP_NET_ADMIN).
TEST(DpdkTransport, AfPacketOnVethCarriesFramesBothWays) {
  const std::string a = absl::StrFormat("gv%da", static_cast<int>(::getpid()));
  const std::string b = absl::StrFormat("gv%db", static_cast<int>(::getpid()));
  const std::string up = absl::StrFormat(
      "ip link add %s type veth peer name %s >/dev/null 2>&1 && ip link set %s up && "
      "ip link set %s up",
      a, b, a, b);
  if (std::system(up.c_str()) != 0) GTEST_SKIP() << "cannot create a veth pair here";
  struct Cleanup {
    std::string name;
    ~Cleanup() { (void)std::system(("ip link del " + name + " >/dev/null 2>&1").c_str()); }
  } cleanup{a};
  const int raw = ::socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  ASSERT_GE(raw, 0);
  sockaddr_ll where{};
  where.sll_family = AF_PACKET;
  where.sll_protocol = htons(ETH_P_ALL);
  where.sll_ifindex = static_cast<int>(::if_nametoindex(b.c_str()));
  ASSERT_EQ(::bind(raw, reinterpret_cast<sockaddr*>(&where), sizeof(where)), 0);
  const std::string prefix = absl::StrFormat("gv%d", static_cast<int>(::getpid()));
  auto t = OpenTransport(
      "dpdk:--no-huge --no-pci -m 64 --no-shconf --no-telemetry "
      "--log-level=error --file-prefix=" +
      prefix + " --vdev=net_af_packet0,iface=" + a);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t c = 0; c < 50; ++c) frames.push_back(Frame(1, 2, c));
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  (*t)->Send(spans);
  // The kernel end sees them (and maybe its own IPv6 chatter: skip that).
  size_t seen = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  std::vector<uint8_t> buf(4096);
  while (seen < frames.size() && absl::Now() < deadline) {
    pollfd p{raw, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(raw, buf.data(), buf.size(), 0);
    if (n > 0 && static_cast<size_t>(n) >= frames[0].size() &&
        std::equal(frames[seen].begin(), frames[seen].end(), buf.begin())) {
      ++seen;
    }
  }
  EXPECT_EQ(seen, frames.size());
  for (const auto& f : frames) ASSERT_EQ(::send(raw, f.data(), f.size(), 0), ssize_t(f.size()));
  std::vector<std::vector<uint8_t>> got;
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (got.size() < frames.size() && absl::Now() < until) {
    (*t)->Receive(32, [&](absl::Span<const uint8_t> f) {
      wire::FrameView v;
      if (wire::ParseFrame(f, &v) == wire::WireError::kOk) got.emplace_back(f.begin(), f.end());
    });
    (*t)->WaitReadable(absl::Milliseconds(1));
  }
  EXPECT_EQ(got, frames);
  ::close(raw);
  t->reset();
  std::error_code ec;
  std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
}

}  // namespace
}  // namespace grid
