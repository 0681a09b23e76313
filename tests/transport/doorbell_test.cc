// The memif doorbell (transport/doorbell.h): a ring wakes the owner, a ring
// between Arm() and Wait() is not lost, and peers find bells by the socket's
// path, through the hard links of a process with several ports.
#include "transport/doorbell.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace grid::transport {
namespace {

class DoorbellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/grid-bell.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    const std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Arms `bell` and waits up to 20 s while another thread rings `peer` after
// 100 ms; returns the seconds waited.
double WaitForARingFrom(Doorbell& bell, PeerBell& peer) {
  std::thread ringer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    peer.Ring();
  });
  const auto t0 = std::chrono::steady_clock::now();
  bell.Arm();
  bell.Wait(absl::Seconds(20));
  const double waited = SecondsSince(t0);
  ringer.join();
  return waited;
}

TEST(MemifVdevs, ParsesNameSocketAndRole) {
  std::vector<std::string> args = {
      "grid",
      "--no-pci",
      "--vdev=net_memif0,role=client,id=0,socket=/tmp/x/link0.sock,socket-abstract=no",
      "--vdev",
      "net_memif3,socket=/tmp/x/link3.sock",
      "--vdev=net_memif4,socket=abs,socket-abstract=yes",
      "--vdev=net_ring0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const std::vector<MemifVdev> v = ParseMemifVdevs(static_cast<int>(argv.size()), argv.data());
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "net_memif0");
  EXPECT_EQ(v[0].socket, "/tmp/x/link0.sock");
  EXPECT_FALSE(v[0].server);
  EXPECT_EQ(v[1].name, "net_memif3");
  EXPECT_TRUE(v[1].server);
  EXPECT_EQ(v[2].socket, "");  // abstract: no file to put a bell beside
  EXPECT_EQ(BellPath(v[0], /*own=*/true), "/tmp/x/link0.sock.client.bell");
  EXPECT_EQ(BellPath(v[0], /*own=*/false), "/tmp/x/link0.sock.server.bell");
  EXPECT_EQ(BellPath(v[2], /*own=*/true), "");
}

TEST_F(DoorbellTest, WaitWithoutARingLastsTheTimeout) {
  auto bell = Doorbell::Create({Path("a.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  const auto t0 = std::chrono::steady_clock::now();
  (*bell)->Arm();
  (*bell)->Wait(absl::Milliseconds(50));
  EXPECT_GE(SecondsSince(t0), 0.045);
}

TEST_F(DoorbellTest, ARingWakesTheSleeper) {
  auto bell = Doorbell::Create({Path("a.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  PeerBell peer(Path("a.bell"));
  const double waited = WaitForARingFrom(**bell, peer);
  EXPECT_TRUE(peer.mapped());
  EXPECT_LT(waited, 10.0) << "the ring did not wake the sleeper";
}

// The frames were sent after the owner's last poll but before it blocked:
// the ring between Arm() and Wait() must end the wait at once.
TEST_F(DoorbellTest, ARingBetweenArmAndWaitIsNotLost) {
  auto bell = Doorbell::Create({Path("a.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  PeerBell peer(Path("a.bell"));
  (*bell)->Arm();
  peer.Ring();
  const auto t0 = std::chrono::steady_clock::now();
  (*bell)->Wait(absl::Seconds(20));
  EXPECT_LT(SecondsSince(t0), 10.0);
}

// An owner that is not armed is awake: rings leave the page alone (no
// futex call), and do not end its next wait early.
TEST_F(DoorbellTest, RingsWhileAwakeCostNoWakeUp) {
  auto bell = Doorbell::Create({Path("a.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  PeerBell peer(Path("a.bell"));
  for (int i = 0; i < 10; ++i) peer.Ring();
  BellPage page{};
  FILE* f = std::fopen(Path("a.bell").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fread(&page, sizeof(page), 1, f), 1u);
  std::fclose(f);
  EXPECT_EQ(page.seq.load(), 0u);
  const auto t0 = std::chrono::steady_clock::now();
  (*bell)->Arm();
  (*bell)->Wait(absl::Milliseconds(50));
  EXPECT_GE(SecondsSince(t0), 0.045);
}

// A rank asks to be woken once a few results have come: fewer frames leave
// it asleep and the sender owes a ring, which Flush() (the sender out of
// input) pays.
class BatchedWakeTest : public DoorbellTest {
 protected:
  // Arms for `want` frames on a thread and waits up to 20 s for it.
  void SleepFor(uint32_t want) {
    auto bell = Doorbell::Create({Path("a.bell")});
    ASSERT_TRUE(bell.ok()) << bell.status();
    bell_ = *std::move(bell);
    sleeper_ = std::thread([this, want] {
      bell_->Arm(want);
      bell_->Wait(absl::Seconds(20));
      woke_ = true;
    });
    // Until the page shows the sleeper: a ring before that finds it awake.
    for (int i = 0; i < 2000 && Sleepers() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(Sleepers(), 1u);
  }
  uint32_t Sleepers() const {
    BellPage page{};
    FILE* f = std::fopen(Path("a.bell").c_str(), "rb");
    if (f == nullptr) return 0;
    const size_t n = std::fread(&page, sizeof(page), 1, f);
    std::fclose(f);
    return n == 1 ? page.sleepers.load() : 0;
  }
  // Whether the sleeper is still asleep after 100 ms.
  bool StillAsleep() {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return !woke_;
  }
  // Joins the sleeper; whether it woke within 10 s of `t0` (not by timeout).
  bool WokeSoon(std::chrono::steady_clock::time_point t0) {
    sleeper_.join();
    return SecondsSince(t0) < 10.0;
  }
  void TearDown() override {
    if (sleeper_.joinable()) sleeper_.join();
    bell_.reset();
    DoorbellTest::TearDown();
  }

  std::unique_ptr<Doorbell> bell_;
  std::thread sleeper_;
  std::atomic<bool> woke_{false};
};

TEST_F(BatchedWakeTest, WakesOnTheFrameItWaitsFor) {
  SleepFor(3);
  PeerBell peer(Path("a.bell"));
  peer.Ring(2);
  EXPECT_TRUE(StillAsleep()) << "woken by 2 frames of the 3 it wants";
  const auto t0 = std::chrono::steady_clock::now();
  peer.Ring(1);
  EXPECT_TRUE(WokeSoon(t0));
}

TEST_F(BatchedWakeTest, TheSenderPaysAnOwedRingOnFlush) {
  SleepFor(8);
  PeerBell peer(Path("a.bell"));
  peer.Ring(1);
  EXPECT_TRUE(StillAsleep());
  const auto t0 = std::chrono::steady_clock::now();
  peer.Flush();
  EXPECT_TRUE(WokeSoon(t0)) << "the owed ring was not paid";
}

// A switch has one bell for all its ports: the peer of any port wakes it.
TEST_F(DoorbellTest, EveryLinkedPathReachesTheOneBell) {
  auto bell = Doorbell::Create({Path("p0.bell"), Path("p1.bell"), Path("p2.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  PeerBell peer(Path("p2.bell"));
  EXPECT_LT(WaitForARingFrom(**bell, peer), 10.0);
  bell->reset();  // the owner's files go with it
  struct stat st {};
  EXPECT_NE(::stat(Path("p1.bell").c_str(), &st), 0);
}

// Peers start in any order: a sender whose peer has no bell yet keeps
// ringing nothing, and maps the bell once it exists.
TEST_F(DoorbellTest, APeerFindsABellMadeLater) {
  PeerBell peer(Path("late.bell"));
  peer.Ring();
  EXPECT_FALSE(peer.mapped());
  auto bell = Doorbell::Create({Path("late.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  for (uint32_t i = 0; i <= PeerBell::kRecheckEvery && !peer.mapped(); ++i) peer.Ring();
  EXPECT_TRUE(peer.mapped());
}

// A process blocks on its bell only once its peer has one (else it naps):
// Present() looks for the peer's bell without sending anything.
TEST_F(DoorbellTest, PresentLooksForTheBellWithoutARing) {
  PeerBell peer(Path("late.bell"));
  EXPECT_FALSE(peer.Present());
  auto bell = Doorbell::Create({Path("late.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  bool present = false;
  for (uint32_t i = 0; i <= PeerBell::kRecheckEvery && !present; ++i) present = peer.Present();
  EXPECT_TRUE(present);
}

// A restarted switch makes a new bell at the same path: its peers map the
// new one within kRecheckEvery rings and wake it.
TEST_F(DoorbellTest, APeerFollowsARestartedOwner) {
  auto first = Doorbell::Create({Path("a.bell")});
  ASSERT_TRUE(first.ok()) << first.status();
  PeerBell peer(Path("a.bell"));
  peer.Ring();
  ASSERT_TRUE(peer.mapped());
  first->reset();
  auto second = Doorbell::Create({Path("a.bell")});
  ASSERT_TRUE(second.ok()) << second.status();
  for (uint32_t i = 0; i < PeerBell::kRecheckEvery; ++i) peer.Ring();
  const double waited = WaitForARingFrom(**second, peer);
  EXPECT_LT(waited, 10.0) << "the peer still rang the old bell";
}

// A stale file (an earlier process's, or a short one) is replaced.
TEST_F(DoorbellTest, AStaleFileIsReplaced) {
  FILE* f = std::fopen(Path("a.bell").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);  // zero bytes: mapping it would fault
  auto bell = Doorbell::Create({Path("a.bell")});
  ASSERT_TRUE(bell.ok()) << bell.status();
  struct stat st {};
  ASSERT_EQ(::stat(Path("a.bell").c_str(), &st), 0);
  EXPECT_GE(st.st_size, static_cast<off_t>(sizeof(BellPage)));
  EXPECT_FALSE(Doorbell::Create({Path("missing-dir/a.bell")}).ok());
}

}  // namespace
}  // namespace grid::transport
