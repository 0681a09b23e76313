#include "grid/topology.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace grid::topology {
namespace {

using ::testing::HasSubstr;

constexpr char kSmall[] = R"({
  "name": "small",
  "defaults": {"link_gbps": 40, "latency_us": 2},
  "switches": [
    {"name": "S1", "tier": "tor", "programmable": true, "capacity_gbps": 400, "slots": 1024},
    {"name": "S2", "tier": "core"}
  ],
  "hosts": [{"name": "A", "role": "worker"}, {"name": "B", "role": "root"}],
  "links": [
    {"a": "A", "b": "S1"},
    {"a": "S1", "b": "S2", "gbps": 100},
    {"a": "S2", "b": "B", "latency_us": 5}
  ]
})";

TEST(TopologyJson, LoadsAndRoundTrips) {
  auto topo = ParseTopologyJson(kSmall);
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->name(), "small");
  EXPECT_EQ(topo->num_nodes(), 4);
  EXPECT_EQ(topo->num_links(), 3);
  const NodeId s1 = *topo->Find("S1");
  EXPECT_TRUE(topo->node(s1).programmable);
  EXPECT_EQ(topo->node(s1).capacity_gbps, 400);
  EXPECT_EQ(topo->node(s1).slots, 1024);
  EXPECT_EQ(topo->link(0).gbps, 40);
  EXPECT_EQ(topo->link(1).gbps, 100);
  EXPECT_EQ(topo->link(2).latency_us, 5);
  EXPECT_EQ(topo->TorOf(*topo->Find("A")), s1);
  EXPECT_EQ(topo->HostsWithRole(HostRole::kRoot), std::vector<NodeId>{*topo->Find("B")});
  const std::string json = TopologyToJson(*topo);
  auto again = ParseTopologyJson(json);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(TopologyToJson(*again), json);
}

struct BadCase {
  const char* name;
  const char* json;
  const char* message;
};

class TopologyJsonError : public ::testing::TestWithParam<BadCase> {};

TEST_P(TopologyJsonError, NamesTheElement) {
  auto topo = std::string(GetParam().json) == "LEAFSPINE"
                  ? GenerateTopology("leafspine:spines=1,leaves=4096,hosts=16")
                  : ParseTopologyJson(GetParam().json);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(topo.status().message(), HasSubstr(GetParam().message));
}

#define SW(x) R"("switches": [{"name": "S1", "programmable": true, "capacity_gbps": 10})" x "]"
#define HOSTS R"("hosts": [{"name": "A"}])"
#define LINKS R"("links": [{"a": "A", "b": "S1"}])"

const BadCase kBadCases[] = {
    {"NotJson", "{", "topology JSON"},
    {"NotObject", "[]", "topology: must be an object"},
    {"UnknownTopLevel", R"({"switchs": []})", "unknown field \"switchs\""},
    {"MissingSwitches", R"({"hosts": [], "links": []})", "switches: is required"},
    {"SwitchesNotArray", R"({"switches": {}, "hosts": [], "links": []})",
     "switches: must be an array"},
    {"SwitchNotObject", R"({"switches": [3], "hosts": [], "links": []})",
     "switches[0]: must be an object"},
    {"SwitchUnknownField", "{" SW(R"(, {"name": "S2", "capcity_gbps": 1})") "," HOSTS "," LINKS "}",
     "switches[1]: unknown field \"capcity_gbps\""},
    {"SwitchNoName", R"({"switches": [{"tier": "tor"}], "hosts": [], "links": []})",
     "switches[0].name: is required"},
    {"SwitchNameNotString", R"({"switches": [{"name": 7}], "hosts": [], "links": []})",
     "switches[0].name: must be a string"},
    {"BadTier", R"({"switches": [{"name": "S", "tier": "middle"}], "hosts": [], "links": []})",
     "switches[0].tier: unknown tier \"middle\""},
    {"ProgrammableNotBool",
     R"({"switches": [{"name": "S", "programmable": "yes"}], "hosts": [], "links": []})",
     "switches[0].programmable: must be true or false"},
    {"NegativeCapacity",
     R"({"switches": [{"name": "S", "capacity_gbps": -1}], "hosts": [], "links": []})",
     "switches[0].capacity_gbps: must be >= 0"},
    {"CapacityNotNumber",
     R"({"switches": [{"name": "S", "capacity_gbps": "big"}], "hosts": [], "links": []})",
     "switches[0].capacity_gbps: must be a number"},
    {"ProgrammableWithoutCapacity",
     R"({"switches": [{"name": "S", "programmable": true}], "hosts": [], "links": []})",
     "switches[0]: switch \"S\": a programmable switch needs capacity_gbps > 0"},
    {"FractionalSlots", R"({"switches": [{"name": "S", "slots": 1.5}], "hosts": [], "links": []})",
     "switches[0].slots: must be a whole number"},
    // Found by topology_fuzz: a double beyond int32 was converted before the check.
    {"HugeSlots", R"({"switches": [{"name": "S", "slots": 8.9e110}], "hosts": [], "links": []})",
     "switches[0].slots: must be a whole number"},
    {"DuplicateName", "{" SW(R"(, {"name": "S1"})") "," HOSTS "," LINKS "}",
     "switches[1]: duplicate node name \"S1\""},
    {"HostUnknownField", "{" SW("") R"(, "hosts": [{"name": "A", "rank": 1}], )" LINKS "}",
     "hosts[0]: unknown field \"rank\""},
    {"BadRole", "{" SW("") R"(, "hosts": [{"name": "A", "role": "boss"}], )" LINKS "}",
     "hosts[0].role: unknown role \"boss\""},
    {"HostNameClash", "{" SW("") R"(, "hosts": [{"name": "S1"}], )" LINKS "}",
     "hosts[0]: duplicate node name \"S1\""},
    {"LinkUnknownNode", "{" SW("") "," HOSTS R"(, "links": [{"a": "A", "b": "S9"}]})",
     "links[0].b: unknown node \"S9\""},
    {"LinkMissingEnd", "{" SW("") "," HOSTS R"(, "links": [{"a": "A"}]})",
     "links[0].b: is required"},
    {"LinkUnknownField", "{" SW("") "," HOSTS R"(, "links": [{"a": "A", "b": "S1", "speed": 1}]})",
     "links[0]: unknown field \"speed\""},
    {"LinkZeroGbps", "{" SW("") "," HOSTS R"(, "links": [{"a": "A", "b": "S1", "gbps": 0}]})",
     "links[0]: link A-S1: gbps must be > 0"},
    {"LinkNegativeLatency",
     "{" SW("") "," HOSTS R"(, "links": [{"a": "A", "b": "S1", "latency_us": -1}]})",
     "links[0]: link A-S1: latency_us must be >= 0"},
    {"SelfLink", "{" SW("") "," HOSTS R"(, "links": [{"a": "S1", "b": "S1"}]})",
     "links[0]: link S1-S1: a link needs two different nodes"},
    {"DuplicateLink",
     "{" SW(
         R"(, {"name": "S2"})") "," HOSTS
                                R"(, "links": [{"a": "A", "b": "S1"}, {"a": "S1", "b": "S2"}, {"a": "S2", "b": "S1"}]})",
     "links[2]: link S2-S1: duplicate link"},
    {"HostTwoLinks",
     "{" SW(R"(, {"name": "S2"})") "," HOSTS
                                   R"(, "links": [{"a": "A", "b": "S1"}, {"a": "A", "b": "S2"}]})",
     "links[1]: link A-S2: host \"A\" already has a link"},
    {"HostToHost",
     "{" SW("") R"(, "hosts": [{"name": "A"}, {"name": "B"}], "links": [{"a": "A", "b": "B"}]})",
     "links[0]: link A-B: hosts must attach to a switch"},
    {"DetachedHost", "{" SW("") R"(, "hosts": [{"name": "A"}], "links": []})",
     "host \"A\" is not attached to any switch"},
    {"Disconnected", "{" SW(R"(, {"name": "S2"})") "," HOSTS "," LINKS "}",
     "topology is not connected"},
    {"TwoRoots",
     "{" SW("") R"(, "hosts": [{"name": "A", "role": "root"}, {"name": "B", "role": "root"}],
        "links": [{"a": "A", "b": "S1"}, {"a": "B", "b": "S1"}]})",
     "more than one host has role \"root\""},
    {"DefaultsUnknownField",
     R"({"defaults": {"gbps": 1}, "switches": [], "hosts": [], "links": []})",
     "defaults: unknown field \"gbps\""},
    {"DefaultsNotNumber",
     R"({"defaults": {"link_gbps": "fast"}, "switches": [], "hosts": [], "links": []})",
     "defaults.link_gbps: must be a number"},
    {"Empty", R"({"switches": [], "hosts": [], "links": []})", "topology has no nodes"},
    // Found by topology_fuzz: a number too large for a double is the JSON
    // library's out_of_range exception, which must not escape.
    {"NumberOverflow", R"({"name": 770e7777577777777777})", "topology JSON"},
    {"TooManyNodes", "LEAFSPINE", "at most 65535 nodes"},
};

INSTANTIATE_TEST_SUITE_P(Loader, TopologyJsonError, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& p) {
                           return std::string(p.param.name);
                         });

TEST(Generators, Testbed) {
  auto topo = GenerateTopology("testbed");
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->Switches().size(), 3u);
  EXPECT_EQ(topo->Hosts().size(), 9u);
  EXPECT_EQ(topo->num_links(), 12);
  EXPECT_EQ(topo->HostsWithRole(HostRole::kWorker).size(), 8u);
  const auto at = [&](const char* host) { return topo->node(topo->TorOf(*topo->Find(host))).name; };
  EXPECT_EQ(at("PS"), "S1");
  EXPECT_EQ(at("W1"), "S1");
  EXPECT_EQ(at("W2"), "S1");
  for (const char* w : {"W3", "W4", "W7"}) EXPECT_EQ(at(w), "S2") << w;
  for (const char* w : {"W5", "W6", "W8"}) EXPECT_EQ(at(w), "S3") << w;
  Router router(*topo);
  EXPECT_EQ(router.Distance(*topo->Find("S2"), *topo->Find("S3")), 1);  // a triangle
  EXPECT_EQ(topo->ProgrammableSwitches().size(), 3u);
}

TEST(Generators, FatTreeAsInThePaper) {
  auto topo = GenerateTopology("fattree:k=8,hosts=6,prog=random:0.2,cap=uniform:100:3200,seed=1");
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->Switches().size(), 80u);
  EXPECT_EQ(topo->Hosts().size(), 192u);
  int edge = 0, agg = 0, core = 0;
  for (NodeId s : topo->Switches()) {
    const Tier t = topo->node(s).tier;
    edge += t == Tier::kTor;
    agg += t == Tier::kAgg;
    core += t == Tier::kCore;
  }
  EXPECT_EQ(edge, 32);
  EXPECT_EQ(agg, 32);
  EXPECT_EQ(core, 16);
  EXPECT_EQ(topo->ProgrammableSwitches().size(), 16u);  // 20% of 80
  for (NodeId s : topo->Switches()) {
    const Node& n = topo->node(s);
    if (n.programmable) {
      EXPECT_GE(n.capacity_gbps, 100);
      EXPECT_LE(n.capacity_gbps, 3200);
    } else {
      EXPECT_EQ(n.capacity_gbps, 0);
    }
    // Every switch of a k=8 fat tree has 8 ports (edge: 4 up + 6 hosts here).
    EXPECT_EQ(topo->neighbors(s).size(), n.tier == Tier::kTor ? 10u : 8u) << n.name;
  }
}

TEST(Generators, LeafSpine) {
  auto topo = GenerateTopology("leafspine:spines=30,leaves=30,hosts=16,prog=tor");
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->Switches().size(), 60u);
  EXPECT_EQ(topo->Hosts().size(), 480u);
  EXPECT_EQ(topo->num_links(), 30 * 30 + 480);
  for (NodeId s : topo->Switches()) {
    EXPECT_EQ(topo->node(s).programmable, topo->node(s).tier == Tier::kTor);
  }
}

TEST(Generators, Rack) {
  auto topo = GenerateTopology("rack");
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->name(), "rack-9");
  ASSERT_EQ(topo->Switches().size(), 1u);
  const NodeId tor = topo->Switches()[0];
  EXPECT_EQ(topo->node(tor).name, "tor");
  EXPECT_TRUE(topo->node(tor).programmable);
  EXPECT_EQ(topo->node(tor).capacity_gbps, 3200);
  EXPECT_EQ(topo->Hosts().size(), 9u);
  EXPECT_EQ(topo->num_links(), 9);
  for (NodeId h : topo->Hosts()) {
    EXPECT_EQ(topo->node(h).role, HostRole::kIdle) << topo->node(h).name;
    ASSERT_EQ(topo->neighbors(h).size(), 1u);
    EXPECT_EQ(topo->neighbors(h)[0].node, tor);
    EXPECT_EQ(topo->AccessGbps(h), 100);
  }
  auto wide = GenerateTopology("rack:hosts=33,link=25");
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->Hosts().size(), 33u);
  EXPECT_EQ(wide->AccessGbps(*wide->Find("h32")), 25);
}

TEST(Generators, SameSpecSameBytes) {
  const char* spec = "fattree:k=4,prog=random:0.5,cap=uniform:100:3200,seed=9";
  auto a = GenerateTopology(spec);
  auto b = GenerateTopology(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(TopologyToJson(*a), TopologyToJson(*b));
  auto c = GenerateTopology("fattree:k=4,prog=random:0.5,cap=uniform:100:3200,seed=10");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(TopologyToJson(*a), TopologyToJson(*c));
}

TEST(Generators, Options) {
  auto fixed =
      GenerateTopology("leafspine:spines=2,leaves=3,hosts=2,prog=all,cap=fixed:500,link=25");
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  for (NodeId s : fixed->Switches()) EXPECT_EQ(fixed->node(s).capacity_gbps, 500);
  for (const Link& l : fixed->links()) EXPECT_EQ(l.gbps, 25);
  auto none = GenerateTopology("fattree:k=4,prog=none");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->ProgrammableSwitches().empty());
  // The testbed's fabric as the paper's regime needs it: host links, switch
  // links, the PS's access rate and one switch's C_s, each on its own.
  auto testbed = GenerateTopology("testbed:link=100,fabric=400,ps=64,cap=fixed:0.5,cap.S2=48");
  ASSERT_TRUE(testbed.ok()) << testbed.status();
  EXPECT_EQ(testbed->AccessGbps(*testbed->Find("PS")), 64);
  EXPECT_EQ(testbed->AccessGbps(*testbed->Find("W3")), 100);
  EXPECT_EQ(testbed->node(*testbed->Find("S1")).capacity_gbps, 0.5);  // fixed: not rounded
  EXPECT_EQ(testbed->node(*testbed->Find("S2")).capacity_gbps, 48);
  int fabric_links = 0;
  for (const Link& l : testbed->links()) {
    if (testbed->node(l.a).is_switch() && testbed->node(l.b).is_switch()) {
      EXPECT_EQ(l.gbps, 400);
      ++fabric_links;
    }
  }
  EXPECT_EQ(fabric_links, 3);
}

TEST(Generators, BadSpecs) {
  struct Case {
    const char* spec;
    const char* message;
  };
  for (const Case& c :
       {Case{"torus:k=4", "unknown generator \"torus\""}, Case{"fattree:k=5", "k must be even"},
        Case{"fattree:k=4,color=red", "unknown option color"},
        Case{"fattree:k=4,k=6", "option k given twice"}, Case{"fattree:k", "is not key=value"},
        Case{"fattree:k=x", "k=x: expected a whole number"},
        Case{"fattree:prog=random:1.5", "the fraction must be in [0, 1]"},
        Case{"fattree:prog=some", "expected all, none, tor or random"},
        Case{"fattree:cap=uniform:300:100", "cap=uniform:300:100"},
        Case{"fattree:cap=normal:1", "cap=normal:1"},
        Case{"leafspine:link=-3", "link=-3: expected a positive number"},
        Case{"rack:hosts=1", "hosts=1: expected a whole number in [2, 4096]"},
        Case{"rack:k=4", "unknown option k"},
        Case{"testbed:cap.S9=10", "cap.S9: no switch of that name"},
        Case{"testbed:cap.S1=0", "cap.S1=0: expected a positive number"},
        Case{"testbed:ps=x", "ps=x: expected a positive number"},
        Case{"fattree:ps=10", "unknown option ps"}}) {
    auto topo = GenerateTopology(c.spec);
    ASSERT_FALSE(topo.ok()) << c.spec;
    EXPECT_THAT(topo.status().message(), HasSubstr(c.message)) << c.spec;
  }
  EXPECT_EQ(LoadTopology("/nonexistent/topo.json").status().code(), absl::StatusCode::kNotFound);
}

TEST(Routes, FatTreeShortestAndKShortest) {
  auto topo = GenerateTopology("fattree:k=4");
  ASSERT_TRUE(topo.ok());
  Router router(*topo);
  const NodeId a = *topo->Find("h0");  // pod 0
  const NodeId b = *topo->Find("h5");  // pod 1
  const NodeId c = *topo->Find("h1");  // same edge switch as h0
  EXPECT_EQ(router.Distance(a, b), 6);
  EXPECT_EQ(router.Distance(a, c), 2);
  auto p = router.ShortestPath(a, b);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hops(), 6);
  EXPECT_EQ(*router.ShortestPath(a, b), *p);  // deterministic
  auto paths = router.KShortestPaths(a, b, 6);
  ASSERT_TRUE(paths.ok());
  ASSERT_EQ(paths->size(), 6u);
  EXPECT_EQ((*paths)[0], *p);
  std::set<std::vector<NodeId>> distinct;
  for (size_t i = 0; i < paths->size(); ++i) {
    const Path& q = (*paths)[i];
    // 4 shortest (2 aggregation x 2 core choices), then longer ones.
    EXPECT_EQ(q.hops(), i < 4 ? 6 : 8) << i;
    EXPECT_EQ(q.nodes.front(), a);
    EXPECT_EQ(q.nodes.back(), b);
    std::set<NodeId> seen(q.nodes.begin(), q.nodes.end());
    EXPECT_EQ(seen.size(), q.nodes.size()) << "loop in path " << i;
    for (size_t j = 1; j + 1 < q.nodes.size(); ++j) EXPECT_TRUE(topo->node(q.nodes[j]).is_switch());
    for (size_t j = 0; j < q.arcs.size(); ++j) {
      EXPECT_EQ(topo->ArcFrom(q.arcs[j]), q.nodes[j]);
      EXPECT_EQ(topo->ArcTo(q.arcs[j]), q.nodes[j + 1]);
    }
    distinct.insert(q.nodes);
  }
  EXPECT_EQ(distinct.size(), paths->size());
}

TEST(Routes, EcmpSpreadsFlows) {
  auto topo = GenerateTopology("fattree:k=8,hosts=4");
  ASSERT_TRUE(topo.ok());
  Router router(*topo);
  std::set<NodeId> cores;
  const NodeId dst = *topo->Find("h127");
  for (int h = 0; h < 32; ++h) {
    auto p = router.ShortestPath(*topo->Find("h" + std::to_string(h)), dst);
    ASSERT_TRUE(p.ok());
    cores.insert(p->nodes[3]);  // host, edge, agg, core, ...
  }
  EXPECT_GE(cores.size(), 6u);  // 32 flows over 16 cores
}

}  // namespace
}  // namespace grid::topology
