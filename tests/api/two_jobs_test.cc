// Two jobs on the same switches (docs/security.md): different ids, tokens,
// slot pools and label ranges, one rack's worth of each on every shared
// top-of-rack switch of a k=4 fat tree. Each must be exact while the other
// runs; one job losing a rank must not stall the other; and no packet of one
// job can touch the other's slots.
#include <atomic>
#include <thread>

#include "gmock/gmock.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "gtest/gtest.h"
#include "root/engine.h"
#include "support/loopback.h"
#include "switch/fabric.h"
#include "util/random.h"

namespace grid {
namespace {

using topology::NodeId;

constexpr int kWorkers = 6;
constexpr size_t kCount = 64 * 30 + 5;

// One job of the pair: its plan, configs, root and ranks.
struct Job {
  host_config::JobParams params;
  planner::Plan plan;
  std::vector<host_config::WorkerConfig> workers;
  host_config::RootConfig root_config;
  std::unique_ptr<Transport> root_transport;
  std::unique_ptr<root::RootEngine> root;
  std::vector<std::unique_ptr<Communicator>> comms;
};

class TwoJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    topo_ = *topology::GenerateTopology("fattree:k=4");
    // Racks of two hosts: job A takes the first of each rack, job B the
    // second, so the two share every top-of-rack switch.
    std::map<NodeId, std::vector<NodeId>> racks;
    for (NodeId h : topo_.Hosts()) racks[topo_.TorOf(h)].push_back(h);
    planner::JobSpec spec[2];
    for (const auto& [tor, hosts] : racks) {
      for (int j = 0; j < 2; ++j) {
        if (spec[j].workers.size() < kWorkers) {
          spec[j].workers.push_back(hosts[j]);
        } else if (spec[j].root == topology::kNoNode) {
          spec[j].root = hosts[j];
        }
      }
    }
    std::map<NodeId, sw::SwitchConfig> switches;
    for (int j = 0; j < 2; ++j) {
      Job& job = jobs_[j];
      job.plan =
          *(*planner::PlannerRegistry::WithBuiltins().Create("switchml"))->Plan(topo_, spec[j]);
      job.params.job_id = static_cast<uint16_t>(11 + j);
      job.params.token = *control::NewToken();
      job.params.slots = 16;
      job.params.slot_base = 16 * j;    // disjoint pools
      job.params.label_base = 500 * j;  // disjoint labels
      auto configs = control::BuildSwitchConfigs(topo_, job.plan, job.params);
      ASSERT_TRUE(configs.ok()) << configs.status();
      ASSERT_TRUE(control::MergeSwitchConfigs(*configs, switches).ok());
      job.workers = *control::BuildWorkerConfigs(topo_, job.plan, job.params);
      job.root_config = *control::BuildRootConfig(topo_, job.plan, job.params);
    }
    switches_ = switches;
    fabric_ = *testing::LoopbackFabric::Create(topo_, switches, {.seed = 3});
    CommunicatorOptions o;
    o.engine.timeout = absl::Seconds(5);
    for (Job& job : jobs_) {
      job.root_transport = *fabric_->Attach(job.root_config.node);
      job.root = std::make_unique<root::RootEngine>(job.root_config, job.root_transport.get());
      for (const auto& w : job.workers) {
        job.comms.push_back(*Communicator::Create(w, *fabric_->Attach(w.node), o));
      }
    }
    root_thread_ = std::thread([this] {
      while (!stop_.load()) {
        bool any = false;
        for (Job& job : jobs_) any |= job.root->Poll();
        if (!any) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }

  void TearDown() override {
    for (Job& job : jobs_) job.comms.clear();
    stop_.store(true);
    if (root_thread_.joinable()) root_thread_.join();
  }

  // The port of switch `s` that leads to `to`.
  uint16_t PortTo(NodeId s, NodeId to) const {
    const auto adjacent = topo_.neighbors(s);
    for (size_t p = 0; p < adjacent.size(); ++p) {
      if (adjacent[p].node == to) return static_cast<uint16_t>(p);
    }
    return 0xffff;
  }

  static std::vector<int32_t> Input(int job, int rank, int iteration) {
    util::Random rng(static_cast<uint64_t>(job) * 100000 + rank * 100 + iteration);
    std::vector<int32_t> v(kCount);
    for (int32_t& x : v) x = static_cast<int32_t>(rng.Below(1u << 20));
    return v;
  }

  // Runs `iterations` allreduces on every rank of job `j`; true if each
  // ended exact (and `ok` is false for a job expected to fail).
  bool RunJob(int j, int iterations) {
    Job& job = jobs_[j];
    std::atomic<bool> exact{true};
    std::vector<std::thread> threads;
    for (int r = 0; r < kWorkers; ++r) {
      threads.emplace_back([&, r] {
        for (int it = 0; it < iterations && exact.load(); ++it) {
          std::vector<int32_t> v = Input(j, r, it);
          if (!job.comms[r]->AllReduce(v.data(), v.data(), kCount, DataType::kInt32).ok()) {
            exact.store(false);
            return;
          }
          std::vector<int32_t> want(kCount, 0);
          for (int q = 0; q < kWorkers; ++q) {
            const std::vector<int32_t> in = Input(j, q, it);
            for (size_t i = 0; i < kCount; ++i) want[i] += in[i];
          }
          if (v != want) exact.store(false);
        }
      });
    }
    for (auto& t : threads) t.join();
    return exact.load();
  }

  topology::Topology topo_;
  Job jobs_[2];
  std::map<NodeId, sw::SwitchConfig> switches_;
  std::unique_ptr<testing::LoopbackFabric> fabric_;
  std::thread root_thread_;
  std::atomic<bool> stop_{false};
};

TEST_F(TwoJobs, EachIsExactWhileTheOtherRuns) {
  // The two jobs share switches: both aggregate at the same top-of-rack
  // switches.
  int shared = 0;
  for (const auto& [node, c] : switches_) {
    shared +=
        c.jobs.count(11) && c.jobs.at(11).aggregate && c.jobs.count(12) && c.jobs.at(12).aggregate;
  }
  EXPECT_GE(shared, 2);
  bool exact[2];
  std::thread other([&] { exact[1] = RunJob(1, 5); });
  exact[0] = RunJob(0, 5);
  other.join();
  EXPECT_TRUE(exact[0]);
  EXPECT_TRUE(exact[1]);
}

TEST_F(TwoJobs, OneJobLosingARankNeverStallsTheOther) {
  // Job A's rank 2 dies at once: A's other ranks wait out their timeout.
  fabric_->Disconnect(jobs_[0].workers[2].node);
  jobs_[0].comms[2]->Abort();
  bool a_exact = true;
  std::thread a([&] { a_exact = RunJob(0, 3); });
  const absl::Time start = absl::Now();
  EXPECT_TRUE(RunJob(1, 5));
  // B ran at its own pace, not at A's timeout (5 s).
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  a.join();
  EXPECT_FALSE(a_exact);
}

// Job A's packets, whatever they claim, never reach B's slots: B's token
// and pool are B's alone.
TEST_F(TwoJobs, APacketOfOneJobNeverTouchesTheOthersSlots) {
  const Job& a = jobs_[0];
  const Job& b = jobs_[1];
  const NodeId tor = topo_.TorOf(a.workers[0].node);
  auto pipeline = sw::Pipeline::Create(switches_.at(tor));
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  auto send = [&](const host_config::WorkerConfig& w, auto edit) {
    wire::Header h;
    h.type = wire::MessageType::kData;
    h.job_id = w.job_id;
    h.job_token = w.token;
    h.rank = w.rank;
    h.agg_node = static_cast<uint16_t>(w.aggregator);
    h.path = w.up_label;
    h.next_path = w.next_path;
    h.fan_in = w.fan_in;
    h.op_seq = 1;
    h.num_elements = w.elements;
    edit(h);
    wire::FrameAddress addr;
    addr.src_ip = w.ip;
    addr.dst_ip = w.aggregator_ip;
    std::vector<uint8_t> payload(size_t{h.num_elements} * 4, 0);
    payload[3] = 1;  // element 0 = 1
    std::vector<uint8_t> f(wire::FrameBytes(h.num_elements));
    EXPECT_TRUE(wire::EncodeFrame(addr, h, payload, absl::MakeSpan(f)).ok());
    sw::Output out;
    pipeline->Process(absl::MakeSpan(f), PortTo(tor, w.node), &out);
    return out;
  };
  // A's host claims B's job with A's token, and B's job and rank with A's.
  send(a.workers[0], [&](wire::Header& h) { h.job_id = b.params.job_id; });
  send(a.workers[0], [&](wire::Header& h) {
    h.job_id = b.params.job_id;
    h.rank = b.workers[0].rank;
  });
  EXPECT_EQ(pipeline->counters().drops[static_cast<int>(sw::Drop::kBadToken)], 2u);
  // A's own job, slots past its pool (where B's pool starts in memory).
  for (uint16_t slot : {16, 17, 31}) {
    send(a.workers[0], [&](wire::Header& h) { h.slot = slot; });
  }
  EXPECT_EQ(pipeline->counters().drops[static_cast<int>(sw::Drop::kBadSlot)], 3u);
  EXPECT_EQ(pipeline->counters().jobs.at(b.params.job_id).data, 0u);
  // B's members at this switch complete B's chunk 0 with exactly their own
  // contributions.
  sw::Output last;
  int members = 0;
  for (const auto& w : b.workers) {
    if (w.aggregator != tor) continue;
    last = send(w, [](wire::Header&) {});
    ++members;
  }
  ASSERT_GT(members, 0);
  ASSERT_EQ(last.frames.size(), 1u);
  auto partial = wire::DecodeFrame(last.Bytes(last.frames[0], {}));
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(partial->header.job_id, b.params.job_id);
  EXPECT_EQ(wire::LoadElement(partial->payload, 0), members);
}

TEST(MergeSwitchConfigs, RefusesClashes) {
  const topology::Topology topo = *topology::GenerateTopology("testbed");
  const planner::Plan plan = *(*planner::PlannerRegistry::WithBuiltins().Create("switchml"))
                                  ->Plan(topo, *planner::MakeJob(topo, 8, std::nullopt, 1));
  host_config::JobParams a;
  a.token = 1;
  host_config::JobParams b = a;
  b.job_id = 2;
  auto merged = *control::BuildSwitchConfigs(topo, plan, a);
  // The same labels and pool again: both clash.
  auto status = control::MergeSwitchConfigs(*control::BuildSwitchConfigs(topo, plan, b), merged);
  EXPECT_FALSE(status.ok());
  b.label_base = 100;
  status = control::MergeSwitchConfigs(*control::BuildSwitchConfigs(topo, plan, b), merged);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("overlap"));
  b.slot_base = 256;
  EXPECT_TRUE(
      control::MergeSwitchConfigs(*control::BuildSwitchConfigs(topo, plan, b), merged).ok());
  EXPECT_FALSE(
      control::MergeSwitchConfigs(*control::BuildSwitchConfigs(topo, plan, b), merged).ok())
      << "the same job twice";
}

}  // namespace
}  // namespace grid
