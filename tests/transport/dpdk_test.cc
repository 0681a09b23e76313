// The DPDK transport (built where DPDK is, GRID_WITH_DPDK): net_ring loops
// frames back over several queue pairs, lanes own their queue pairs, and
// af_packet on a veth pair carries frames both ways (skipped where veth
// pairs cannot be made). Each test runs in a process of its own (one EAL per
// process).
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <rte_ethdev.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "gtest/gtest.h"
#include "transport/lanes.h"
#include "transport/test_frames.h"

namespace grid {
namespace {

using ::testing::HasSubstr;
using testing::Drain;
using testing::Frame;
using testing::FreePortPair;

TEST(DpdkTransport, BadSpecsNameThePart) {
  // Found by host_config_fuzz: a seed beyond 2^64 was converted from a double.
  EXPECT_THAT(OpenTransport("dpdk:--no-pci -- seed=1" + std::string(90, '1')).status().message(),
              HasSubstr("not \"seed=1"));
  EXPECT_THAT(OpenTransport("dpdk:--no-pci -- bogus").status().message(),
              HasSubstr("not \"bogus\""));
}

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
