// The differential test of the P4 program (docs/switch.md, "P4"): the same
// packet sequences go through the C++ reference pipeline and through
// simple_switch running the compiled p4/v1model/grid.p4, both loaded with the
// same tables (ConfigToP4Entries, rendered for simple_switch_CLI). What comes
// out of every port must be the same bytes in the same order, and every drop
// counter must agree. The plans are the property test's, the traffic
// tests/p4/traffic.cc's: a running job with loss, duplicates, reordering and
// retransmissions, and everything a switch must refuse.
#include <filesystem>
#include <sstream>

#include "absl/strings/str_format.h"
#include "grid/switch.h"
#include "gtest/gtest.h"
#include "p4/bmv2.h"
#include "p4/traffic.h"

namespace grid::testing {
namespace {

using topology::NodeId;

// Packets per simple_switch run (its input buffer holds 1024).
constexpr size_t kPacketsPerRun = 950;
// The C++ pipeline's queue depths are 0; BMv2's queues have real depths.
// Congestion marking depends on timing, not on the program, so the
// comparison runs with a threshold no queue reaches (P4: 19 bits).
constexpr uint32_t kNoCongestion = (1u << 19) - 1;

Bmv2Tools Tools() {
  return {GRID_SIMPLE_SWITCH, GRID_SIMPLE_SWITCH_CLI, GRID_P4_BUILD_DIR "/grid.json"};
}

std::string Describe(const Frame& f) {
  auto v = wire::DecodeFrame(f);
  if (!v.ok()) return absl::StrFormat("%d bytes, not a valid GRID frame", f.size());
  const wire::Header& h = v->header;
  return absl::StrFormat(
      "%d bytes: type %d flags 0x%02x rank %d agg_node %d path %d fan_in %d slot %d op %d chunk "
      "%d exp %d/%d n %d; ip %s -> %s ttl %d",
      f.size(), static_cast<int>(h.type), h.flags, h.rank, h.agg_node, h.path, h.fan_in, h.slot,
      h.op_seq, h.chunk, h.exponent, h.next_exponent, h.num_elements,
      wire::IpToString(v->address.src_ip), wire::IpToString(v->address.dst_ip), v->address.ttl);
}

std::string FirstDifference(const Frame& a, const Frame& b) {
  if (a.size() != b.size()) return absl::StrFormat("length %d vs %d", a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return absl::StrFormat("byte %d: 0x%02x vs 0x%02x", i, a[i], b[i]);
  }
  return "none";
}

struct Reference {
  std::vector<std::vector<Frame>> out;       // by port
  std::vector<std::vector<std::string>> by;  // the input that made each, for messages
  sw::Counters counters;
};

Reference RunReference(const sw::SwitchConfig& config, const std::vector<Packet>& inputs) {
  auto pipeline = sw::Pipeline::Create(config);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  Reference r;
  r.out.resize(config.num_ports);
  r.by.resize(config.num_ports);
  sw::Output out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Frame frame = inputs[i].frame;
    out.Clear();
    pipeline->Process(absl::MakeSpan(frame), inputs[i].port, &out);
    for (const sw::OutFrame& f : out.frames) {
      const absl::Span<const uint8_t> bytes = out.Bytes(f, frame);
      r.out[f.port].emplace_back(bytes.begin(), bytes.end());
      r.by[f.port].push_back(
          absl::StrFormat("input %d (%s, port %d)", i, inputs[i].kind, inputs[i].port));
    }
  }
  r.counters = pipeline->counters();
  return r;
}

// The switches a plan gives the test: those that aggregate, then those that
// only forward along labelled paths, two in all.
std::vector<NodeId> Chosen(const Job& job) {
  std::vector<NodeId> aggregating, forwarding;
  for (const auto& [node, config] : job.configs) {
    if (config.jobs.at(job.params.job_id).aggregate) {
      aggregating.push_back(node);
    } else if (!config.label_routes.empty()) {
      forwarding.push_back(node);
    }
  }
  std::vector<NodeId> out = aggregating;
  out.insert(out.end(), forwarding.begin(), forwarding.end());
  if (out.size() > 2) out.resize(2);
  return out;
}

struct Case {
  const char* topology;
  const char* planner;
  int workers;
  uint64_t seed;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.topology << " " << c.planner << " " << c.workers << " workers";
}

class P4Differential : public ::testing::TestWithParam<Case> {};

TEST_P(P4Differential, SameBytesOutOfTheSamePortsAndTheSameDrops) {
  const Bmv2Tools tools = Tools();
  if (const std::string missing = tools.Missing(); !missing.empty()) GTEST_SKIP() << missing;
  const Case c = GetParam();
  // Few slots, so copies are reused (and stale and colliding chunks occur)
  // many times per run; the P4 targets' 64 elements per packet.
  const Job job = MakeJob(c.topology, c.planner, c.workers, c.seed, 4, wire::kDefaultElements);
  size_t packets = 0;
  for (NodeId node : Chosen(job)) {
    sw::SwitchConfig config = job.configs.at(node);
    config.congestion_threshold = kNoCongestion;
    SCOPED_TRACE(absl::StrFormat("%s, planner %s, switch %s", c.topology, c.planner, config.name));
    const std::vector<Packet> inputs =
        MakeTraffic(job, node, kPacketsPerRun, c.seed * 1000 + static_cast<uint64_t>(node));
    const Reference ref = RunReference(config, inputs);
    auto entries = sw::ConfigToP4Entries(config);
    ASSERT_TRUE(entries.ok()) << entries.status();
    auto commands = sw::P4EntriesToBmv2Commands(*entries);
    ASSERT_TRUE(commands.ok()) << commands.status();
    size_t expected = 0;
    for (const auto& port : ref.out) expected += port.size();
    const std::string dir =
        absl::StrFormat("%s/diff-%d-%s-%s", GRID_P4_BUILD_DIR, c.seed, c.planner, config.name);
    auto run = RunBmv2(tools, dir, config.num_ports, *commands, inputs, expected);
    ASSERT_TRUE(run.ok()) << run.status();
    packets += inputs.size();

    for (uint16_t p = 0; p < config.num_ports; ++p) {
      const std::vector<Frame>& want = ref.out[p];
      const std::vector<Frame>& got = run->out[p];
      EXPECT_EQ(got.size(), want.size()) << "port " << p << " (" << dir << ")";
      int reported = 0;
      for (size_t i = 0; i < std::min(want.size(), got.size()) && reported < 3; ++i) {
        if (want[i] == got[i]) continue;
        ++reported;
        ADD_FAILURE() << "port " << p << ", frame " << i << " made by " << ref.by[p][i]
                      << ": first difference " << FirstDifference(want[i], got[i])
                      << "\n  reference " << Describe(want[i]) << "\n  bmv2      "
                      << Describe(got[i]);
      }
      for (size_t i = got.size(); i < want.size() && reported < 3; ++i, ++reported) {
        ADD_FAILURE() << "port " << p << ": missing from BMv2: " << Describe(want[i])
                      << ", made by " << ref.by[p][i];
      }
    }
    for (int reason = 1; reason < sw::kNumDrops; ++reason) {
      EXPECT_EQ(run->drops[reason], ref.counters.drops[reason])
          << "drops[" << sw::DropName(reason) << "]";
    }
    // The traffic reached the paths it is meant to: aggregation, partials,
    // replicas and forwarding, not only drops.
    uint64_t emitted = 0;
    for (const auto& port : ref.out) emitted += port.size();
    EXPECT_GT(emitted, inputs.size() / 5);
  }
  // Six plans, over 10,000 packets in all.
  EXPECT_GE(packets, 2 * kPacketsPerRun - 100);
}

// The property test's plans (tests/switch/property_test.cc).
INSTANTIATE_TEST_SUITE_P(
    PropertyPlans, P4Differential,
    ::testing::Values(Case{"testbed", "switchml", 8, 1}, Case{"testbed", "grid", 8, 2},
                      Case{"testbed:cap=fixed:200", "atp", 8, 3},
                      Case{"fattree:k=4,prog=random:0.4,cap=uniform:100:800,seed=5", "grid-paths",
                           10, 4},
                      Case{"leafspine:spines=2,leaves=4,hosts=3,prog=tor,seed=6", "grid", 9, 5},
                      Case{"fattree:k=4,prog=none", "geryon", 6, 6}),
    [](const ::testing::TestParamInfo<Case>& param) {
      return absl::StrFormat("%d_%s", param.index,
                             std::string(param.param.planner) == "grid-paths"
                                 ? "grid_paths"
                                 : std::string(param.param.planner));
    });

}  // namespace
}  // namespace grid::testing
