// Failures during a job (docs/security.md, "Failures"): a link that flaps,
// a rank ten times slower than the others, a switch and the root that
// restart and lose what they held. The first two must finish exact. A
// restart may cost the job: then every rank gets a clear error within twice
// its timeout, and no rank ever returns a wrong sum. Faults come on events
// (a chunk of an operation reaching a node: LoopbackFabric::SetTrigger), so
// each hits mid-operation, where the test says, on any machine's timing.
#include <atomic>
#include <filesystem>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/cluster.h"
#include "util/random.h"

namespace grid {
namespace {

constexpr size_t kCount = 64 * 64 + 9;

std::vector<int32_t> Input(int rank, int iteration) {
  util::Random rng(static_cast<uint64_t>(rank) * 977 + iteration);
  std::vector<int32_t> v(kCount);
  for (int32_t& x : v) x = static_cast<int32_t>(rng.Below(1u << 20));
  return v;
}

std::vector<int32_t> Sum(int world, int iteration) {
  std::vector<int32_t> s(kCount, 0);
  for (int r = 0; r < world; ++r) {
    const std::vector<int32_t> in = Input(r, iteration);
    for (size_t i = 0; i < kCount; ++i) s[i] += in[i];
  }
  return s;
}

// What happened to one rank's run of operations.
struct Outcome {
  int completed = 0;           // operations that ended OK (and exact)
  int wrong = 0;               // OK but not exact: never allowed
  absl::Status error;          // the first error
  absl::Duration error_after;  // from the operation's start to its error
};

// Every rank runs `iterations` int32 allreduces; `before(rank, it)` runs
// before each (a rank's compute phase).
std::vector<Outcome> RunRanks(testing::Cluster& cluster, int iterations,
                              const std::function<void(int, int)>& before = nullptr) {
  std::vector<Outcome> out(cluster.size());
  cluster.Run([&](int r) {
    for (int it = 0; it < iterations; ++it) {
      if (before) before(r, it);
      std::vector<int32_t> v = Input(r, it);
      const absl::Time start = absl::Now();
      absl::Status s = cluster.comm(r).AllReduce(v.data(), v.data(), kCount, DataType::kInt32);
      if (!s.ok()) {
        out[r].error = s;
        out[r].error_after = absl::Now() - start;
        return;
      }
      ++out[r].completed;
      out[r].wrong += v != Sum(cluster.size(), it);
    }
  });
  return out;
}

testing::ClusterOptions Options(absl::Duration timeout, double loss = 0) {
  testing::ClusterOptions o;
  o.impairment.loss = loss;
  o.planner = "switchml";  // S2's and S3's partials cross the S2-S1 and S3-S1 links
  o.slots = 16;
  o.comm.engine.timeout = timeout;
  return o;
}

// The frames of chunk `chunk` of the job's `op`-th operation (int32: one
// op_seq each, from 1), of type `type`, from `from` (kNoNode: anyone).
std::function<bool(const wire::FrameView&)> ChunkOf(int op, uint32_t chunk, wire::MessageType type,
                                                    topology::NodeId from = topology::kNoNode) {
  return [=](const wire::FrameView& v) {
    return v.header.type == type && v.header.op_seq == static_cast<uint32_t>(op) &&
           v.header.chunk == chunk &&
           (from == topology::kNoNode || v.address.src_ip == control::NodeIp(from));
  };
}

// The fault comes on an event, mid-operation: as S1 takes S2's partial of
// chunk 10 of the third operation, the S1-S2 link goes down, and comes back
// 2 s later.
TEST(Failures, ALinkDownForTwoSecondsThenUpFinishesExact) {
  testing::Cluster cluster(Options(absl::Seconds(30)));
  const topology::NodeId s1 = *cluster.topology().Find("S1");
  const topology::NodeId s2 = *cluster.topology().Find("S2");
  cluster.fabric().SetTrigger(
      {.at = s1,
       .match = ChunkOf(3, 10, wire::MessageType::kPartial, s2),
       .fault = [&](const wire::FrameView&) { cluster.fabric().SetLinkDown(s1, s2, true); }});
  std::thread up([&] {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!cluster.fabric().fired() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    absl::SleepFor(absl::Seconds(2));
    cluster.fabric().SetLinkDown(s1, s2, false);
  });
  const absl::Time start = absl::Now();
  const std::vector<Outcome> out = RunRanks(cluster, 40);
  up.join();
  ASSERT_TRUE(cluster.fabric().fired()) << "the link never went down";
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_TRUE(out[r].error.ok()) << "rank " << r << ": " << out[r].error;
    EXPECT_EQ(out[r].completed, 40);
    EXPECT_EQ(out[r].wrong, 0);
  }
  // The job waited the outage out: it did not finish before the link came back.
  EXPECT_GT(absl::Now() - start, absl::Seconds(2));
  EXPECT_GT(cluster.fabric().stats().lost, 0u);
}

TEST(Failures, ARankTenTimesSlowerDelaysButNeverBreaksTheOthers) {
  testing::Cluster cluster(Options(absl::Seconds(5)));
  // A compute phase of 20 ms on every rank, 200 ms on rank 5: the others
  // wait for it in every operation, well within their timeout.
  const std::vector<Outcome> out = RunRanks(
      cluster, 8, [](int rank, int) { absl::SleepFor(absl::Milliseconds(rank == 5 ? 200 : 20)); });
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_TRUE(out[r].error.ok()) << "rank " << r << ": " << out[r].error;
    EXPECT_EQ(out[r].completed, 8);
    EXPECT_EQ(out[r].wrong, 0);
  }
}

// A restart of `what` (the switch S2 or the root) while operations are in
// flight: each rank finishes exact or fails clearly within 2x its timeout.
void ExpectExactOrClearError(const std::vector<Outcome>& out, absl::Duration timeout,
                             int iterations) {
  int failed = 0;
  for (size_t r = 0; r < out.size(); ++r) {
    EXPECT_EQ(out[r].wrong, 0) << "rank " << r;
    if (out[r].error.ok()) {
      EXPECT_EQ(out[r].completed, iterations) << "rank " << r;
      continue;
    }
    ++failed;
    EXPECT_EQ(out[r].error.code(), absl::StatusCode::kDeadlineExceeded) << out[r].error;
    EXPECT_LE(out[r].error_after, 2 * timeout) << "rank " << r << ": " << out[r].error;
    EXPECT_THAT(out[r].error.message(), ::testing::HasSubstr("timed out")) << out[r].error;
    // Nodes by the topology's names: "aggregated at S2 (node 5), root PS (node 8)".
    EXPECT_THAT(std::string(out[r].error.message()),
                ::testing::ContainsRegex("aggregated at [A-Za-z][A-Za-z0-9]* \\(node [0-9]+\\), "
                                         "root [A-Za-z][A-Za-z0-9]* \\(node"))
        << out[r].error;
  }
  std::printf("  %d of %zu ranks ended with an error, the others exact\n", failed, out.size());
}

// A restart that hits mid-operation, on an event: as chunk 30 of the
// fourth operation reaches `node` (S2's DATA, or the root's PARTIAL),
// `restart` runs. With 1% loss on every hop, so results are sometimes lost
// right around the restart (the case a restart cannot always recover from).
void RestartMidOperation(testing::Cluster& cluster, topology::NodeId node, wire::MessageType type,
                         const std::function<void()>& restart) {
  const absl::Duration timeout = absl::Seconds(2);
  uint32_t hit_op = 0;
  cluster.fabric().SetTrigger(
      {.at = node, .match = ChunkOf(4, 30, type), .fault = [&](const wire::FrameView& v) {
         hit_op = v.header.op_seq;
         restart();
       }});
  const std::vector<Outcome> out = RunRanks(cluster, 60);
  ASSERT_TRUE(cluster.fabric().fired()) << "the restart never happened";
  // The restart came while operation 4 was in flight: the frame that
  // triggered it carried one of its chunks, which its sender cannot have
  // finished without.
  EXPECT_EQ(hit_op, 4u);
  ExpectExactOrClearError(out, timeout, 60);
}

TEST(Failures, ASwitchRestartEndsExactOrWithAClearError) {
  testing::Cluster cluster(Options(absl::Seconds(2), 0.01));
  const topology::NodeId s2 = *cluster.topology().Find("S2");
  RestartMidOperation(cluster, s2, wire::MessageType::kData,
                      [&] { ASSERT_TRUE(cluster.fabric().RestartSwitch(s2).ok()); });
}

TEST(Failures, ARootRestartEndsExactOrWithAClearError) {
  testing::Cluster cluster(Options(absl::Seconds(2), 0.01));
  RestartMidOperation(cluster, cluster.root_config().node, wire::MessageType::kPartial,
                      [&] { cluster.RestartRoot(); });
}

// A second program on a job whose switches and root still hold the first
// run's slots (docs/worker.md, "One run per job"). The first run did what
// the second does, so the second's chunks match complete copies, which
// answer them as retransmissions with the first run's sums. Create's fence
// comes back with the first run's nonces: every rank's Create fails, naming
// the job, before the program's first operation.
TEST(Failures, ASecondRunOnTheSameSwitchesFailsAtCreateNeverWithOldSums) {
  testing::ClusterOptions o;
  o.comm.engine.timeout = absl::Seconds(2);
  testing::Cluster cluster(o);
  const std::string dir = ::testing::TempDir() + "/second_run_store";
  std::filesystem::remove_all(dir);
  std::vector<absl::Status> first = cluster.Rejoin(o.comm, dir);
  for (int r = 0; r < cluster.size(); ++r) ASSERT_TRUE(first[r].ok()) << first[r];
  for (const Outcome& out : RunRanks(cluster, 1)) {
    EXPECT_EQ(out.completed, 1) << out.error;
    EXPECT_EQ(out.wrong, 0);
  }
  std::vector<absl::Status> second = cluster.Rejoin(o.comm, dir);
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_EQ(second[r].code(), absl::StatusCode::kFailedPrecondition) << second[r];
    EXPECT_THAT(second[r].message(), ::testing::HasSubstr(absl::StrFormat("rank %d job 3", r)));
    EXPECT_THAT(second[r].message(), ::testing::HasSubstr("another run's sum"));
  }
}

// The remedy: switches that start over (restarted, or given a new job's
// tables) and a root that reloads (grid-root's SIGHUP) between the runs.
// With the root on two threads (RootLanes), the second run's fence passes
// and its sums are exact, and the root's counters go on.
TEST(Failures, ASecondRunAfterRestartingTheSwitchesAndReloadingTheRootIsExact) {
  testing::ClusterOptions o;
  o.comm.engine.timeout = absl::Seconds(2);
  o.root_threads = 2;
  testing::Cluster cluster(o);
  const std::string dir = ::testing::TempDir() + "/reloaded_run_store";
  std::filesystem::remove_all(dir);
  std::vector<absl::Status> first = cluster.Rejoin(o.comm, dir);
  for (int r = 0; r < cluster.size(); ++r) ASSERT_TRUE(first[r].ok()) << first[r];
  for (const Outcome& out : RunRanks(cluster, 1)) EXPECT_EQ(out.wrong, 0);
  const uint64_t completed = cluster.root_stats().completed;
  ASSERT_GT(completed, 0u);
  ASSERT_TRUE(cluster.RestartSwitchesAndReloadRoot().ok());
  std::vector<absl::Status> second = cluster.Rejoin(o.comm, dir);
  for (int r = 0; r < cluster.size(); ++r) ASSERT_TRUE(second[r].ok()) << second[r];
  for (const Outcome& out : RunRanks(cluster, 1)) {
    EXPECT_EQ(out.completed, 1) << out.error;
    EXPECT_EQ(out.wrong, 0);
  }
  EXPECT_GT(cluster.root_stats().completed, completed);
}

// When the first run went on long enough to reuse every copy, the second
// run's chunks are older than what the copies hold: the switches drop them
// as stale. The ranks read the switches' drop counts from the store, so the
// fence ends within a second or two, naming the switch, whatever the
// timeout (30 s here).
TEST(Failures, ASecondRunAfterALongFirstOneFailsFastAtCreate) {
  testing::ClusterOptions o;
  o.comm.engine.timeout = absl::Seconds(30);
  testing::Cluster cluster(o);
  const std::string dir = ::testing::TempDir() + "/long_first_run_store";
  std::filesystem::remove_all(dir);
  std::vector<absl::Status> first = cluster.Rejoin(o.comm, dir);
  for (int r = 0; r < cluster.size(); ++r) ASSERT_TRUE(first[r].ok()) << first[r];
  // 65 chunks an operation, 64 slots: three operations use every copy.
  for (const Outcome& out : RunRanks(cluster, 3)) {
    EXPECT_EQ(out.completed, 3) << out.error;
    EXPECT_EQ(out.wrong, 0);
  }
  const absl::Time start = absl::Now();
  std::vector<absl::Status> second = cluster.Rejoin(o.comm, dir);
  const absl::Duration took = absl::Now() - start;
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_EQ(second[r].code(), absl::StatusCode::kFailedPrecondition) << second[r];
    EXPECT_THAT(second[r].message(), ::testing::HasSubstr("as stale")) << second[r];
    EXPECT_THAT(std::string(second[r].message()), ::testing::ContainsRegex("grid-switch S[0-9]"))
        << second[r];
    EXPECT_THAT(second[r].message(), ::testing::HasSubstr("earlier run of this job"));
  }
  EXPECT_LT(took, absl::Seconds(5));
  std::printf("  the second run's Create failed after %s\n", absl::FormatDuration(took).c_str());
}

// The same where the switches and the root write no status (started from
// files, P4 switches): nothing says why the fence's chunk goes unanswered,
// but once every rank's heartbeat shows it has issued the fence, it fails
// after kFenceGraceUnseen (10 s), not after its 60 s timeout.
TEST(Failures, ASecondRunAfterALongFirstOneFailsInBoundedTimeWithoutNodeStatus) {
  testing::ClusterOptions o;
  o.comm.engine.timeout = absl::Seconds(60);
  o.report_nodes = false;
  testing::Cluster cluster(o);
  const std::string dir = ::testing::TempDir() + "/long_first_run_silent_store";
  std::filesystem::remove_all(dir);
  std::vector<absl::Status> first = cluster.Rejoin(o.comm, dir);
  for (int r = 0; r < cluster.size(); ++r) ASSERT_TRUE(first[r].ok()) << first[r];
  for (const Outcome& out : RunRanks(cluster, 3)) EXPECT_EQ(out.wrong, 0);
  const absl::Time start = absl::Now();
  std::vector<absl::Status> second = cluster.Rejoin(o.comm, dir);
  const absl::Duration took = absl::Now() - start;
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_EQ(second[r].code(), absl::StatusCode::kFailedPrecondition) << second[r];
    EXPECT_THAT(second[r].message(), ::testing::HasSubstr("and no sum came in 10s")) << second[r];
  }
  EXPECT_LT(took, absl::Seconds(15));
  std::printf("  the second run's Create failed after %s\n", absl::FormatDuration(took).c_str());
}

// A rank on another host than the plan gives it (its frames come from
// another address): its switch drops them as bad_source, the job stalls,
// and once every rank has issued the operation and nothing has answered
// for api::kDropStall, every rank fails naming the switch and the reason.
TEST(Failures, ARankOnTheWrongHostIsNamedOnceTheJobStalls) {
  testing::ClusterOptions o;
  o.comm.engine.timeout = absl::Seconds(30);
  testing::Cluster cluster(o);
  const std::string dir = ::testing::TempDir() + "/wrong_host_store";
  std::filesystem::remove_all(dir);
  const absl::Time start = absl::Now();
  std::vector<absl::Status> joined = cluster.Rejoin(o.comm, dir, [](host_config::WorkerConfig& w) {
    if (w.rank == 2) w.ip += 100;
  });
  const absl::Duration took = absl::Now() - start;
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_EQ(joined[r].code(), absl::StatusCode::kFailedPrecondition) << joined[r];
    EXPECT_THAT(std::string(joined[r].message()),
                ::testing::ContainsRegex("grid-switch S[0-9] drops job 3's frames as bad_source"))
        << joined[r];
  }
  EXPECT_LT(took, absl::Seconds(5));
  std::printf("  every Create failed after %s\n", absl::FormatDuration(took).c_str());
}

// Every link of `node` down: nothing reaches it or leaves it.
void Isolate(testing::Cluster& cluster, topology::NodeId node) {
  for (const topology::Link& l : cluster.topology().links()) {
    if (l.a == node || l.b == node) cluster.fabric().SetLinkDown(l.a, l.b, true);
  }
}

// A node dies mid-run (its links go dark and its status in the store stops
// moving, or says it ended): every rank's operation fails within a few
// seconds, naming the node, not after its 30 s timeout.
std::vector<Outcome> KillMidRun(testing::Cluster& cluster, topology::NodeId node,
                                wire::MessageType type, const std::string& name, bool ended) {
  const std::string dir = ::testing::TempDir() + "/kill_" + name + "_store";
  std::filesystem::remove_all(dir);
  CommunicatorOptions c;
  c.engine.timeout = absl::Seconds(30);
  std::vector<absl::Status> joined = cluster.Rejoin(c, dir);
  for (int r = 0; r < cluster.size(); ++r) EXPECT_TRUE(joined[r].ok()) << joined[r];
  cluster.fabric().SetTrigger({.at = node,
                               .match = ChunkOf(4, 10, type),
                               .fault = [&](const wire::FrameView&) { Isolate(cluster, node); }});
  // The process is gone: from another thread, since the trigger runs inside
  // the fabric, which the node's reporter reads.
  std::thread killer([&] {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!cluster.fabric().fired() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    cluster.StopReporting(name, ended);
  });
  std::vector<Outcome> out = RunRanks(cluster, 20);
  killer.join();
  EXPECT_TRUE(cluster.fabric().fired()) << name << " never died";
  return out;
}

void ExpectNamed(const std::vector<Outcome>& out, const std::string& who) {
  for (size_t r = 0; r < out.size(); ++r) {
    EXPECT_EQ(out[r].wrong, 0) << "rank " << r;
    EXPECT_EQ(out[r].error.code(), absl::StatusCode::kUnavailable) << out[r].error;
    EXPECT_THAT(out[r].error.message(), ::testing::HasSubstr(who)) << out[r].error;
    EXPECT_THAT(out[r].error.message(), ::testing::HasSubstr(absl::StrFormat("rank %d job 3", r)));
    EXPECT_LT(out[r].error_after, absl::Seconds(5)) << "rank " << r << ": " << out[r].error;
  }
  std::printf("  rank 0: %s after %s\n", std::string(out[0].error.message()).c_str(),
              absl::FormatDuration(out[0].error_after).c_str());
}

TEST(Failures, ASwitchThatDiesMidRunIsNamedWithinSeconds) {
  testing::Cluster cluster(Options(absl::Seconds(30)));
  const topology::NodeId s1 = *cluster.topology().Find("S1");
  const std::vector<Outcome> out =
      KillMidRun(cluster, s1, wire::MessageType::kPartial, "S1", /*ended=*/false);
  ExpectNamed(out, "grid-switch S1 stopped answering");
}

TEST(Failures, ARootThatShutsDownMidRunIsNamedWithinSeconds) {
  testing::Cluster cluster(Options(absl::Seconds(30)));
  const host_config::RootConfig& root = cluster.root_config();
  const std::vector<Outcome> out =
      KillMidRun(cluster, root.node, wire::MessageType::kPartial, root.name, /*ended=*/true);
  ExpectNamed(out, "grid-root " + root.name + " shut down");
}

// A job published again (a new token) while the switches still hold the
// old one: they drop every frame as bad_token, and the ranks hear it from
// the switches' counts in the store within a second, with the remedy.
TEST(Failures, AJobPublishedAgainWithoutReloadingTheSwitchesNamesTheToken) {
  testing::ClusterOptions o;
  o.comm.engine.timeout = absl::Seconds(30);
  testing::Cluster cluster(o);
  const std::string dir = ::testing::TempDir() + "/republished_store";
  std::filesystem::remove_all(dir);
  const absl::Time start = absl::Now();
  std::vector<absl::Status> joined =
      cluster.Rejoin(o.comm, dir, [](host_config::WorkerConfig& w) { w.token ^= 0x1234; });
  const absl::Duration took = absl::Now() - start;
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_EQ(joined[r].code(), absl::StatusCode::kFailedPrecondition) << joined[r];
    EXPECT_THAT(std::string(joined[r].message()),
                ::testing::ContainsRegex("grid-switch S[0-9] drops job 3's frames as bad_token"))
        << joined[r];
    EXPECT_THAT(joined[r].message(), ::testing::HasSubstr("SIGHUP")) << joined[r];
  }
  EXPECT_LT(took, absl::Seconds(5));
  std::printf("  every Create failed after %s\n", absl::FormatDuration(took).c_str());
}

}  // namespace
}  // namespace grid
