// A memif client whose server has its socket but has not started its port
// yet (DPDK 22.11 answers "ID not found" and its client never tries again):
// the DPDK transport restarts the port until the link is up, and says which
// link never came up when the server never starts. The server is a forked
// process of its own, with its own EAL.
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "gtest/gtest.h"
#include "transport/dpdk.h"

namespace grid::transport {
namespace {

using ::testing::HasSubstr;

constexpr char kEal[] = "--no-huge --no-pci -m 64 --no-shconf --no-telemetry --log-level=error";

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t end = std::min(s.find(' ', at), s.size());
    if (end > at) out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// The child: a memif server that starts its port `start_after` after its
// socket exists (never, if infinite), then sends back every frame it gets.
[[noreturn]] void ServeEcho(const std::string& socket, const std::string& prefix,
                            absl::Duration start_after) {
  std::vector<std::string> args =
      Split(absl::StrFormat("server %s --file-prefix=%s "
                            "--vdev=net_memif0,role=server,id=0,socket=%s,socket-abstract=no",
                            kEal, prefix, socket));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) ::_exit(2);
  absl::SleepFor(start_after);  // an infinite duration sleeps until killed
  rte_mempool* pool = rte_pktmbuf_pool_create("echo", 4095, 0, 0, GridMbufDataRoom(), 0);
  rte_eth_conf conf{};
  if (pool == nullptr || rte_eth_dev_configure(0, 1, 1, &conf) < 0 ||
      rte_eth_rx_queue_setup(0, 0, 512, 0, nullptr, pool) < 0 ||
      rte_eth_tx_queue_setup(0, 0, 512, 0, nullptr) < 0 || rte_eth_dev_start(0) < 0) {
    ::_exit(3);
  }
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until) {
    rte_mbuf* m[32];
    const uint16_t n = rte_eth_rx_burst(0, 0, m, 32);
    // Never an empty burst: DPDK 24.11's memif reads the first mbuf of
    // any burst (as the library's transports never send one).
    const uint16_t sent = n == 0 ? 0 : rte_eth_tx_burst(0, 0, m, n);
    for (uint16_t i = sent; i < n; ++i) rte_pktmbuf_free(m[i]);
    if (n == 0) absl::SleepFor(absl::Microseconds(100));
  }
  ::_exit(0);
}

class MemifLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrFormat("/tmp/grid-memif-link.%d", static_cast<int>(::getpid()));
    std::filesystem::create_directories(dir_);
    socket_ = dir_ + "/s.sock";
  }
  void TearDown() override {
    if (server_ > 0) {
      ::kill(server_, SIGKILL);
      ::waitpid(server_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    for (const char* p : {"/var/run/dpdk/gmc", "/var/run/dpdk/gms"}) {
      std::filesystem::remove_all(p + std::to_string(::getpid()), ec);
    }
  }
  void StartServer(absl::Duration start_after) {
    const std::string prefix = "gms" + std::to_string(::getpid());
    std::fflush(nullptr);
    server_ = ::fork();
    ASSERT_GE(server_, 0);
    if (server_ == 0) ServeEcho(socket_, prefix, start_after);
  }
  std::string ClientVdev() const {
    return absl::StrFormat(
        " --file-prefix=gmc%d --vdev=net_memif0,role=client,id=0,socket=%s,"
        "socket-abstract=no",
        static_cast<int>(::getpid()), socket_);
  }

  std::string dir_, socket_;
  pid_t server_ = -1;
};

std::vector<uint8_t> Frame(uint32_t chunk) {
  wire::Header h;
  h.type = wire::MessageType::kData;
  h.job_id = 9;
  h.fan_in = 1;
  h.chunk = chunk;
  h.num_elements = 4;
  wire::FrameAddress a;
  a.src_ip = 1;
  a.dst_ip = 2;
  std::vector<uint8_t> payload(16, static_cast<uint8_t>(chunk)), frame(wire::FrameBytes(4));
  EXPECT_TRUE(wire::EncodeFrame(a, h, payload, absl::MakeSpan(frame)).ok());
  return frame;
}

// The server starts its port 500 ms after its socket appeared: the client's
// first connect is refused and only a restart brings the link up.
TEST_F(MemifLinkTest, AClientOfAServerThatStartsLateConnectsAndCarriesFrames) {
  StartServer(absl::Milliseconds(500));
  auto t = OpenTransport(std::string("dpdk:") + kEal + ClientVdev());
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t c = 0; c < 16; ++c) frames.push_back(Frame(c));
  std::vector<absl::Span<const uint8_t>> spans(frames.begin(), frames.end());
  // Frames sent as the link comes up may be lost, as on any link (GRID
  // resends them): send again until every one came back, or 10 s.
  std::set<std::vector<uint8_t>> got;
  const absl::Time until = absl::Now() + absl::Seconds(10);
  absl::Time resend = absl::InfinitePast();
  while (got.size() < frames.size() && absl::Now() < until) {
    if (absl::Now() >= resend) {
      (*t)->Send(spans);
      resend = absl::Now() + absl::Milliseconds(500);
    }
    (*t)->Receive(32, [&](absl::Span<const uint8_t> f) { got.emplace(f.begin(), f.end()); });
    (*t)->WaitReadable(absl::Milliseconds(1));
  }
  EXPECT_EQ(got, std::set<std::vector<uint8_t>>(frames.begin(), frames.end()));
  t->reset();
}

// A server that never starts its port: the error names the port and socket.
TEST_F(MemifLinkTest, ALinkThatNeverComesUpIsNamed) {
  StartServer(absl::InfiniteDuration());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!std::filesystem::exists(socket_) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(socket_)) << "the server made no socket in 10 s";
  std::vector<std::string> args = Split(std::string("client ") + kEal + ClientVdev());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0);
  std::vector<std::string> again = Split(std::string("client ") + kEal + ClientVdev());
  argv.clear();
  for (std::string& a : again) argv.push_back(a.data());
  rte_mempool* pool = rte_pktmbuf_pool_create("client", 4095, 0, 0, GridMbufDataRoom(), 0);
  ASSERT_NE(pool, nullptr);
  rte_eth_conf conf{};
  ASSERT_GE(rte_eth_dev_configure(0, 1, 1, &conf), 0);
  ASSERT_GE(rte_eth_rx_queue_setup(0, 0, 512, 0, nullptr, pool), 0);
  ASSERT_GE(rte_eth_tx_queue_setup(0, 0, 512, 0, nullptr), 0);
  ASSERT_GE(rte_eth_dev_start(0), 0);
  const uint16_t ports[] = {0};
  const absl::Time begin = absl::Now();
  absl::Status s = AwaitMemifClientLinks(static_cast<int>(argv.size()), argv.data(), ports,
                                         absl::Milliseconds(800));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("port 0 (socket " + socket_ + ")"));
  EXPECT_THAT(s.message(), HasSubstr("restarts"));
  EXPECT_LT(absl::Now() - begin, absl::Seconds(3));
  rte_eth_dev_stop(0);
}

}  // namespace
}  // namespace grid::transport
