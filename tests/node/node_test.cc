// The drops a node counts against a job and the status it publishes for the
// job's ranks (node/drop_ledger.h, node/status.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grid/store.h"
#include "gtest/gtest.h"
#include "node/drop_ledger.h"
#include "node/metrics.h"
#include "node/process.h"
#include "node/status.h"

namespace grid::node {
namespace {

uint64_t CountOf(const std::vector<JobDrops>& drops, uint16_t job, uint32_t token, JobDrop r) {
  for (const JobDrops& d : drops) {
    if (d.job == job && d.token == token) return d.counts[static_cast<int>(r)];
  }
  return 0;
}

TEST(DropLedger, CountsEachJobAndTokenApart) {
  DropLedger ledger;
  ledger.Count(7, 100, JobDrop::kBadToken);
  ledger.Count(7, 100, JobDrop::kBadToken);
  ledger.Count(7, 200, JobDrop::kStale);
  ledger.Count(8, 100, JobDrop::kUnknownJob);
  ledger.Count(7, 100, JobDrop::kNotMember);
  const std::vector<JobDrops> s = ledger.Snapshot();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].job, 7);
  EXPECT_EQ(s[0].token, 100u);  // in the order first seen
  EXPECT_EQ(CountOf(s, 7, 100, JobDrop::kBadToken), 2u);
  EXPECT_EQ(CountOf(s, 7, 100, JobDrop::kNotMember), 1u);
  EXPECT_EQ(CountOf(s, 7, 100, JobDrop::kStale), 0u);
  EXPECT_EQ(CountOf(s, 7, 200, JobDrop::kStale), 1u);
  EXPECT_EQ(CountOf(s, 8, 100, JobDrop::kUnknownJob), 1u);
  EXPECT_EQ(ledger.untracked(), 0u);
}

// A flood of made-up (job, token) pairs costs a fixed table; the pairs
// already in it keep counting.
TEST(DropLedger, AFullTableCountsTheRestAsUntracked) {
  DropLedger ledger;
  ledger.Count(1, 1, JobDrop::kBadToken);
  for (uint32_t t = 0; t < 1000; ++t) ledger.Count(2, 1000 + t, JobDrop::kBadToken);
  ledger.Count(1, 1, JobDrop::kBadToken);
  const std::vector<JobDrops> s = ledger.Snapshot();
  EXPECT_EQ(s.size(), static_cast<size_t>(DropLedger::kCapacity));
  EXPECT_EQ(CountOf(s, 1, 1, JobDrop::kBadToken), 2u);
  EXPECT_EQ(ledger.untracked(), 1000u - (DropLedger::kCapacity - 1));
}

// One writer, readers on other threads (TSan checks the atomics): a reader
// never sees a count go down or a pair without its first drop.
TEST(DropLedger, ReadersOnOtherThreadsSeeCountsGrow) {
  DropLedger ledger;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      for (const JobDrops& d : ledger.Snapshot()) {
        uint64_t sum = 0;
        for (uint64_t c : d.counts) sum += c;
        EXPECT_GE(sum, 1u);
        if (d.job == 3 && d.token == 3) {
          EXPECT_GE(d.counts[0], last);
          last = d.counts[0];
        }
      }
    }
  });
  for (int i = 0; i < 200000; ++i) {
    ledger.Count(3, 3, JobDrop::kUnknownJob);
    if (i % 1000 == 0) ledger.Count(4, static_cast<uint32_t>(i), JobDrop::kStale);
  }
  done = true;
  reader.join();
  EXPECT_EQ(CountOf(ledger.Snapshot(), 3, 3, JobDrop::kUnknownJob), 200000u);
}

TEST(DropLedger, MergeSumsTheLanes) {
  JobDrops a{1, 5, {}}, b{1, 5, {}}, c{2, 5, {}};
  a.counts[1] = 3;
  b.counts[1] = 4;
  b.counts[5] = 1;
  c.counts[0] = 9;
  const std::vector<JobDrops> m = MergeDrops({{a, c}, {b}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(CountOf(m, 1, 5, JobDrop::kBadToken), 7u);
  EXPECT_EQ(CountOf(m, 1, 5, JobDrop::kStale), 1u);
  EXPECT_EQ(CountOf(m, 2, 5, JobDrop::kUnknownJob), 9u);
}

TEST(DropLedger, NamesAreTheSwitchCounters) {
  EXPECT_STREQ(JobDropName(JobDrop::kUnknownJob), "unknown_job");
  EXPECT_STREQ(JobDropName(JobDrop::kBadToken), "bad_token");
  EXPECT_STREQ(JobDropName(JobDrop::kNotMember), "not_member");
  EXPECT_STREQ(JobDropName(JobDrop::kBadSource), "bad_source");
  EXPECT_STREQ(JobDropName(JobDrop::kBadIngress), "bad_ingress");
  EXPECT_STREQ(JobDropName(JobDrop::kStale), "stale");
}

TEST(NodeStatus, RoundTrips) {
  NodeStatus s;
  s.kind = NodeKind::kRoot;
  s.unix_ms = 1765000000123;
  s.started_ms = 1765000000000;
  s.ended = true;
  s.pid = 4242;
  s.boot_id = "1c4fd1f1-9a49-4d8f-908d-fe5aa42365b8";
  JobDrops d{65535, 4294967295u, {}};
  d.counts = {1, 2, 3, 4, 5, 6};
  s.drops = {d, JobDrops{1, 2, {}}};
  const std::string text = FormatNodeStatus(s);
  EXPECT_THAT(text, ::testing::StartsWith("root 1765000000123 1765000000000 end 4242 "
                                          "1c4fd1f1-9a49-4d8f-908d-fe5aa42365b8\n"));
  NodeStatus back;
  ASSERT_TRUE(ParseNodeStatus(text, &back)) << text;
  EXPECT_EQ(back, s);
  EXPECT_EQ(NodeStatusKey("S1"), "grid/node/S1");
}

TEST(NodeStatus, RefusesWhatIsNotAStatus) {
  NodeStatus s;
  for (const char* bad :
       {"", "switch", "switch 1 2", "hub 1 2 run 7 b", "switch 1 2 maybe 7 b", "switch x 2 run 7 b",
        "switch 1 2 run", "switch 1 2 run 7", "switch 1 2 run x b", "switch 1 2 run -7 b",
        "switch 1 2 run 7 b c", "switch 1 2 run 7 b\n7 8 1 2 3",
        "switch 1 2 run 7 b\n70000 8 0 0 0 0 0 0", "switch 1 2 run 7 b\n7 8 0 0 0 0 0 x",
        "3 1 run"}) {
    EXPECT_FALSE(ParseNodeStatus(bad, &s)) << bad;
  }
  EXPECT_TRUE(ParseNodeStatus("switch 1 2 run 7 b\n7 8 0 0 0 0 0 1\n", &s));
  EXPECT_EQ(s.pid, 7);
  EXPECT_EQ(s.boot_id, "b");
  EXPECT_EQ(s.drops.size(), 1u);
}

TEST(NodeReporter, WritesWhileRunningAndEndsWithItsLastWord) {
  const std::string dir = ::testing::TempDir() + "/node_reporter_store";
  std::filesystem::remove_all(dir);
  auto store = OpenStore("file:" + dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto reader = OpenStore("file:" + dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  DropLedger ledger;
  ledger.Count(5, 9, JobDrop::kBadSource);
  auto reporter = std::make_unique<NodeReporter>(
      *std::move(store), "S1", NodeKind::kSwitch, [&] { return ledger.Snapshot(); },
      absl::Milliseconds(10));
  NodeStatus first, later;
  auto v = (*reader)->Get(NodeStatusKey("S1"), absl::Seconds(5));
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(ParseNodeStatus(*v, &first));
  EXPECT_FALSE(first.ended);
  EXPECT_EQ(first.kind, NodeKind::kSwitch);
  EXPECT_EQ(CountOf(first.drops, 5, 9, JobDrop::kBadSource), 1u);
  EXPECT_EQ(first.pid, getpid());
  EXPECT_EQ(first.boot_id, ThisBootId());
  EXPECT_NE(first.boot_id, "-");
  // It keeps writing: the time moves.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  do {
    absl::SleepFor(absl::Milliseconds(5));
    v = (*reader)->Get(NodeStatusKey("S1"), absl::Seconds(5));
    ASSERT_TRUE(v.ok() && ParseNodeStatus(*v, &later));
  } while (later.unix_ms == first.unix_ms && absl::Now() < deadline);
  EXPECT_GT(later.unix_ms, first.unix_ms);
  EXPECT_EQ(later.started_ms, first.started_ms);
  reporter->Stop();
  v = (*reader)->Get(NodeStatusKey("S1"), absl::Seconds(5));
  ASSERT_TRUE(v.ok() && ParseNodeStatus(*v, &later));
  EXPECT_TRUE(later.ended);
}

// Killed: no last word, and the status stops moving.
TEST(NodeReporter, AKilledNodeLeavesItsLastStatus) {
  const std::string dir = ::testing::TempDir() + "/node_reporter_killed";
  std::filesystem::remove_all(dir);
  auto store = OpenStore("file:" + dir);
  auto reader = OpenStore("file:" + dir);
  ASSERT_TRUE(store.ok() && reader.ok());
  NodeReporter reporter(*std::move(store), "R", NodeKind::kRoot, nullptr, absl::Milliseconds(10));
  ASSERT_TRUE((*reader)->Get(NodeStatusKey("R"), absl::Seconds(5)).ok());
  reporter.Stop(/*ended=*/false);
  NodeStatus a, b;
  auto v = (*reader)->Get(NodeStatusKey("R"), absl::Seconds(5));
  ASSERT_TRUE(v.ok() && ParseNodeStatus(*v, &a));
  absl::SleepFor(absl::Milliseconds(50));
  v = (*reader)->Get(NodeStatusKey("R"), absl::Seconds(5));
  ASSERT_TRUE(v.ok() && ParseNodeStatus(*v, &b));
  EXPECT_EQ(a, b);
  EXPECT_FALSE(b.ended);
  EXPECT_EQ(b.kind, NodeKind::kRoot);
}

// A node's pid is taken only where it names a live process of the node's
// kind on this very host; anything else says which check failed.
TEST(NodeProcess, FindsANodeOnlyWhereItRuns) {
  NodeStatus s;
  s.kind = NodeKind::kSwitch;
  EXPECT_THAT(LocalPid("S1", s).status().message(),
              ::testing::HasSubstr("grid-switch S1 did not say which process it is"));
  s.pid = getpid();
  s.boot_id = "another-host";
  EXPECT_THAT(LocalPid("S1", s).status().message(),
              ::testing::HasSubstr("runs on another host (boot id another-host)"));
  s.boot_id = ThisBootId();
  // This test's own process: alive, but not a switch (a recycled pid).
  EXPECT_THAT(LocalPid("S1", s).status().message(), ::testing::HasSubstr(", not grid-switch"));

  // A child that names itself as grid-switch does, then waits for its pipe.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[1]);
    prctl(PR_SET_NAME, "grid-switch");
    char c;
    (void)!read(fds[0], &c, 1);
    _exit(0);
  }
  close(fds[0]);
  s.pid = child;
  absl::StatusOr<int64_t> pid;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {  // until the child has renamed itself
    pid = LocalPid("S1", s);
  } while (!pid.ok() && absl::Now() < deadline && (absl::SleepFor(absl::Milliseconds(1)), true));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(*pid, child);
  EXPECT_TRUE(ProcessCpuTime(child).ok());
  close(fds[1]);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_THAT(LocalPid("S1", s).status().message(), ::testing::HasSubstr("is not running"));
  EXPECT_FALSE(ProcessCpuTime(child).ok());
}

// Against the kernel's own clock of this process's CPU: the scheduler's
// run time (schedstat's first field), not its wait time (the second).
TEST(NodeProcess, ReadsAProcesssCpuTime) {
  auto process_clock = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return absl::DurationFromTimespec(t);
  };
  auto before = ProcessCpuTime(getpid());
  ASSERT_TRUE(before.ok()) << before.status();
  const absl::Duration clock0 = process_clock();
  // Busy for 50 ms of CPU, then sleep as long: a reading of wall time, or of
  // the time spent waiting, is far from the clock.
  volatile uint64_t x = 0;
  while (process_clock() - clock0 < absl::Milliseconds(50)) x = x + 1;
  absl::SleepFor(absl::Milliseconds(50));
  auto after = ProcessCpuTime(getpid());
  ASSERT_TRUE(after.ok()) << after.status();
  const double used = absl::ToDoubleMilliseconds(*after - *before);
  const double clock = absl::ToDoubleMilliseconds(process_clock() - clock0);
  EXPECT_NEAR(used, clock, 0.1 * clock + 2) << "schedstat " << used << " ms, clock " << clock;
  EXPECT_FALSE(ProcessCpuTime(-1).ok());
}

// Prometheus' text format: HELP and TYPE once per family, then its
// samples, label values escaped.
TEST(MetricsText, WritesFamiliesAndEscapesLabels) {
  MetricsText m;
  m.Family("grid_x_total", "counter", "Things.");
  m.Sample({}, 3);
  m.Sample({{"switch", "S\"1\\\n"}, {"port", "2"}}, 12345678901);
  m.Family("grid_y", "gauge", "Level.");
  m.Sample({{"a", "b"}}, 0.5);
  EXPECT_EQ(m.text(),
            "# HELP grid_x_total Things.\n# TYPE grid_x_total counter\ngrid_x_total 3\n"
            "grid_x_total{switch=\"S\\\"1\\\\\\n\",port=\"2\"} 12345678901\n"
            "# HELP grid_y Level.\n# TYPE grid_y gauge\ngrid_y{a=\"b\"} 0.5\n");
}

// What an HTTP client gets from `port`: the whole response to `request`.
std::string Fetch(uint16_t port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return "connect failed";
  }
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fd);
  return out;
}

TEST(MetricsServer, ServesMetricsAndNothingElse) {
  int renders = 0;
  auto server = MetricsServer::Start("127.0.0.1:0", [&] {
    ++renders;
    return std::string("grid_x_total 1\n");
  });
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_NE((*server)->port(), 0);
  EXPECT_EQ((*server)->url(), absl::StrCat("http://127.0.0.1:", (*server)->port(), "/metrics"));
  const std::string ok = Fetch((*server)->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(ok, ::testing::StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(ok, ::testing::HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(ok, ::testing::EndsWith("\r\n\r\ngrid_x_total 1\n"));
  EXPECT_THAT(Fetch((*server)->port(), "GET / HTTP/1.1\r\n\r\n"),
              ::testing::StartsWith("HTTP/1.1 404"));
  EXPECT_EQ(renders, 1);
}

// A client that connects and says nothing holds the server for at most
// kRequestTimeout; the next scrape is answered.
TEST(MetricsServer, ASilentClientDoesNotStopTheNext) {
  auto server = MetricsServer::Start("127.0.0.1:0", [] { return std::string("x 1\n"); });
  ASSERT_TRUE(server.ok()) << server.status();
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((*server)->port());
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  const absl::Time start = absl::Now();
  EXPECT_THAT(Fetch((*server)->port(), "GET /metrics HTTP/1.0\r\n\r\n"),
              ::testing::EndsWith("x 1\n"));
  EXPECT_LT(absl::Now() - start, MetricsServer::kRequestTimeout + absl::Seconds(2));
  close(silent);
}

TEST(MetricsServer, BadAddressesSayWhy) {
  auto render = [] { return std::string(); };
  for (const char* bad : {"9464", "localhost:9464", "127.0.0.1:99999", "127.0.0.1:x", ":1"}) {
    auto s = MetricsServer::Start(bad, render);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.status().message(), ::testing::HasSubstr(bad));
  }
  auto first = MetricsServer::Start("127.0.0.1:0", render);
  ASSERT_TRUE(first.ok());
  const std::string taken = absl::StrCat("127.0.0.1:", (*first)->port());
  auto second = MetricsServer::Start(taken, render);
  EXPECT_THAT(second.status().message(), ::testing::HasSubstr(taken + ": Address already in use"));
}

}  // namespace
}  // namespace grid::node
