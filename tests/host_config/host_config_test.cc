// The host configs (grid/host_config.h): what each worker and the root run
// with, round trip through their JSON, and the field a bad one names.
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/store.h"
#include "gtest/gtest.h"

namespace grid {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(HostConfigs, RoundTripAndNameTheFieldAtFault) {
  const topology::Topology topo = *topology::GenerateTopology("testbed");
  const planner::Plan plan = *(*planner::PlannerRegistry::WithBuiltins().Create("grid"))
                                  ->Plan(topo, *planner::MakeJob(topo, 8, std::nullopt, 1));
  host_config::JobParams params;
  params.token = 0x7e57;
  auto workers = control::BuildWorkerConfigs(topo, plan, params);
  auto root = control::BuildRootConfig(topo, plan, params);
  ASSERT_TRUE(workers.ok() && root.ok());
  ASSERT_EQ(workers->size(), 8u);
  for (const auto& w : *workers) {
    // Errors name nodes as the topology does (S1, not node 1).
    EXPECT_EQ(w.aggregator_name, topo.node(w.aggregator).name);
    EXPECT_EQ(w.root_name, topo.node(w.root).name);
    // The nodes a rank watches: every switch its chunks can pass (the
    // testbed's three), then the root.
    EXPECT_THAT(w.nodes, ::testing::UnorderedElementsAre("S1", "S2", "S3", "PS"));
    EXPECT_EQ(w.nodes.back(), "PS");
    const std::string json = host_config::WorkerConfigToJson(w);
    auto back = host_config::ParseWorkerConfigJson(json);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(host_config::WorkerConfigToJson(*back), json);
  }
  const std::string json = host_config::RootConfigToJson(*root);
  auto back = host_config::ParseRootConfigJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(host_config::RootConfigToJson(*back), json);
  EXPECT_EQ(back->name, "PS");
  // The names are optional: a config written without them still parses.
  host_config::WorkerConfig unnamed = (*workers)[0];
  unnamed.aggregator_name.clear();
  unnamed.root_name.clear();
  const std::string unnamed_json = host_config::WorkerConfigToJson(unnamed);
  EXPECT_EQ(unnamed_json.find("_name"), std::string::npos);
  auto parsed = host_config::ParseWorkerConfigJson(unnamed_json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->aggregator_name.empty());
  std::string no_list = host_config::WorkerConfigToJson((*workers)[0]);
  no_list.replace(no_list.find("\"nodes\": ["), 10, "\"nodes\": 7, \"x\": [");
  EXPECT_THAT(host_config::ParseWorkerConfigJson(no_list).status().message(),
              HasSubstr("nodes: must be a list of strings"));
  std::string bad = host_config::WorkerConfigToJson((*workers)[0]);
  bad.replace(bad.find("\"slots\": 256"), 12, "\"slots\": -1");
  EXPECT_THAT(host_config::ParseWorkerConfigJson(bad).status().message(), HasSubstr("slots"));
  EXPECT_THAT(host_config::ParseRootConfigJson("{\"format\":\"grid-root/1\"}").status().message(),
              HasSubstr("job_id: missing"));
  EXPECT_THAT(host_config::ParseWorkerConfigJson("[1,2]").status().message(),
              HasSubstr("not a JSON object"));
  // ATP best effort: the root lists each switch's members, who may come
  // to it passed on.
  planner::PlannerOptions atp_options;
  atp_options.atp_best_effort = true;
  const planner::Plan atp = *(*planner::PlannerRegistry::WithBuiltins().Create("atp", atp_options))
                                 ->Plan(topo, *planner::MakeJob(topo, 8, std::nullopt, 1));
  ASSERT_TRUE(atp.best_effort);
  auto atp_root = control::BuildRootConfig(topo, atp, params);
  ASSERT_TRUE(atp_root.ok()) << atp_root.status();
  size_t members = 0;
  for (const auto& c : atp_root->contributors) members += c.members.size();
  EXPECT_EQ(members, 8u);  // every worker aggregates at its ToR
  const std::string atp_json = host_config::RootConfigToJson(*atp_root);
  auto atp_back = host_config::ParseRootConfigJson(atp_json);
  ASSERT_TRUE(atp_back.ok()) << atp_back.status();
  EXPECT_EQ(host_config::RootConfigToJson(*atp_back), atp_json);
  // S2's and S3's chunks may come completed by their proxy, S1 (the root's
  // ToR); S1 itself has none.
  int proxied = 0;
  for (const auto& c : atp_root->contributors) {
    if (c.proxy_ip == 0) continue;
    ++proxied;
    EXPECT_EQ(c.proxy_ip, control::NodeIp(*topo.Find("S1")));
    EXPECT_NE(c.node, *topo.Find("S1"));
  }
  EXPECT_EQ(proxied, 2);
  host_config::RootConfig bad_proxy = *atp_root;
  for (auto& c : bad_proxy.contributors) c.members.clear();
  EXPECT_THAT(
      host_config::ParseRootConfigJson(host_config::RootConfigToJson(bad_proxy)).status().message(),
      HasSubstr("proxy_ip: only on a switch with members"));
  host_config::RootConfig bad_member = *atp_root;
  bad_member.contributors[0].members[0].rank = 99;
  EXPECT_THAT(host_config::ParseRootConfigJson(host_config::RootConfigToJson(bad_member))
                  .status()
                  .message(),
              HasSubstr("contributors[0].members[0].rank"));
  // A rank among two switches' members would count twice.
  host_config::RootConfig twice = *atp_root;
  twice.contributors[1].members[0].rank = twice.contributors[0].members[0].rank;
  EXPECT_THAT(
      host_config::ParseRootConfigJson(host_config::RootConfigToJson(twice)).status().message(),
      HasSubstr("contributors[1].members[0].rank: listed twice"));
  auto atp_switches = control::BuildSwitchConfigs(topo, atp, params);
  ASSERT_TRUE(atp_switches.ok()) << atp_switches.status();
  for (const auto& [node, config] : *atp_switches) {
    EXPECT_EQ(config.capacity_gbps, topo.node(node).capacity_gbps);
    const auto& entry = config.jobs.at(params.job_id);
    if (entry.aggregate) {
      EXPECT_TRUE(entry.aggregate->best_effort);
    }
  }
}

}  // namespace
}  // namespace grid

namespace grid {
namespace {

// Rank 0 as the controller: it serves the TCP store, plans the job and
// publishes every component's config; the other ranks need only the store.

}  // namespace
}  // namespace grid
