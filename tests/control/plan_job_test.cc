// control::PlanJob, the one way a job is planned (grid-controller and rank 0
// as the controller): the planner, the frame width for the switches that
// run, the pool within their limits and the round trip, the token.
#include <filesystem>

#include "api/controller.h"
#include "gmock/gmock.h"
#include "grid/control.h"
#include "grid/store.h"
#include "gtest/gtest.h"

namespace grid::control {
namespace {

using ::testing::HasSubstr;

topology::Topology Testbed() { return *topology::GenerateTopology("testbed"); }

JobRequest Request(const std::string& planner = "grid") {
  JobRequest r;
  r.workers = 8;
  r.planner = planner;
  r.params.elements = 0;
  r.params.slots = 0;
  return r;
}

TEST(PlanJob, ChoosesFramesForTheSwitchesThatRun) {
  const topology::Topology t = Testbed();
  auto grid = PlanJob(t, Request());
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->params.elements, 352);  // a 1500-byte MTU, grid-switch
  EXPECT_EQ(grid->params.slots, 128u);
  EXPECT_NE(grid->params.token, 0u);
  EXPECT_EQ(grid->plan.workers.size(), 8u);
  JobRequest p4 = Request();
  p4.switches = SwitchKind::kP4;
  p4.path_mtu = 9000;
  auto bmv2 = PlanJob(t, p4);
  ASSERT_TRUE(bmv2.ok()) << bmv2.status();
  EXPECT_EQ(bmv2->params.elements, wire::kDefaultElements);  // what the P4 programs parse
  // A round trip long enough that the bandwidth-delay product wants more
  // than the P4 programs can order: the pool stops at their limit.
  p4.rtt = absl::Milliseconds(50);
  auto far = PlanJob(t, p4);
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_EQ(far->params.slots, sw::kP4MaxPool);
  JobRequest g = Request();
  g.rtt = absl::Milliseconds(50);
  auto grid_far = PlanJob(t, g);
  ASSERT_TRUE(grid_far.ok()) << grid_far.status();
  EXPECT_GT(grid_far->params.slots, sw::kP4MaxPool);
  EXPECT_GT(grid_far->bdp_bytes, grid->bdp_bytes);
}

TEST(PlanJob, WhatTheRequestNamesIsKept) {
  JobRequest r = Request("switchml");
  r.params.elements = 64;
  r.params.slots = 300;
  r.params.token = 77;
  r.params.job_id = 9;
  auto j = PlanJob(Testbed(), r);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->params.elements, 64);
  EXPECT_EQ(j->params.slots, 300u);
  EXPECT_EQ(j->params.token, 77u);
  EXPECT_EQ(j->params.job_id, 9);
  EXPECT_EQ(j->plan.planner, "switchml");
}

TEST(PlanJob, PlannerOptionsReachThePlanner) {
  JobRequest r = Request("atp");
  r.planner_options.atp_best_effort = true;
  auto best_effort = PlanJob(Testbed(), r);
  ASSERT_TRUE(best_effort.ok()) << best_effort.status();
  EXPECT_TRUE(best_effort->plan.best_effort);
  r.planner_options.atp_best_effort = false;
  auto reserve = PlanJob(Testbed(), r);
  ASSERT_TRUE(reserve.ok()) << reserve.status();
  EXPECT_FALSE(reserve->plan.best_effort);
}

TEST(PlanJob, BadRequestsNameWhatIsWrong) {
  JobRequest none = Request();
  none.workers = 0;
  EXPECT_THAT(PlanJob(Testbed(), none).status().message(), HasSubstr("workers"));
  EXPECT_THAT(PlanJob(Testbed(), Request("nope")).status().message(), HasSubstr("nope"));
  JobRequest root = Request();
  root.root = "W99";
  EXPECT_THAT(PlanJob(Testbed(), root).status().message(), HasSubstr("W99"));
  JobRequest mtu = Request();
  mtu.path_mtu = 60;
  EXPECT_THAT(PlanJob(Testbed(), mtu).status().message(), HasSubstr("MTU 60"));
}

// Rank 0 as the controller publishes the job PlanJob plans for the same
// request: its options are a request by another name.
TEST(PlanJob, RankZeroPublishesTheSameJob) {
  const std::string dir = ::testing::TempDir() + "/plan_job_rank0";
  std::filesystem::remove_all(dir);
  BootstrapOptions b;
  b.rank = 0;
  b.world_size = 8;
  b.store = "file:" + dir;
  ControlOptions c;
  c.topology = "testbed";
  c.planner = "atp";
  c.p4_switches = true;
  c.rtt = absl::Milliseconds(50);
  c.job.token = 5;
  auto served = api::ControlJob(b, c);
  ASSERT_TRUE(served.ok()) << served.status();
  auto store = OpenStore(b.store);
  ASSERT_TRUE(store.ok());
  auto w3 = host_config::ParseWorkerConfigJson(*(*store)->Get("grid/worker/3", absl::Seconds(1)));
  ASSERT_TRUE(w3.ok()) << w3.status();
  JobRequest r = Request("atp");
  r.planner_options.atp_best_effort = true;  // rank 0's default, as grid-controller's
  r.switches = SwitchKind::kP4;
  r.rtt = absl::Milliseconds(50);
  r.params.token = 5;
  auto j = PlanJob(Testbed(), r);
  ASSERT_TRUE(j.ok()) << j.status();
  auto want = BuildWorkerConfigs(Testbed(), j->plan, j->params);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(host_config::WorkerConfigToJson(*w3), host_config::WorkerConfigToJson((*want)[3]));
  EXPECT_EQ(w3->elements, wire::kDefaultElements);
  EXPECT_EQ(w3->slots, sw::kP4MaxPool);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace grid::control
