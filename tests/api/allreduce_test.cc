// grid::Communicator end to end in one process: 8 ranks as threads, the
// testbed's switches running the reference pipeline on a loopback fabric,
// the root engine on its own thread.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/numerics.h"
#include "grid/switch.h"
#include "grid/wire.h"
#include "gtest/gtest.h"
#include "util/random.h"
#include "support/cluster.h"
#include "worker/engine.h"
#include "support/hand.h"

namespace grid {
namespace {

using ::testing::HasSubstr;

// Rank r's input: values of every magnitude within a chunk, a different
// pattern per rank.
std::vector<float> FloatInput(int rank, size_t n) {
  util::Random rng(1000 + rank);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(rng.Uniform(-1, 1) * std::ldexp(1.0, static_cast<int>(i % 17) - 8));
  }
  return v;
}

std::vector<int32_t> IntInput(int rank, size_t n) {
  util::Random rng(2000 + rank);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = static_cast<int32_t>(rng.Below(1u << 24)) - (1 << 23);
  return v;
}

// Checks every element of a float sum against the float64 sum of the inputs
// and the numerics bound for its chunk's shared exponent.
void ExpectFloatSum(const std::vector<std::vector<float>>& in, const std::vector<float>& out,
                    uint16_t elements, double scale = 1.0) {
  const int world = static_cast<int>(in.size());
  const size_t n = out.size();
  int bad = 0;
  for (size_t begin = 0; begin < n; begin += elements) {
    const size_t end = std::min(n, begin + elements);
    uint8_t e = 0;
    double magnitude = 0;
    for (const auto& v : in) {
      e = std::max(e, *numerics::BlockExponent({v.data() + begin, end - begin}));
    }
    for (size_t i = begin; i < end; ++i) {
      double exact = 0, abs = 0;
      for (const auto& v : in) {
        exact += v[i];
        abs += std::fabs(v[i]);
      }
      magnitude = std::max(magnitude, abs);
      const double bound = numerics::SumErrorBound(e, world, world, abs) * scale;
      if (std::fabs(out[i] - exact * scale) > bound && ++bad < 5) {
        ADD_FAILURE() << "element " << i << ": " << out[i] << " vs " << exact * scale << " (bound "
                      << bound << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

class Allreduce : public ::testing::Test {
 public:
  static testing::ClusterOptions Options() {
    testing::ClusterOptions o;
    o.comm.engine.timeout = absl::Seconds(60);
    return o;
  }
};

TEST_F(Allreduce, Float32Sizes) {
  testing::Cluster cluster(Options());
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{5000},
                   size_t{(1 << 20) + 3}}) {
    SCOPED_TRACE(n);
    std::vector<std::vector<float>> in, out(cluster.size(), std::vector<float>(n, -7.f));
    for (int r = 0; r < cluster.size(); ++r) in.push_back(FloatInput(r, n));
    cluster.Run([&](int r) {
      ASSERT_TRUE(
          cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kFloat32).ok());
    });
    ExpectFloatSum(in, out[0], 64);
    for (int r = 1; r < cluster.size(); ++r) {
      ASSERT_EQ(out[r], out[0]) << "rank " << r << " differs from rank 0";
    }
  }
}

TEST_F(Allreduce, Int32IsExact) {
  testing::Cluster cluster(Options());
  for (size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{(1 << 20) + 3}}) {
    SCOPED_TRACE(n);
    std::vector<std::vector<int32_t>> in, out(cluster.size(), std::vector<int32_t>(n));
    for (int r = 0; r < cluster.size(); ++r) in.push_back(IntInput(r, n));
    cluster.Run([&](int r) {
      ASSERT_TRUE(cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kInt32).ok());
    });
    std::vector<int32_t> expected(n, 0);
    for (const auto& v : in) {
      for (size_t i = 0; i < n; ++i) expected[i] += v[i];
    }
    for (int r = 0; r < cluster.size(); ++r) ASSERT_EQ(out[r], expected) << "rank " << r;
  }
}

TEST_F(Allreduce, SixteenBitTypes) {
  testing::Cluster cluster(Options());
  const size_t n = 1000;
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(type));
    std::vector<std::vector<float>> wide(cluster.size());
    std::vector<std::vector<uint16_t>> in(cluster.size(), std::vector<uint16_t>(n)),
        out(cluster.size(), std::vector<uint16_t>(n));
    for (int r = 0; r < cluster.size(); ++r) {
      const std::vector<float> f = FloatInput(r, n);
      ASSERT_TRUE(numerics::NarrowFromFloat(type, f.data(), n, in[r].data()).ok());
      wide[r].resize(n);
      ASSERT_TRUE(numerics::WidenToFloat(type, in[r].data(), n, wide[r].data()).ok());
    }
    cluster.Run([&](int r) {
      ASSERT_TRUE(cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, type).ok());
    });
    std::vector<float> got(n);
    ASSERT_TRUE(numerics::WidenToFloat(type, out[0].data(), n, got.data()).ok());
    // The float sum is within its bound; narrowing adds at most half an ulp
    // of the 16-bit type (8 bits of mantissa for bf16, 11 for fp16).
    const int bits = type == DataType::kBFloat16 ? 8 : 11;
    for (size_t i = 0; i < n; ++i) {
      double exact = 0;
      for (const auto& v : wide) exact += v[i];
      const double tol = std::ldexp(std::fabs(exact), -bits) + 1e-3;
      ASSERT_NEAR(got[i], exact, tol) << "element " << i;
    }
    for (int r = 1; r < cluster.size(); ++r) ASSERT_EQ(out[r], out[0]);
  }
}

TEST_F(Allreduce, InPlaceAndAverage) {
  testing::Cluster cluster(Options());
  const size_t n = 777;
  std::vector<std::vector<float>> in, buf;
  for (int r = 0; r < cluster.size(); ++r) in.push_back(FloatInput(r, n));
  buf = in;
  cluster.Run([&](int r) {
    ASSERT_TRUE(cluster.comm(r)
                    .AllReduce(buf[r].data(), buf[r].data(), n, DataType::kFloat32, ReduceOp::kSum,
                               {.average = true})
                    .ok());
  });
  ExpectFloatSum(in, buf[3], 64, 1.0 / cluster.size());
  std::vector<std::vector<int32_t>> ints(cluster.size(), std::vector<int32_t>(n));
  for (int r = 0; r < cluster.size(); ++r) std::iota(ints[r].begin(), ints[r].end(), r * 8);
  cluster.Run([&](int r) {
    ASSERT_TRUE(
        cluster.comm(r).AllReduce(ints[r].data(), ints[r].data(), n, DataType::kInt32).ok());
  });
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(ints[5][i], 8 * static_cast<int32_t>(i) + 8 * 28);
}

TEST_F(Allreduce, ConcurrentOperations) {
  testing::Cluster cluster(Options());
  const int kOps = 6;
  const size_t n = 3000;
  std::vector<std::vector<std::vector<int32_t>>> in(cluster.size()), out(cluster.size());
  for (int r = 0; r < cluster.size(); ++r) {
    for (int k = 0; k < kOps; ++k) {
      in[r].push_back(IntInput(r * 100 + k, n + k));
      out[r].emplace_back(n + k);
    }
  }
  cluster.Run([&](int r) {
    std::vector<Work> work;
    for (int k = 0; k < kOps; ++k) {
      auto w = cluster.comm(r).AllReduceAsync(in[r][k].data(), out[r][k].data(), n + k,
                                              DataType::kInt32);
      ASSERT_TRUE(w.ok()) << w.status();
      work.push_back(*w);
    }
    for (Work& w : work) ASSERT_TRUE(w.Wait(absl::Seconds(60)).ok());
    EXPECT_TRUE(work.back().Test());
  });
  for (int k = 0; k < kOps; ++k) {
    std::vector<int32_t> expected(n + k, 0);
    for (int r = 0; r < cluster.size(); ++r) {
      for (size_t i = 0; i < n + k; ++i) expected[i] += in[r][k][i];
    }
    for (int r = 0; r < cluster.size(); ++r) ASSERT_EQ(out[r][k], expected) << r << " " << k;
  }
}

TEST_F(Allreduce, SmallTensorsInAGroupAreFused) {
  testing::Cluster cluster(Options());
  const int kOps = 20;
  std::vector<std::vector<std::vector<int32_t>>> in(cluster.size()), out(cluster.size());
  for (int r = 0; r < cluster.size(); ++r) {
    for (int k = 0; k < kOps; ++k) {
      in[r].push_back(IntInput(r * 31 + k, 10 + k));
      out[r].emplace_back(10 + k);
    }
  }
  cluster.Run([&](int r) {
    Communicator& c = cluster.comm(r);
    ASSERT_TRUE(c.GroupStart().ok());
    std::vector<Work> work;
    for (int k = 0; k < kOps; ++k) {
      work.push_back(
          *c.AllReduceAsync(in[r][k].data(), out[r][k].data(), 10 + k, DataType::kInt32));
    }
    ASSERT_TRUE(c.GroupEnd().ok());
    for (Work& w : work) ASSERT_TRUE(w.Wait(absl::Seconds(60)).ok());
    EXPECT_EQ(c.stats().fused_operations, static_cast<uint64_t>(kOps));
  });
  for (int k = 0; k < kOps; ++k) {
    std::vector<int32_t> expected(10 + k, 0);
    for (int r = 0; r < cluster.size(); ++r) {
      for (int i = 0; i < 10 + k; ++i) expected[i] += in[r][k][i];
    }
    for (int r = 0; r < cluster.size(); ++r) ASSERT_EQ(out[r][k], expected);
  }
}

// Float operations of one group, each too large to fuse, are chained: the
// first one's last pool of data chunks agrees the exponents of the second's
// first chunks, which sends no probes. The second has fewer chunks than the
// pool: they all propose for the third's first chunks, and the third probes
// only the rest of its first pool. Magnitudes differ by 2^22 between the
// operations and by 2^4 steps between chunks, so an exponent agreed for the
// wrong chunk shows in the sums.
TEST_F(Allreduce, GroupedFloatOperationsChainTheirExponents) {
  auto o = Options();
  o.comm.engine.fusion_bytes = 0;
  testing::Cluster cluster(o);
  const uint32_t pool = o.slots;
  const std::vector<size_t> chunks = {pool + 36, 30, pool + 6};
  const std::vector<double> scale = {std::ldexp(1.0, -12), std::ldexp(1.0, 10), 1.0};
  std::vector<std::vector<std::vector<float>>> in(3), out(3);
  for (size_t k = 0; k < 3; ++k) {
    const size_t n = chunks[k] * o.elements - 5;
    for (int r = 0; r < cluster.size(); ++r) {
      in[k].push_back(FloatInput(r + 10 * static_cast<int>(k), n));
      // Chunks of one operation differ too (by 2^4 steps), so a proposal
      // taken for another chunk of the same operation shows as well.
      for (size_t i = 0; i < n; ++i) {
        const int step = 4 * static_cast<int>((i / o.elements) % 7);
        in[k].back()[i] = static_cast<float>(in[k].back()[i] * scale[k] * std::ldexp(1.0, step));
      }
      out[k].emplace_back(n);
    }
  }
  cluster.Run([&](int r) {
    Communicator& c = cluster.comm(r);
    ASSERT_TRUE(c.GroupStart().ok());
    std::vector<Work> work;
    for (size_t k = 0; k < 3; ++k) {
      work.push_back(*c.AllReduceAsync(in[k][r].data(), out[k][r].data(), in[k][r].size(),
                                       DataType::kFloat32));
    }
    ASSERT_TRUE(c.GroupEnd().ok());
    for (Work& w : work) ASSERT_TRUE(w.Wait(absl::Seconds(60)).ok());
    // First sends: a pool of probes for the first operation, none for the
    // second, a pool less the second's chunks for the third, and every data
    // chunk.
    const CommunicatorStats s = c.stats();
    EXPECT_EQ(s.packets_sent - s.retransmissions,
              pool + chunks[0] + chunks[1] + (pool - chunks[1]) + chunks[2]);
  });
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    ExpectFloatSum(in[k], out[k][0], o.elements);
    for (int r = 1; r < cluster.size(); ++r) ASSERT_EQ(out[k][r], out[k][0]) << "rank " << r;
  }
}

// Chained operations of fewer chunks than slots, with empty ones between
// them (5, 0, 3, 0 and 7 chunks): the 5-chunk operation proposes for all of
// the 3-chunk one, which proposes for the 7-chunk one's first 3, 5 and 7
// stream positions ahead, so in another slot and, with three progress
// threads, another lane. The empty ones have nothing to propose with.
TEST_F(Allreduce, SmallChainedOperationsAgreeAcrossSlotsAndLanes) {
  auto o = Options();
  o.comm.engine.fusion_bytes = 0;
  o.comm.engine.threads = 3;
  testing::Cluster cluster(o);
  ASSERT_GT(o.slots, 7u);
  const std::vector<size_t> chunks = {5, 0, 3, 0, 7};
  std::vector<std::vector<std::vector<float>>> in(chunks.size()), out(chunks.size());
  for (size_t k = 0; k < chunks.size(); ++k) {
    const size_t n = chunks[k] > 0 ? chunks[k] * o.elements - 3 : 0;
    for (int r = 0; r < cluster.size(); ++r) {
      in[k].push_back(FloatInput(r + 10 * static_cast<int>(k), n));
      // Magnitudes differ between operations and chunks, so an exponent
      // agreed for another chunk shows in the sums.
      for (size_t i = 0; i < n; ++i) {
        const int step = 9 * static_cast<int>(k) + 3 * static_cast<int>(i / o.elements) - 20;
        in[k].back()[i] = std::ldexp(in[k].back()[i], step);
      }
      out[k].emplace_back(n);
    }
  }
  cluster.Run([&](int r) {
    Communicator& c = cluster.comm(r);
    ASSERT_TRUE(c.GroupStart().ok());
    std::vector<Work> work;
    for (size_t k = 0; k < chunks.size(); ++k) {
      work.push_back(*c.AllReduceAsync(in[k][r].data(), out[k][r].data(), in[k][r].size(),
                                       DataType::kFloat32));
    }
    ASSERT_TRUE(c.GroupEnd().ok());
    for (Work& w : work) ASSERT_TRUE(w.Wait(absl::Seconds(60)).ok());
    // First sends: 5 probes and 5 data chunks, 3 data chunks, 4 probes and
    // 7 data chunks.
    const CommunicatorStats s = c.stats();
    EXPECT_EQ(s.packets_sent - s.retransmissions, 5u + 5 + 3 + 4 + 7);
  });
  for (size_t k = 0; k < chunks.size(); ++k) {
    SCOPED_TRACE(k);
    ExpectFloatSum(in[k], out[k][0], o.elements);
    for (int r = 1; r < cluster.size(); ++r) ASSERT_EQ(out[k][r], out[k][0]) << "rank " << r;
  }
}

TEST_F(Allreduce, SurvivesLossDuplicationAndReordering) {
  auto o = Options();
  o.impairment = {0.01, 0.01, 0.01};
  o.comm.engine.rto = absl::Milliseconds(5);
  testing::Cluster cluster(o);
  const size_t n = 64 * 2000;
  std::vector<std::vector<int32_t>> in, out(cluster.size(), std::vector<int32_t>(n));
  std::vector<std::vector<float>> fin, fout(cluster.size(), std::vector<float>(n));
  for (int r = 0; r < cluster.size(); ++r) {
    in.push_back(IntInput(r, n));
    fin.push_back(FloatInput(r, n));
  }
  cluster.Run([&](int r) {
    ASSERT_TRUE(cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kInt32).ok());
    ASSERT_TRUE(
        cluster.comm(r).AllReduce(fin[r].data(), fout[r].data(), n, DataType::kFloat32).ok());
  });
  std::vector<int32_t> expected(n, 0);
  for (const auto& v : in) {
    for (size_t i = 0; i < n; ++i) expected[i] += v[i];
  }
  uint64_t retransmissions = 0;
  for (int r = 0; r < cluster.size(); ++r) {
    ASSERT_EQ(out[r], expected) << "rank " << r;
    ASSERT_EQ(fout[r], fout[0]) << "rank " << r;
    retransmissions += cluster.comm(r).stats().retransmissions;
  }
  ExpectFloatSum(fin, fout[0], 64);
  const testing::FabricStats f = cluster.fabric().stats();
  EXPECT_GT(f.lost, 0u);
  EXPECT_GT(f.duplicated, 0u);
  EXPECT_GT(f.reordered, 0u);
  EXPECT_GT(retransmissions, 0u);
  // The window rule holds under loss, duplication and reordering: no switch
  // ever sees a newer chunk meet a copy mid-aggregation. The Tofino program
  // relies on it (docs/switch.md, "Tofino": a collision there would leave
  // its member register ahead of the copy).
  int switches = 0;
  for (const planner::Aggregator& a : planner::Aggregators(cluster.plan())) {
    auto counters = cluster.fabric().SwitchCounters(a.node);
    ASSERT_TRUE(counters.ok()) << counters.status();
    EXPECT_EQ(counters->drops[static_cast<int>(sw::Drop::kCollision)], 0u) << "switch " << a.node;
    EXPECT_GT(counters->jobs.begin()->second.data, 0u);
    ++switches;
  }
  EXPECT_GT(switches, 0);
}

// An ATP job, best effort, on `topology` with 1% loss, duplication and
// reordering on every hop.
testing::ClusterOptions BestEffortOptions(const char* topology) {
  auto o = Allreduce::Options();
  o.topology = topology;
  o.planner = "atp";
  o.planner_options.atp_best_effort = true;
  o.impairment = {0.01, 0.01, 0.01};
  o.comm.engine.rto = absl::Milliseconds(5);
  return o;
}

// Two int32 allreduces of n elements on every rank, every element checked.
void AllReduceTwiceExactly(testing::Cluster& cluster, size_t n) {
  std::vector<std::vector<int32_t>> in, out(cluster.size(), std::vector<int32_t>(n));
  for (int r = 0; r < cluster.size(); ++r) in.push_back(IntInput(r, n));
  cluster.Run([&](int r) {
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kInt32).ok());
    }
  });
  std::vector<int32_t> expected(n, 0);
  for (const auto& v : in) {
    for (size_t i = 0; i < n; ++i) expected[i] += v[i];
  }
  for (int r = 0; r < cluster.size(); ++r) ASSERT_EQ(out[r], expected) << "rank " << r;
}

// ATP as it behaves (docs/switch.md, "Best effort"): switches whose
// aggregation capacity C_s binds pass whole chunks on to the root, which
// completes them from the members' DATA. Under loss and duplication every
// sum stays exact, and both paths are taken.
TEST_F(Allreduce, BestEffortSwitchesPassChunksOnAndSumsStayExact) {
  // 0.5 Mbps everywhere, S1 too: the starting burst of credit aggregates
  // the first chunks, and most of the rest must be passed on to the root,
  // however fast the build runs.
  testing::Cluster cluster(BestEffortOptions("testbed:cap=fixed:0.0005"));
  ASSERT_TRUE(cluster.plan().best_effort);
  AllReduceTwiceExactly(cluster, 64 * 1500);
  uint64_t passed = 0, aggregated = 0;
  for (const planner::Aggregator& a : planner::Aggregators(cluster.plan())) {
    auto counters = cluster.fabric().SwitchCounters(a.node);
    ASSERT_TRUE(counters.ok()) << counters.status();
    const sw::JobCounters& jc = counters->jobs.begin()->second;
    passed += jc.passed;
    aggregated += jc.data;
  }
  const root::RootStats& root = cluster.StopRoot();
  EXPECT_GT(passed, 0u);
  EXPECT_GT(aggregated, 0u);
  EXPECT_GT(root.passed, 0u);
  EXPECT_LE(root.passed, passed);  // the root took no more than was passed on
}

// ATP's second level: S2 and S3 have almost no capacity and pass their
// chunks on; S1, the root's ToR, has plenty and completes them as their
// proxy (docs/switch.md, "Best effort"), so the root gets one partial per
// chunk from S1 for each of them and no member's DATA.
TEST_F(Allreduce, PsSideTorCompletesTheChunksBestEffortSwitchesPassOn) {
  testing::Cluster cluster(BestEffortOptions("testbed:cap.S2=0.0005,cap.S3=0.0005"));
  AllReduceTwiceExactly(cluster, 64 * 1500);
  auto counters = [&](const char* name) {
    auto c = cluster.fabric().SwitchCounters(*cluster.topology().Find(name));
    EXPECT_TRUE(c.ok()) << c.status();
    return c->jobs.begin()->second;
  };
  const sw::JobCounters s1 = counters("S1"), s2 = counters("S2"), s3 = counters("S3");
  const root::RootStats& root = cluster.StopRoot();
  EXPECT_GT(s2.passed_chunks + s3.passed_chunks, 0u);
  EXPECT_GT(s1.proxied, 0u);
  EXPECT_EQ(s1.passed, 0u);  // S1 had the capacity for every passed chunk
  EXPECT_GT(root.proxied, 0u);
  EXPECT_EQ(root.passed, 0u);
}

// A switch aggregates no faster than its C_s (docs/switch.md, "Capacity").
// S2 gets 4 Mbps, far below what its three workers offer even in a
// sanitizer build; the job is strict, so DATA beyond the credit is dropped
// and resent. The rate of DATA aggregated at S2 over the whole operation,
// in wire bits as the credit counts them, stays within C_s + 5% once the
// starting burst is taken off; and C_s binds (data was refused).
TEST_F(Allreduce, AggregationRateAtASwitchStaysWithinItsCapacity) {
  constexpr double kCapacityGbps = 0.004;
  auto o = Options();
  o.topology = absl::StrFormat("testbed:cap.S2=%g", kCapacityGbps);
  o.planner = "switchml";
  o.comm.engine.rto = absl::Milliseconds(5);
  testing::Cluster cluster(o);
  const topology::NodeId s2 = *cluster.topology().Find("S2");
  ASSERT_DOUBLE_EQ(cluster.switches().at(s2).capacity_gbps, kCapacityGbps);
  // About 1.5 s of S2's capacity: 3 members' DATA of n / 64 chunks.
  const size_t n = 64 * 800;
  std::vector<std::vector<int32_t>> in, out(cluster.size(), std::vector<int32_t>(n));
  for (int r = 0; r < cluster.size(); ++r) in.push_back(IntInput(r, n));
  const absl::Time start = absl::Now();
  cluster.Run([&](int r) {
    ASSERT_TRUE(cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kInt32).ok());
  });
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::vector<int32_t> expected(n, 0);
  for (const auto& v : in) {
    for (size_t i = 0; i < n; ++i) expected[i] += v[i];
  }
  for (int r = 0; r < cluster.size(); ++r) ASSERT_EQ(out[r], expected) << "rank " << r;
  auto counters = cluster.fabric().SwitchCounters(s2);
  ASSERT_TRUE(counters.ok()) << counters.status();
  const sw::JobCounters& jc = counters->jobs.begin()->second;
  const double bits = 8.0 * static_cast<double>(jc.data) * wire::FrameBytes(o.elements);
  const double gbps =
      (bits - sw::Pipeline::CapacityBurstBits(cluster.switches().at(s2))) / (seconds * 1e9);
  EXPECT_GT(counters->drops[static_cast<int>(sw::Drop::kOverCapacity)], 0u);
  EXPECT_GE(jc.data, 3u * (n / 64));  // every member's share was aggregated here
  EXPECT_LE(gbps, kCapacityGbps * 1.05)
      << jc.data << " DATA aggregated at S2 in " << seconds << " s";
}

// Heavy random loss: most chunks lose a packet somewhere on every attempt,
// and the operation still ends exact. (The rules that keep it fast are
// tested one by one in loss_test.cc: with TCP's, this operation took 52 s
// instead of 1.4 s; the timeout here leaves room for sanitizer builds.)
TEST_F(Allreduce, FivePercentLossDuplicationAndReordering) {
  auto o = Options();
  o.impairment = {0.05, 0.05, 0.05};
  o.comm.engine.rto = absl::Milliseconds(5);
  o.comm.engine.timeout = absl::Seconds(60);
  testing::Cluster cluster(o);
  const size_t n = 64 * 2000;
  std::vector<std::vector<int32_t>> in, out(cluster.size(), std::vector<int32_t>(n));
  for (int r = 0; r < cluster.size(); ++r) in.push_back(IntInput(r, n));
  std::vector<absl::Status> status(cluster.size());
  cluster.Run([&](int r) {
    status[r] = cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kInt32);
  });
  std::vector<int32_t> expected(n, 0);
  for (const auto& v : in) {
    for (size_t i = 0; i < n; ++i) expected[i] += v[i];
  }
  for (int r = 0; r < cluster.size(); ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    ASSERT_EQ(out[r], expected) << "rank " << r;
  }
  EXPECT_GT(cluster.fabric().stats().lost, 0u);
}

TEST_F(Allreduce, ADeadRankEndsEveryOtherRankWithAnError) {
  auto o = Options();
  o.comm.engine.timeout = absl::Seconds(1);
  // With a store, ranks publish heartbeats and a timeout names the ranks
  // that did not contribute.
  o.comm.bootstrap.store = "file:" + ::testing::TempDir() + "/dead_rank_store";
  testing::Cluster cluster(o);
  const size_t n = 64 * 100;
  cluster.Kill(2);
  std::vector<absl::Status> status(cluster.size());
  std::vector<absl::Duration> took(cluster.size());
  cluster.Run([&](int r) {
    if (r == 2) return;
    std::vector<int32_t> v(n, r);
    const absl::Time start = absl::Now();
    status[r] = cluster.comm(r).AllReduce(v.data(), v.data(), n, DataType::kInt32);
    took[r] = absl::Now() - start;
  });
  for (int r = 0; r < cluster.size(); ++r) {
    if (r == 2) continue;
    EXPECT_EQ(status[r].code(), absl::StatusCode::kDeadlineExceeded) << status[r];
    EXPECT_THAT(status[r].message(), HasSubstr("allreduce 1"));
    // Killing a rank aborts its communicator, whose heartbeat says so.
    EXPECT_THAT(status[r].message(), HasSubstr("ended (aborted or shut down) 2 (at allreduce 0)"));
    EXPECT_LT(took[r], absl::Seconds(2)) << "rank " << r;  // 2x the timeout
  }
  // A failed communicator refuses further operations with the reason.
  int32_t x = 1;
  EXPECT_FALSE(cluster.comm(0).AllReduce(&x, &x, 1, DataType::kInt32).ok());
}

// Operations that share memory (one writes what the other reads or
// writes). In a group, which runs its operations at once, the second is
// refused, on every rank alike; outside a group the later waits for the
// earlier, as a stream would order them. Both used to run at once: a
// tensor given twice to torch's all_reduce_coalesced came back summed twice,
// overlapping views came back wrong (an outside trial).
TEST_F(Allreduce, OperationsOnTheSameMemoryAreRefusedInAGroupAndOrderedOutside) {
  testing::Cluster cluster(Options());
  const int n = 1000;
  std::vector<std::vector<int32_t>> z(cluster.size()), b(cluster.size());
  std::vector<absl::Status> twice(cluster.size()), view(cluster.size()), first(cluster.size());
  cluster.Run([&](int r) {
    Communicator& c = cluster.comm(r);
    z[r].assign(n, r + 1);
    b[r].assign(2 * n, r + 1);
    ASSERT_TRUE(c.GroupStart().ok());
    auto w = c.AllReduceAsync(z[r].data(), z[r].data(), n, DataType::kInt32);
    twice[r] = c.AllReduceAsync(z[r].data(), z[r].data(), n, DataType::kInt32).status();
    auto wb = c.AllReduceAsync(b[r].data(), b[r].data(), n, DataType::kInt32);
    view[r] =
        c.AllReduceAsync(b[r].data() + n / 2, b[r].data() + n / 2, n, DataType::kInt32).status();
    ASSERT_TRUE(c.GroupEnd().ok());
    first[r] = w.ok() && wb.ok() ? w->Wait() : absl::InternalError("not submitted");
    if (first[r].ok()) first[r] = wb->Wait();
  });
  const int sum = cluster.size() * (cluster.size() + 1) / 2;
  for (int r = 0; r < cluster.size(); ++r) {
    EXPECT_EQ(twice[r].code(), absl::StatusCode::kInvalidArgument) << twice[r];
    EXPECT_THAT(twice[r].message(), HasSubstr("uses memory that this allreduce writes or reads"));
    EXPECT_EQ(view[r].code(), absl::StatusCode::kInvalidArgument) << view[r];
    ASSERT_TRUE(first[r].ok()) << first[r];
    EXPECT_EQ(z[r], std::vector<int32_t>(n, sum));
    EXPECT_EQ(b[r][n - 1], sum);
    EXPECT_EQ(b[r][n], r + 1);
  }
  // Outside a group: two in-place operations on one buffer in flight at
  // once, then one reading another's result; the second of each waits.
  for (int round = 0; round < 5; ++round) {
    std::vector<std::vector<int32_t>> x(cluster.size()), y(cluster.size(), std::vector<int32_t>(n));
    cluster.Run([&](int r) {
      Communicator& c = cluster.comm(r);
      x[r].assign(n, r + round);
      auto w1 = c.AllReduceAsync(x[r].data(), x[r].data(), n, DataType::kInt32);
      auto w2 = c.AllReduceAsync(x[r].data(), x[r].data(), n, DataType::kInt32);
      auto w3 = c.AllReduceAsync(x[r].data(), y[r].data(), n, DataType::kInt32);
      ASSERT_TRUE(w1.ok() && w2.ok() && w3.ok());
      ASSERT_TRUE(w1->Wait().ok() && w2->Wait().ok() && w3->Wait().ok());
    });
    const int once = sum - cluster.size() + cluster.size() * round;
    for (int r = 0; r < cluster.size(); ++r) {
      ASSERT_EQ(x[r], std::vector<int32_t>(n, once * cluster.size())) << "round " << round;
      ASSERT_EQ(y[r], std::vector<int32_t>(n, once * cluster.size() * cluster.size()));
    }
  }
}

TEST_F(Allreduce, BadArgumentsAreRejected) {
  testing::Cluster cluster(Options());
  float a[4] = {1, 2, 3, 4};
  Communicator& c = cluster.comm(0);
  EXPECT_EQ(c.AllReduce(nullptr, a, 4, DataType::kFloat32).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.AllReduce(a, a + 1, 3, DataType::kFloat32).message(), HasSubstr("overlap"));
  EXPECT_EQ(c.AllReduce(a, a, 4, static_cast<DataType>(9)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.GroupEnd().code(), absl::StatusCode::kFailedPrecondition);
  // Counts no buffer can have (a negative int made size_t): refused, where
  // 2^62 used to throw std::length_error from the staging buffer and SIZE_MAX
  // grew the process until the kernel killed it. Nothing is touched.
  for (size_t count : {size_t{1} << 62, ~size_t{0}, (size_t{1} << 46) + 1}) {
    for (DataType type : {DataType::kInt32, DataType::kFloat16}) {
      const absl::Status s = c.AllReduce(a, a, count, type);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << count << ": " << s;
      EXPECT_THAT(s.message(), HasSubstr("more than the 2^47 bytes"));
    }
  }
  EXPECT_EQ(a[0], 1);
  c.Abort();
  EXPECT_EQ(c.AllReduce(a, a, 4, DataType::kFloat32).code(), absl::StatusCode::kAborted);
}

TEST_F(Allreduce, NonFiniteInputFailsTheOperationOnEveryRankAndNoneHangs) {
  testing::Cluster cluster(Options());
  const size_t n = 200;
  std::vector<std::vector<float>> in, out(cluster.size(), std::vector<float>(n));
  for (int r = 0; r < cluster.size(); ++r) in.push_back(FloatInput(r, n));
  in[4][130] = std::nanf("");
  std::vector<absl::Status> status(cluster.size());
  cluster.Run([&](int r) {
    status[r] = cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kFloat32);
  });
  EXPECT_THAT(status[4].message(), HasSubstr("elements 128-191: element 2 is NaN"));
  // Rank 4 proposed kNotFiniteExponent for that block: every other rank
  // fails the operation too, naming the block, where it used to end OK
  // with a saturated value and zeros there. Nobody hangs: rank 4 still
  // contributed.
  for (int r = 0; r < cluster.size(); ++r) {
    if (r == 4) continue;
    EXPECT_EQ(status[r].code(), absl::StatusCode::kInvalidArgument) << r << ": " << status[r];
    EXPECT_THAT(status[r].message(), HasSubstr("elements 128-191: a rank's input there is NaN"))
        << r;
  }
  // The communicators go on: the next operation is exact everywhere.
  std::vector<std::vector<float>> again;
  for (int r = 0; r < cluster.size(); ++r) again.push_back(FloatInput(r, n));
  cluster.Run([&](int r) {
    status[r] = cluster.comm(r).AllReduce(again[r].data(), out[r].data(), n, DataType::kFloat32);
  });
  for (int r = 0; r < cluster.size(); ++r) ASSERT_TRUE(status[r].ok()) << status[r];
  ExpectFloatSum(again, out[0], 64);
}

// float16 and bfloat16 take the same path (widened to float32, then
// staged): an Inf or a NaN in one rank's input fails the operation on every
// rank, naming the block, and the next operation is exact.
TEST_F(Allreduce, NonFiniteSixteenBitInputFailsTheOperationOnEveryRank) {
  testing::Cluster cluster(Options());
  const size_t n = 200;
  struct Case {
    DataType type;
    uint16_t bits;  // the non-finite value rank 2 holds at element 70
    const char* what;
  };
  for (const Case c : {Case{DataType::kFloat16, 0x7c00, "element 6 is +Inf"},
                       Case{DataType::kFloat16, 0xfe00, "element 6 is NaN"},
                       Case{DataType::kBFloat16, 0xff80, "element 6 is -Inf"},
                       Case{DataType::kBFloat16, 0x7fc0, "element 6 is NaN"}}) {
    SCOPED_TRACE(absl::StrFormat("%s %#x", DataTypeName(c.type), c.bits));
    std::vector<std::vector<uint16_t>> in(cluster.size(), std::vector<uint16_t>(n)),
        out(cluster.size(), std::vector<uint16_t>(n));
    for (int r = 0; r < cluster.size(); ++r) {
      const std::vector<float> f = FloatInput(r, n);
      ASSERT_TRUE(numerics::NarrowFromFloat(c.type, f.data(), n, in[r].data()).ok());
    }
    in[2][70] = c.bits;
    std::vector<absl::Status> status(cluster.size());
    cluster.Run([&](int r) {
      status[r] = cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, c.type);
    });
    EXPECT_EQ(status[2].code(), absl::StatusCode::kInvalidArgument) << status[2];
    EXPECT_THAT(status[2].message(), HasSubstr(std::string("elements 64-127: ") + c.what));
    for (int r = 0; r < cluster.size(); ++r) {
      if (r == 2) continue;
      EXPECT_EQ(status[r].code(), absl::StatusCode::kInvalidArgument) << r << ": " << status[r];
      EXPECT_THAT(status[r].message(), HasSubstr("elements 64-127: a rank's input there is NaN"))
          << r;
    }
    in[2][70] = in[2][69];
    cluster.Run([&](int r) {
      status[r] = cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, c.type);
    });
    for (int r = 0; r < cluster.size(); ++r) ASSERT_TRUE(status[r].ok()) << r << ": " << status[r];
    for (int r = 1; r < cluster.size(); ++r) EXPECT_EQ(out[r], out[0]);
  }
}

// The same when the mark rides on a data result, not on a probe: a NaN in
// chunk 100 of an operation (proposed with chunk 36's data, a pool of 64
// ahead), and one in the first chunk of a chained second operation
// (proposed with the first's last data). Only the operation with the NaN
// fails, on every rank, and the other is exact.
TEST_F(Allreduce, NonFiniteMarksRideOnDataResultsAndChainsToo) {
  auto o = Options();
  o.comm.engine.fusion_bytes = 0;  // two wire operations, chained
  testing::Cluster cluster(o);
  const size_t n = 64 * 130;
  std::vector<std::vector<float>> a, b, out_a(cluster.size(), std::vector<float>(n)),
      out_b(cluster.size(), std::vector<float>(n));
  for (int r = 0; r < cluster.size(); ++r) {
    a.push_back(FloatInput(r, n));
    b.push_back(FloatInput(r + 20, n));
  }
  for (int bad_op : {0, 1}) {
    SCOPED_TRACE(bad_op);
    std::vector<std::vector<float>> in_a = a, in_b = b;
    if (bad_op == 0) {
      in_a[2][64 * 100 + 5] = std::numeric_limits<float>::infinity();
    } else {
      in_b[6][3] = std::nanf("");
    }
    std::vector<absl::Status> sa(cluster.size()), sb(cluster.size());
    cluster.Run([&](int r) {
      Communicator& c = cluster.comm(r);
      ASSERT_TRUE(c.GroupStart().ok());
      auto wa = c.AllReduceAsync(in_a[r].data(), out_a[r].data(), n, DataType::kFloat32);
      auto wb = c.AllReduceAsync(in_b[r].data(), out_b[r].data(), n, DataType::kFloat32);
      ASSERT_TRUE(c.GroupEnd().ok());
      ASSERT_TRUE(wa.ok() && wb.ok());
      sa[r] = wa->Wait(absl::Seconds(60));
      sb[r] = wb->Wait(absl::Seconds(60));
    });
    const std::vector<absl::Status>& bad = bad_op == 0 ? sa : sb;
    const std::vector<absl::Status>& good = bad_op == 0 ? sb : sa;
    const int culprit = bad_op == 0 ? 2 : 6;
    const char* elements = bad_op == 0 ? "elements 6400-6463" : "elements 0-63";
    for (int r = 0; r < cluster.size(); ++r) {
      EXPECT_EQ(bad[r].code(), absl::StatusCode::kInvalidArgument) << r << ": " << bad[r];
      EXPECT_THAT(bad[r].message(), HasSubstr(elements)) << r;
      if (r != culprit) {
        EXPECT_THAT(bad[r].message(), HasSubstr("a rank's input there")) << r;
      }
      ASSERT_TRUE(good[r].ok()) << r << ": " << good[r];
    }
    ExpectFloatSum(bad_op == 0 ? in_b : in_a, bad_op == 0 ? out_b[0] : out_a[0], 64);
  }
}

}  // namespace
}  // namespace grid

namespace grid {
namespace {

// A block of zeros has exponent 0, which is an exponent like any other.
TEST(AllreduceEdges, ZeroBlocksAndZeroTensors) {
  testing::Cluster cluster(Allreduce::Options());
  const size_t n = 64 * 300;
  std::vector<std::vector<float>> in, out(cluster.size(), std::vector<float>(n, -1.f));
  for (int r = 0; r < cluster.size(); ++r) {
    in.push_back(FloatInput(r, n));
    // Chunks 0, 5, 70 and 299 are zero on every rank: probes (first pool)
    // and data proposals (later chunks) both carry exponent 0.
    for (size_t c : {0, 5, 70, 299}) std::fill_n(in[r].begin() + c * 64, 64, 0.f);
  }
  cluster.Run([&](int r) {
    ASSERT_TRUE(cluster.comm(r).AllReduce(in[r].data(), out[r].data(), n, DataType::kFloat32).ok());
  });
  ExpectFloatSum(in, out[0], 64);
  for (size_t c : {0, 5, 70, 299}) EXPECT_EQ(out[0][c * 64 + 7], 0.f);
  std::vector<std::vector<float>> zeros(cluster.size(), std::vector<float>(1000, 0.f));
  cluster.Run([&](int r) {
    ASSERT_TRUE(
        cluster.comm(r).AllReduce(zeros[r].data(), zeros[r].data(), 1000, DataType::kFloat32).ok());
  });
  EXPECT_EQ(zeros[3], std::vector<float>(1000, 0.f));
}

TEST(AllreduceEdges, GroupsRejectBlockingCallsAndEndWithAbort) {
  testing::Cluster cluster(Allreduce::Options());
  Communicator& c = cluster.comm(0);
  float x[4] = {1, 2, 3, 4};
  ASSERT_TRUE(c.GroupStart().ok());
  EXPECT_EQ(c.AllReduce(x, x, 4, DataType::kFloat32).code(), absl::StatusCode::kFailedPrecondition);
  auto w = c.AllReduceAsync(x, x, 4, DataType::kFloat32);
  ASSERT_TRUE(w.ok());
  c.Abort();
  // The grouped operation ends with the abort instead of waiting forever.
  EXPECT_EQ(w->Wait(absl::Seconds(5)).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(c.GroupEnd().code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace grid

namespace grid::worker {
namespace {

// The Tofino program tags a chunk with op_seq[10:0] ++ chunk[19:0] ++ h
// (docs/switch.md, "Tofino"): no wire operation may have 2^20 chunks or
// more, so a larger operation is split into segments with op_seqs of their
// own.
TEST(PrepareWireOps, SegmentsOperationsAtTheTofinoTagLimit) {
  constexpr uint16_t kElements = 64;
  auto op = std::make_shared<internal::OpState>();
  op->type = DataType::kFloat32;
  op->count = (size_t{kMaxChunksPerSegment} + 5) * kElements + 7;
  static float dummy;  // never read: preparing only sets pointers
  op->send = &dummy;
  op->recv = &dummy;
  uint32_t op_seq = 10;
  const auto wire = testing::Prepared({op}, kElements, 256, 0, op_seq);
  ASSERT_EQ(wire.size(), 2u);
  EXPECT_EQ(wire[0]->chunks, kMaxChunksPerSegment);
  EXPECT_EQ(wire[1]->chunks, 6u);
  EXPECT_NE(wire[0]->op_seq, wire[1]->op_seq);
  // The second segment is chained: the first one's data proposes its
  // exponents, and it has no probes.
  EXPECT_EQ(wire[0]->probes, 256u);
  EXPECT_EQ(wire[0]->next, wire[1]);
  EXPECT_EQ(wire[1]->probes, 0u);
  EXPECT_EQ(wire[0]->count + wire[1]->count, op->count);
  EXPECT_EQ(op->pending.load(), 2);
}

// An operation to prepare, not to run: fused ones are staged (copied), so
// its input is real; nothing is written to its output.
std::shared_ptr<internal::OpState> PreparedOp(DataType type, size_t count) {
  static std::vector<float> zeros(4096);  // more than any test here prepares
  auto op = std::make_shared<internal::OpState>();
  op->type = type;
  op->count = count;
  op->send = zeros.data();
  op->recv = zeros.data();
  return op;
}

// Where each data chunk's exponent is proposed: by a probe, or by a data
// chunk of its own or an earlier chained operation (WireOp::AheadOf). Every
// data chunk of a float operation gets exactly one proposal, sent earlier
// in the stream and at most a pool before it; returns the distances.
std::vector<uint64_t> ProposalDistances(const std::vector<std::shared_ptr<WireOp>>& wire,
                                        uint32_t pool) {
  std::map<const WireOp*, uint64_t> base;  // stream position of each one's first chunk
  uint64_t pos = 0;
  for (const auto& w : wire) {
    base[w.get()] = pos;
    pos += w->total();
  }
  auto data_pos = [&](const WireOp* w, uint32_t j) { return base[w] + w->probes + j; };
  std::map<std::pair<const WireOp*, uint32_t>, int> proposals;
  std::vector<uint64_t> distances;
  for (const auto& w : wire) {
    if (!w->quantized()) continue;
    for (uint32_t i = 0; i < w->probes; ++i) {
      ++proposals[{w.get(), w->probe_base + i}];
      distances.push_back(data_pos(w.get(), w->probe_base + i) - (base[w.get()] + i));
    }
    for (uint32_t j = 0; j < w->chunks; ++j) {
      const WireOp::Ahead a = w->AheadOf(j, pool);
      if (a.op == nullptr) continue;
      ++proposals[{a.op, a.chunk}];
      distances.push_back(data_pos(a.op, a.chunk) - data_pos(w.get(), j));
    }
  }
  for (const auto& w : wire) {
    if (!w->quantized()) continue;
    for (uint32_t j = 0; j < w->chunks; ++j) {
      EXPECT_EQ((proposals[{w.get(), j}]), 1) << "op_seq " << w->op_seq << " chunk " << j;
    }
  }
  for (uint64_t d : distances) {
    EXPECT_GE(d, 1u);
    EXPECT_LE(d, pool);
  }
  return distances;
}

// Chained operations of fewer chunks than slots: a proposal comes from the
// previous operation's data chunk fewer than P positions before the chunk it
// is for, so from another slot (and, with several progress threads, another
// lane). An empty operation in between has nothing to propose with; the
// chain passes over it.
TEST(PrepareWireOps, ChainsPassOverEmptyOperationsAcrossSlots) {
  constexpr uint16_t kElements = 64;
  constexpr uint32_t kPool = 64;
  std::vector<std::shared_ptr<internal::OpState>> ops;
  for (size_t chunks : {5, 0, 3, 7})
    ops.push_back(PreparedOp(DataType::kFloat32, chunks * kElements));
  uint32_t op_seq = 0;
  const auto wire = testing::Prepared(ops, kElements, kPool, 0, op_seq);
  ASSERT_EQ(wire.size(), 4u);
  EXPECT_EQ(wire[0]->probes, 5u);
  EXPECT_EQ(wire[0]->next, wire[2]);
  EXPECT_EQ(wire[1]->total(), 0u);
  // The 5-chunk operation proposes for all 3 of the next; those 3 for the
  // first 3 of the last, which probes for its other 4.
  EXPECT_EQ(wire[2]->probe_base, 3u);
  EXPECT_EQ(wire[2]->probes, 0u);
  EXPECT_EQ(wire[2]->next, wire[3]);
  EXPECT_EQ(wire[3]->probe_base, 3u);
  EXPECT_EQ(wire[3]->probes, 4u);
  // Positions: probes 0-4, data 5-9; data 10-12; probes 13-16, data 17-23.
  // The 5-chunk operation's chunk 0 (5) proposes for the next's chunk 0
  // (10), which proposes for the last's chunk 0 (17).
  const std::vector<uint64_t> d = ProposalDistances(wire, kPool);
  EXPECT_EQ(std::count(d.begin(), d.end(), 5), 3 + 5);  // 3 chained, 5 probes
  EXPECT_EQ(std::count(d.begin(), d.end(), 7), 3 + 4);
}

// The Tofino program tells a member's chunks in a copy apart by 11 bits of
// op_seq (docs/switch.md, "Tofino"). A copy is used every 2P stream
// positions, so op_seq may advance at most 2P over any 2P positions: an
// operation takes only the op_seqs it sends. Random groups of float, int32
// and empty operations, chained or not, of fewer or more chunks than slots;
// the stream stays in (op_seq, chunk) order and every proposal is made.
TEST(PrepareWireOps, OpSeqNeverRunsAheadOfTheStream) {
  constexpr uint16_t kElements = 4;
  constexpr uint32_t kPool = 8;
  util::Random rng(77);
  std::vector<std::pair<uint32_t, uint32_t>> stream;  // (op_seq, chunk) by position
  uint32_t op_seq = 0;
  for (int group = 0; group < 200; ++group) {
    std::vector<std::shared_ptr<internal::OpState>> ops;
    const size_t n = 1 + rng.Below(12);
    for (size_t k = 0; k < n; ++k) {
      constexpr size_t kChunks[] = {0, 1, 1, 1, 2, 3, kPool - 1, kPool, kPool + 1, 2 * kPool + 3};
      const size_t chunks = kChunks[rng.Below(std::size(kChunks))];
      const DataType type = rng.Below(4) == 0 ? DataType::kInt32 : DataType::kFloat32;
      ops.push_back(PreparedOp(type, chunks * kElements - (chunks > 0 ? rng.Below(kElements) : 0)));
    }
    const size_t fusion = rng.Below(3) == 0 ? 2 * kElements * sizeof(float) : 0;
    const auto wire = testing::Prepared(ops, kElements, kPool, fusion, op_seq);
    ProposalDistances(wire, kPool);
    for (const auto& w : wire) {
      for (uint32_t i = 0; i < w->total(); ++i) stream.push_back({w->At(i).op_seq, w->At(i).chunk});
    }
  }
  ASSERT_GT(stream.size(), 4 * kPool);
  for (size_t p = 1; p < stream.size(); ++p) {
    ASSERT_LT(stream[p - 1], stream[p]) << "position " << p;
    if (p >= 2 * kPool) {
      ASSERT_LE(stream[p].first - stream[p - 2 * kPool].first, 2 * kPool) << "position " << p;
    }
  }
}

// A model of the Tofino program's member_check (p4/tna/grid.p4): per copy,
// the tag of the member's last chunk there, op_seq[10:0] ++ chunk[19:0] ++
// header-only; a chunk counts as new only if its tag is later in 32-bit
// serial order. Walks a rank's stream and returns the first position whose
// chunk the switch would take for one it had seen, or -1.
int64_t FirstMisorderedTag(const std::vector<std::shared_ptr<WireOp>>& wire, uint32_t pool) {
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> last;  // (slot, copy) -> tag
  uint64_t pos = 0;
  for (const auto& w : wire) {
    for (uint32_t i = 0; i < w->total(); ++i, ++pos) {
      const auto [probe, op_seq, chunk] = w->At(i);
      const uint32_t tag = (op_seq & 0x7ff) << 21 | (chunk & 0xfffff) << 1 | (probe ? 1 : 0);
      const auto copy =
          std::pair{static_cast<uint32_t>(pos % pool), static_cast<uint32_t>(pos / pool % 2)};
      if (auto it = last.find(copy);
          it != last.end() && static_cast<int32_t>(tag - it->second) <= 0) {
        return static_cast<int64_t>(pos);
      }
      last[copy] = tag;
    }
  }
  return -1;
}

// The worst streams for the tag: one-chunk float operations, each submitted
// alone (a probe and a data chunk, two op_seqs) or chained in one group (one
// each), with empty operations between them. The P4 targets' largest pool
// keeps every tag in order; one slot more does not.
TEST(PrepareWireOps, TheTofinoTagOrdersEveryChunkUpToTheLargestP4Pool) {
  constexpr uint16_t kElements = 64;
  for (const uint32_t pool : {sw::kP4MaxPool, sw::kP4MaxPool + 1}) {
    SCOPED_TRACE(pool);
    uint32_t op_seq = 0;
    std::vector<std::shared_ptr<WireOp>> alone;
    for (uint32_t k = 0; k < 3 * pool; ++k) {
      for (auto& w : testing::Prepared({PreparedOp(DataType::kFloat32, kElements)}, kElements, pool, 0,
                                    op_seq)) {
        alone.push_back(std::move(w));
      }
    }
    EXPECT_EQ(FirstMisorderedTag(alone, pool) < 0, pool <= sw::kP4MaxPool) << "one at a time";
    // In one group, every third operation empty or none.
    for (const uint32_t empty_every : {0u, 3u}) {
      std::vector<std::shared_ptr<internal::OpState>> group;
      for (uint32_t k = 0; k < 6 * pool; ++k) {
        const bool empty = empty_every > 0 && k % empty_every == 1;
        group.push_back(PreparedOp(DataType::kFloat32, empty ? 0 : kElements));
      }
      op_seq = 0;
      const auto chained = testing::Prepared(group, kElements, pool, 0, op_seq);
      EXPECT_EQ(FirstMisorderedTag(chained, pool) < 0, pool <= sw::kP4MaxPool)
          << "chained, empty every " << empty_every;
    }
  }
}

}  // namespace
}  // namespace grid::worker
