// The root engine (lib/root/engine.h), driven frame by frame: what it
// takes as a contribution, from whom, and what it answers.
#include "root/engine.h"

#include <vector>

#include "gmock/gmock.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "gtest/gtest.h"
#include "support/hand.h"

namespace grid {
namespace {

using testing::HandTransport;
using topology::NodeId;

TEST(RootChecks, AChunkInTheOtherLengthIsRejectedNotAnswered) {
  host_config::RootConfig config;
  config.job_id = 3;
  config.token = 77;
  config.world = 2;
  config.node = 1;
  config.slots = 4;
  config.elements = 4;
  config.ip = 0x0a000001;
  host_config::RootConfig::Contributor sw;
  sw.node = 10;
  sw.is_switch = true;
  sw.ip = 0x0a00000a;
  sw.next_hop_mac = {2, 0, 0, 0, 0, 10};
  sw.members = {{0, 0x0a000014}, {1, 0x0a000015}};
  config.contributors = {sw};
  HandTransport transport;
  root::RootEngine root(config, &transport);
  auto frame = [&](wire::MessageType type, uint32_t src_ip, uint16_t n, uint16_t chunk) {
    wire::Header h;
    h.type = type;
    h.job_id = config.job_id;
    h.job_token = config.token;
    h.op_seq = 5;
    h.chunk = chunk;
    h.slot = chunk;
    h.num_elements = n;
    if (type == wire::MessageType::kPartial) {
      h.agg_node = static_cast<uint16_t>(config.node);
      h.fan_in = 1;
      h.rank = wire::kAllRanks;
    } else {  // a member's DATA the switch passed on
      h.agg_node = static_cast<uint16_t>(sw.node);
      h.fan_in = 2;
      h.flags = wire::flags::kPassed | wire::flags::kRetransmit;
    }
    wire::FrameAddress a;
    a.src_ip = src_ip;
    a.dst_ip = config.ip;
    a.src_mac = sw.next_hop_mac;
    a.dst_mac = config.mac;
    std::vector<uint8_t> payload(size_t{n} * wire::kElementBytes, 1), f(wire::FrameBytes(n));
    EXPECT_TRUE(wire::EncodeFrame(a, h, payload, absl::MakeSpan(f)).ok());
    return f;
  };
  uint16_t chunk = 0;
  for (uint16_t partial_length : {uint16_t{4}, uint16_t{0}}) {
    SCOPED_TRACE(partial_length);
    root.OnFrame(frame(wire::MessageType::kPartial, sw.ip, partial_length, chunk));
    root.Flush();
    ASSERT_EQ(transport.sent.size(), 1u);  // the switch's share is the whole chunk
    EXPECT_EQ(wire::DecodeFrame(transport.sent[0])->header.num_elements, partial_length);
    transport.sent.clear();
    const uint64_t rejected = root.stats().rejected, resent = root.stats().results_resent;
    root.OnFrame(
        frame(wire::MessageType::kData, sw.members[0].ip, partial_length == 0 ? 4 : 0, chunk));
    root.Flush();
    EXPECT_TRUE(transport.sent.empty());
    EXPECT_EQ(root.stats().rejected, rejected + 1);
    EXPECT_EQ(root.stats().results_resent, resent);
    // In its own length, the same resend is answered.
    root.OnFrame(frame(wire::MessageType::kData, sw.members[0].ip, partial_length, chunk));
    root.Flush();
    ASSERT_EQ(transport.sent.size(), 1u);
    EXPECT_EQ(wire::DecodeFrame(transport.sent[0])->header.num_elements, partial_length);
    transport.sent.clear();
    ++chunk;
  }
}

TEST(RootChecks, ProxyPartialsCountOnlyFromTheProxy) {
  const topology::Topology topo = *topology::GenerateTopology("testbed");
  planner::PlannerOptions options;
  options.atp_best_effort = true;
  const planner::Plan plan = *(*planner::PlannerRegistry::WithBuiltins().Create("atp", options))
                                  ->Plan(topo, *planner::MakeJob(topo, 8, std::nullopt, 1));
  host_config::JobParams params;
  params.job_id = 5;
  params.token = 0x1234;
  params.slots = 4;
  params.elements = 4;
  const host_config::RootConfig config = *control::BuildRootConfig(topo, plan, params);
  const NodeId s1 = *topo.Find("S1"), s2 = *topo.Find("S2"), s3 = *topo.Find("S3");
  const wire::MacAddress first_hop = config.contributors[0].next_hop_mac;
  auto partial = [&](NodeId from, NodeId agg_node, uint16_t fan_in, uint8_t flags, int32_t value) {
    wire::Header h;
    h.type = wire::MessageType::kPartial;
    h.flags = flags;
    h.job_id = params.job_id;
    h.job_token = params.token;
    h.agg_node = static_cast<uint16_t>(agg_node);
    h.fan_in = fan_in;
    h.chunk = 0;
    h.exponent = 130;
    h.num_elements = params.elements;
    wire::FrameAddress a;
    a.src_ip = control::NodeIp(from);
    a.dst_ip = config.ip;
    a.src_mac = first_hop;
    a.dst_mac = config.mac;
    std::vector<uint8_t> payload(4 * params.elements);
    for (int i = 0; i < params.elements; ++i) wire::StoreElement(payload.data(), i, value);
    std::vector<uint8_t> f(wire::FrameBytes(params.elements));
    (void)wire::EncodeFrame(a, h, payload, absl::MakeSpan(f));
    return f;
  };
  const auto root_fan_in = static_cast<uint16_t>(config.contributors.size());
  const uint8_t kPassed = wire::flags::kPassed;
  HandTransport transport;
  root::RootEngine engine(config, &transport);
  // Forged: S2's chunk "completed" by S2 itself, by S3, or by a worker; and
  // a proxy partial for S1, which has no proxy.
  engine.OnFrame(partial(s2, s2, 3, kPassed, 1000));
  engine.OnFrame(partial(s3, s2, 3, kPassed, 1000));
  engine.OnFrame(partial(plan.job.workers[2], s2, 3, kPassed, 1000));
  engine.OnFrame(partial(s1, s1, 2, kPassed, 1000));
  EXPECT_EQ(engine.stats().foreign, 4u);
  EXPECT_EQ(engine.stats().contributions, 0u);
  // The real ones: S2's chunk from its proxy, S1's and S3's own partials.
  engine.OnFrame(partial(s1, s2, 3, kPassed, 3));
  engine.OnFrame(partial(s1, config.node, root_fan_in, 0, 2));
  engine.Flush();
  EXPECT_TRUE(transport.sent.empty());
  engine.OnFrame(partial(s3, config.node, root_fan_in, 0, 3));
  engine.Flush();
  EXPECT_EQ(engine.stats().proxied, 1u);
  EXPECT_EQ(engine.stats().completed, 1u);
  ASSERT_EQ(transport.sent.size(), 3u);  // one RESULT per contributor
  const wire::FrameView result = *wire::DecodeFrame(transport.sent[0]);
  EXPECT_EQ(wire::LoadElement(result.payload, 0), 3 + 2 + 3);
}

}  // namespace
}  // namespace grid
