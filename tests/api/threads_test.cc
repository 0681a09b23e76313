// Several progress threads per rank (EngineOptions::threads), and a root on
// several threads (root/lanes.h): each runs its lane of the slots. A rank's wire traffic does not
// depend on how many threads it has, so a job whose ranks run 1, 2, 3 or 4 threads, on a shared
// transport or a queue per thread, computes bit for bit the sums a job of
// single-threaded ranks computes, and survives loss, duplication and
// reordering the same way.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grid/numerics.h"
#include "gtest/gtest.h"
#include "support/cluster.h"
#include "util/random.h"

namespace grid {
namespace {

using ::testing::HasSubstr;

std::vector<float> FloatInput(int rank, size_t n) {
  util::Random rng(3000 + rank);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(rng.Uniform(-1, 1) * std::ldexp(1.0, static_cast<int>(i % 13) - 6));
  }
  return v;
}

std::vector<int32_t> IntInput(int rank, size_t n) {
  util::Random rng(4000 + rank);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = static_cast<int32_t>(rng.Below(1u << 24)) - (1 << 23);
  return v;
}

// What one job computes: the float sums of several sizes (fewer chunks than
// slots, where a probe and its data chunk fall in different lanes, and many
// pools' worth), an int32 sum, a fused group of small tensors, and a group
// of float tensors whose wire operations are chained (docs/worker.md,
// "Chained operations"): a large one, a small one fused on its own (fewer
// chunks than slots) and a large one, whose proposals come a pool ahead, in
// the same slot's other copy; then operations of 5, 3 and 7 chunks with
// empty ones between them, whose proposals come 5 and 7 positions ahead, in
// another slot, and lane.
struct Results {
  std::vector<std::vector<std::vector<float>>> floats;   // by size, by rank
  std::vector<std::vector<std::vector<float>>> chained;  // by rank, by tensor
  std::vector<std::vector<int32_t>> ints;                // by rank
  std::vector<std::vector<std::vector<int32_t>>> fused;  // by rank, by tensor
  uint64_t first_sends = 0;                              // packets sent, less retransmissions
  uint64_t retransmissions = 0;
  uint64_t lost = 0;  // by the fabric
};

constexpr size_t kFloatSizes[] = {1, 1000, 64 * 63 + 5, 64 * 700 + 11};
constexpr size_t kIntSize = 64 * 300 + 7;
constexpr int kFused = 12;
constexpr size_t kChainedSizes[] = {64 * 300 + 5, 64 * 30 - 3, 64 * 301,  64 * 5 - 1, 0,
                                    64 * 3,       0,           64 * 7 - 9};

Results RunJob(testing::ClusterOptions o) {
  o.comm.engine.timeout = absl::Seconds(60);
  testing::Cluster cluster(o);
  const int world = cluster.size();
  Results res;
  res.floats.resize(std::size(kFloatSizes));
  res.ints.resize(world);
  res.fused.resize(world);
  res.chained.resize(world);
  for (size_t s = 0; s < std::size(kFloatSizes); ++s) {
    res.floats[s].assign(world, std::vector<float>(kFloatSizes[s]));
  }
  cluster.Run([&](int r) {
    Communicator& c = cluster.comm(r);
    for (size_t s = 0; s < std::size(kFloatSizes); ++s) {
      const std::vector<float> in = FloatInput(r, kFloatSizes[s]);
      ASSERT_TRUE(
          c.AllReduce(in.data(), res.floats[s][r].data(), in.size(), DataType::kFloat32).ok());
    }
    const std::vector<int32_t> in = IntInput(r, kIntSize);
    res.ints[r].resize(kIntSize);
    ASSERT_TRUE(c.AllReduce(in.data(), res.ints[r].data(), kIntSize, DataType::kInt32).ok());
    std::vector<std::vector<int32_t>> small_in;
    res.fused[r].resize(kFused);
    ASSERT_TRUE(c.GroupStart().ok());
    std::vector<Work> work;
    for (int k = 0; k < kFused; ++k) {
      small_in.push_back(IntInput(r * 50 + k, 20 + k));
      res.fused[r][k].resize(20 + k);
      work.push_back(
          *c.AllReduceAsync(small_in[k].data(), res.fused[r][k].data(), 20 + k, DataType::kInt32));
    }
    ASSERT_TRUE(c.GroupEnd().ok());
    for (Work& w : work) ASSERT_TRUE(w.Wait(absl::Seconds(60)).ok());
    std::vector<std::vector<float>> chained_in;
    res.chained[r].resize(std::size(kChainedSizes));
    work.clear();
    ASSERT_TRUE(c.GroupStart().ok());
    for (size_t k = 0; k < std::size(kChainedSizes); ++k) {
      chained_in.push_back(FloatInput(r * 7 + static_cast<int>(k), kChainedSizes[k]));
      for (float& x : chained_in.back()) x = std::ldexp(x, 10 * static_cast<int>(k) - 10);
      res.chained[r][k].resize(kChainedSizes[k]);
      work.push_back(*c.AllReduceAsync(chained_in[k].data(), res.chained[r][k].data(),
                                       kChainedSizes[k], DataType::kFloat32));
    }
    ASSERT_TRUE(c.GroupEnd().ok());
    for (Work& w : work) ASSERT_TRUE(w.Wait(absl::Seconds(60)).ok());
  });
  for (int r = 0; r < world; ++r) {
    const CommunicatorStats st = cluster.comm(r).stats();
    res.first_sends += st.packets_sent - st.retransmissions;
    res.retransmissions += st.retransmissions;
    // The shortest round trip over the rank's lanes: some chunk's, so
    // shorter than the operations it was part of.
    EXPECT_GT(st.min_rtt, absl::ZeroDuration()) << "rank " << r;
    EXPECT_LT(st.min_rtt, st.operation_time) << "rank " << r;
  }
  res.lost = cluster.fabric().stats().lost;
  return res;
}

struct Case {
  const char* name;
  std::vector<uint32_t> threads;  // per rank
  bool queue_per_thread;
  uint32_t root_threads = 1;
};

class Threads : public ::testing::TestWithParam<Case> {};

TEST_P(Threads, GiveTheSumsOfSingleThreadedRanksBitForBit) {
  testing::ClusterOptions base;
  const Results one = RunJob(base);
  testing::ClusterOptions o = base;
  o.threads = GetParam().threads;
  o.queue_per_thread = GetParam().queue_per_thread;
  o.root_threads = GetParam().root_threads;
  const Results many = RunJob(o);
  for (size_t s = 0; s < std::size(kFloatSizes); ++s) {
    for (size_t r = 0; r < one.floats[s].size(); ++r) {
      ASSERT_EQ(many.floats[s][r], one.floats[s][r]) << kFloatSizes[s] << " floats, rank " << r;
    }
  }
  // The int32 sums are exact.
  std::vector<int32_t> expected(kIntSize, 0);
  for (size_t r = 0; r < one.ints.size(); ++r) {
    const std::vector<int32_t> in = IntInput(static_cast<int>(r), kIntSize);
    for (size_t i = 0; i < kIntSize; ++i) expected[i] += in[i];
  }
  for (size_t r = 0; r < many.ints.size(); ++r) {
    ASSERT_EQ(many.ints[r], expected) << "rank " << r;
    ASSERT_EQ(many.fused[r], one.fused[r]) << "rank " << r;
    ASSERT_EQ(many.chained[r], one.chained[r]) << "rank " << r;
  }
  // The same chunks went out (a stall probe may resend some, in either run).
  EXPECT_EQ(many.first_sends, one.first_sends);
}

INSTANTIATE_TEST_SUITE_P(Ranks, Threads,
                         ::testing::Values(Case{"two_shared", {2, 2, 2, 2, 2, 2, 2, 2}, false},
                                           Case{"two_queues", {2, 2, 2, 2, 2, 2, 2, 2}, true},
                                           Case{"mixed_shared", {1, 2, 3, 4, 1, 3, 2, 5}, false},
                                           Case{"mixed_queues", {1, 2, 3, 4, 1, 3, 2, 5}, true},
                                           Case{"root_only", {}, false, 3},
                                           Case{"two_and_root", {2, 2, 2, 2, 2, 2, 2, 2}, true, 2}),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(ThreadsUnderFaults, SurviveLossDuplicationAndReordering) {
  const Results clean = RunJob({});
  testing::ClusterOptions o;
  o.impairment = {0.01, 0.01, 0.01};
  o.comm.engine.rto = absl::Milliseconds(5);
  o.comm.engine.threads = 3;
  o.queue_per_thread = true;
  o.root_threads = 2;
  const Results faulty = RunJob(o);
  EXPECT_GT(faulty.lost, 0u);
  EXPECT_GT(faulty.retransmissions, 0u);
  // Integer sums are exact, so loss recovery changes no bit of any result.
  EXPECT_EQ(faulty.floats, clean.floats);
  EXPECT_EQ(faulty.ints, clean.ints);
  EXPECT_EQ(faulty.fused, clean.fused);
  EXPECT_EQ(faulty.chained, clean.chained);
}

// GRID_TRACE (EngineOptions::trace_dir) records and changes nothing: every
// rank of three progress threads writes its timeline, a track per thread,
// at shutdown, and the sums are the same bits. Under TSan (scripts/tsan.sh),
// the lanes' recorders and the writer share nothing unguarded.
TEST(ThreadsUnderFaults, TracedRanksGetTheSameSumsAndWriteTheirTimelines) {
  const Results clean = RunJob({});
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("threads_trace_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  testing::ClusterOptions o;
  o.impairment = {0.01, 0.01, 0.01};
  o.comm.engine.rto = absl::Milliseconds(5);
  o.comm.engine.threads = 3;
  o.comm.engine.trace_dir = dir.string();
  o.queue_per_thread = true;
  const Results traced = RunJob(o);
  EXPECT_EQ(traced.floats, clean.floats);
  EXPECT_EQ(traced.ints, clean.ints);
  for (int r = 0; r < 8; ++r) {
    std::ifstream in(dir / ("rank-" + std::to_string(r) + "-job3.json"));
    ASSERT_TRUE(in) << "rank " << r << " wrote no trace";
    std::stringstream text;
    text << in.rdbuf();
    for (const char* lane : {"\"lane 0\"", "\"lane 1\"", "\"lane 2\"", "\"allreduce\""}) {
      EXPECT_NE(text.str().find(lane), std::string::npos) << "rank " << r << ": " << lane;
    }
  }
  std::filesystem::remove_all(dir);
}

// Polling before sleeping (EngineOptions::busy_poll) changes when a thread
// looks at its transport, never what it sends: the same bits come back.
TEST(BusyPoll, PollingRanksGetTheSameSums) {
  const Results clean = RunJob({});
  testing::ClusterOptions o;
  o.comm.engine.busy_poll = absl::Microseconds(200);
  o.comm.engine.threads = 2;
  const Results polled = RunJob(o);
  EXPECT_EQ(polled.floats, clean.floats);
  EXPECT_EQ(polled.chained, clean.chained);
  EXPECT_EQ(polled.ints, clean.ints);
}

TEST(BusyPoll, OutOfRangeIsRefusedByName) {
  testing::ClusterOptions o;
  o.workers = 1;
  testing::Cluster cluster(o);
  for (absl::Duration d : {absl::Microseconds(-1), absl::Seconds(2)}) {
    CommunicatorOptions c;
    c.engine.busy_poll = d;
    auto comm = Communicator::Create(cluster.workers()[0],
                                     *cluster.fabric().Attach(cluster.workers()[0].node), c);
    ASSERT_FALSE(comm.ok()) << d;
    EXPECT_THAT(comm.status().message(), HasSubstr("engine.busy_poll"));
  }
}

// A rank that never sends: every lane of every other rank stops, and each
// rank's operation ends once, with the timeout, not after one timeout per
// lane.
TEST(ThreadsUnderFaults, ADeadRankEndsEveryLane) {
  testing::ClusterOptions o;
  o.comm.engine.timeout = absl::Seconds(1);
  o.comm.engine.threads = 2;
  testing::Cluster cluster(o);
  cluster.Kill(2);
  std::vector<absl::Status> status(cluster.size());
  std::vector<absl::Duration> took(cluster.size());
  cluster.Run([&](int r) {
    if (r == 2) return;
    std::vector<int32_t> v(64 * 100, r);
    const absl::Time start = absl::Now();
    status[r] = cluster.comm(r).AllReduce(v.data(), v.data(), v.size(), DataType::kInt32);
    took[r] = absl::Now() - start;
  });
  for (int r = 0; r < cluster.size(); ++r) {
    if (r == 2) continue;
    EXPECT_EQ(status[r].code(), absl::StatusCode::kDeadlineExceeded) << status[r];
    EXPECT_THAT(status[r].message(), HasSubstr(" of 2 without a result"));
    EXPECT_LT(took[r], absl::Seconds(2)) << "rank " << r;
  }
  int32_t x = 1;
  EXPECT_FALSE(cluster.comm(0).AllReduce(&x, &x, 1, DataType::kInt32).ok());
}

TEST(ThreadsOptions, OutOfRangeCountsAreRefusedByName) {
  testing::ClusterOptions o;
  o.workers = 1;
  o.slots = 32;
  testing::Cluster cluster(o);  // for its configs and fabric
  const host_config::WorkerConfig& config = cluster.workers()[0];
  for (uint32_t threads : {0u, 65u, config.slots + 1}) {
    CommunicatorOptions c;
    c.engine.threads = threads;
    auto comm = Communicator::Create(config, *cluster.fabric().Attach(config.node), c);
    ASSERT_FALSE(comm.ok()) << threads;
    EXPECT_THAT(comm.status().message(), HasSubstr("engine.threads"));
  }
  CommunicatorOptions c;
  c.engine.threads = 3;
  auto comm = Communicator::Create(config, *cluster.fabric().AttachLanes(config.node, 2), c);
  ASSERT_FALSE(comm.ok());
  EXPECT_THAT(comm.status().message(), HasSubstr("2 transports for engine.threads = 3"));
}

}  // namespace
}  // namespace grid
