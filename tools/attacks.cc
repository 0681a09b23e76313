#include "tools/attacks.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace grid::tools {
namespace {

using wire::FrameAddress;
using wire::Header;
using wire::MessageType;

constexpr const char* kNames[kNumAttacks] = {
    "wrong_token", "wrong_job",       "non_member",     "impersonate",    "spoofed_source",
    "old_data",    "old_result",      "foreign_result", "forged_partial", "spoofed_partial",
    "bad_slot",    "length_mismatch", "truncated",      "exponent",       "ttl1",
    "ip_options",  "ip_fragment",     "collision_flood"};

// Operations far ahead of any a test runs: chunks that would be "newer" than
// what the slots hold.
constexpr uint32_t kFutureOp = 1u << 30;

uint16_t Slots(const AttackSetup& s) { return static_cast<uint16_t>(s.victim.slots); }

// A chunk of the victim's, as its host would send it.
Header MemberData(const AttackSetup& s, uint64_t i) {
  const host_config::WorkerConfig& v = s.victim;
  Header h;
  h.type = MessageType::kData;
  h.job_id = v.job_id;
  h.job_token = v.token;
  h.rank = v.rank;
  h.agg_node = static_cast<uint16_t>(v.aggregator);
  h.path = v.up_label;
  h.next_path = v.next_path;
  h.fan_in = v.fan_in;
  h.slot = static_cast<uint16_t>(i % Slots(s));
  h.flags = (i / Slots(s)) % 2 ? wire::flags::kCopy : 0;
  h.op_seq = kFutureOp + static_cast<uint32_t>(i / Slots(s));
  h.chunk = static_cast<uint32_t>(i);
  h.exponent = 120;
  h.next_exponent = 120;
  h.num_elements = v.elements;
  return h;
}

FrameAddress From(const AttackSetup& s, uint32_t dst_ip, uint64_t i) {
  FrameAddress a;
  a.src_ip = s.attacker_ip;
  a.dst_ip = dst_ip;
  a.src_mac = s.attacker_mac;
  a.dst_mac = s.first_hop_mac;
  a.dst_port = static_cast<uint16_t>(wire::kUdpPortBase + i % wire::kUdpPortCount);
  return a;
}

std::vector<uint8_t> Build(const FrameAddress& a, const Header& h, uint64_t i) {
  std::vector<uint8_t> payload(size_t{h.num_elements} * wire::kElementBytes);
  for (size_t e = 0; e < h.num_elements; ++e) {
    wire::StoreElement(payload.data(), e, static_cast<int32_t>(i * 7919 + e));
  }
  std::vector<uint8_t> frame(wire::FrameBytes(h.num_elements));
  if (!wire::EncodeFrame(a, h, payload, absl::MakeSpan(frame)).ok()) frame.clear();
  return frame;
}

// Rewrites the IPv4 header, checksum included.
template <typename Edit>
void EditIpv4(std::vector<uint8_t>& f, Edit edit) {
  wire::Ipv4Header ip;
  std::memcpy(&ip, f.data() + wire::kIpv4Offset, sizeof(ip));
  edit(ip);
  ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(f.data() + wire::kIpv4Offset, &ip, sizeof(ip));
}

Header ToRoot(const AttackSetup& s, uint64_t i) {
  Header h = MemberData(s, i);
  h.type = MessageType::kPartial;
  h.rank = wire::kAllRanks;
  h.agg_node = static_cast<uint16_t>(s.root.node);
  h.path = s.to_root_label;
  h.next_path = 0;
  h.fan_in = static_cast<uint16_t>(s.root.contributors.size());
  return h;
}

}  // namespace

const char* AttackName(Attack attack) {
  const int i = static_cast<int>(attack);
  return i >= 0 && i < kNumAttacks ? kNames[i] : "unknown";
}

absl::StatusOr<Attack> ParseAttack(std::string_view name) {
  for (int i = 0; i < kNumAttacks; ++i) {
    if (name == kNames[i]) return static_cast<Attack>(i);
  }
  return absl::InvalidArgumentError(absl::StrFormat("attack \"%s\": no such class", name));
}

std::vector<uint8_t> AttackFrame(Attack attack, const AttackSetup& s, uint64_t i) {
  const host_config::WorkerConfig& v = s.victim;
  Header h = MemberData(s, i);
  FrameAddress a = From(s, v.aggregator_ip, i);
  switch (attack) {
    case Attack::kWrongToken:
      h.job_token ^= 0x5a5a5a5au;
      break;
    case Attack::kWrongJob:
      h.job_id = static_cast<uint16_t>(v.job_id + 1);
      break;
    case Attack::kNonMember:
      h.rank = static_cast<uint16_t>(v.world + 5);
      break;
    case Attack::kImpersonate:
    case Attack::kCollisionFlood:
      break;
    case Attack::kSpoofedSource:
      a.src_ip = v.ip;
      break;
    case Attack::kOldData:
      h.op_seq = 1;
      h.chunk = static_cast<uint32_t>(i % 8);
      break;
    case Attack::kOldResult:
      h.type = MessageType::kResult;
      h.rank = wire::kAllRanks;
      h.op_seq = 1;
      h.fan_in = static_cast<uint16_t>(s.root.contributors.size());
      break;
    case Attack::kForeignResult:
      h.type = MessageType::kResult;
      h.agg_node = 0xfffe;  // no node: every switch passes it on, along the victim's path
      h.path = s.victim_result_label;
      h.fan_in = static_cast<uint16_t>(s.root.contributors.size());
      a.dst_ip = v.ip;
      break;
    case Attack::kForgedPartial:
    case Attack::kTtl1:
      h = ToRoot(s, i);
      a.dst_ip = s.root.ip;
      break;
    case Attack::kSpoofedPartial:
      h = ToRoot(s, i);
      a.dst_ip = s.root.ip;
      for (const auto& c : s.root.contributors) {
        if (c.is_switch) a.src_ip = c.ip;
      }
      break;
    case Attack::kBadSlot:
      h.slot = static_cast<uint16_t>(Slots(s) + i % 100);
      break;
    case Attack::kExponent:
      h.exponent = 255;
      h.next_exponent = 255;
      break;
    case Attack::kLengthMismatch:
    case Attack::kTruncated:
    case Attack::kIpOptions:
    case Attack::kIpFragment:
    case Attack::kEnd:
      break;
  }
  std::vector<uint8_t> f = Build(a, h, i);
  if (f.empty()) return f;
  switch (attack) {
    case Attack::kTtl1:
      EditIpv4(f, [](wire::Ipv4Header& ip) { ip.ttl = 1; });
      break;
    case Attack::kIpOptions:
      EditIpv4(f, [](wire::Ipv4Header& ip) { ip.version_ihl = 0x46; });
      break;
    case Attack::kIpFragment:
      EditIpv4(f, [](wire::Ipv4Header& ip) { ip.flags_fragment = wire::HostToNet16(0x2000); });
      break;
    case Attack::kLengthMismatch: {
      // Claims one element more than the packet carries (one fewer at the
      // widest frame, where one more would be refused as too wide).
      uint8_t* n = f.data() + wire::kGridOffset + offsetof(wire::WireHeader, num_elements);
      const int delta = h.num_elements < wire::kMaxElements ? 1 : -1;
      const uint16_t claimed = wire::HostToNet16(static_cast<uint16_t>(h.num_elements + delta));
      std::memcpy(n, &claimed, 2);
      break;
    }
    case Attack::kTruncated:
      f.resize(wire::kGridOffset + 1 + i % (f.size() - wire::kGridOffset - 1));
      break;
    default:
      break;
  }
  return f;
}

absl::StatusOr<AttackSetup> MakeAttackSetup(
    const topology::Topology& topology, topology::NodeId attacker,
    const std::vector<host_config::WorkerConfig>& workers, const host_config::RootConfig& root,
    const std::map<topology::NodeId, sw::SwitchConfig>& switches) {
  if (attacker >= topology.num_nodes() || topology.node(attacker).is_switch() ||
      topology.neighbors(attacker).empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("attacker node %d is not a host on the fabric", attacker));
  }
  if (workers.empty()) return absl::InvalidArgumentError("no workers to imitate");
  AttackSetup s;
  const topology::NodeId tor = topology.neighbors(attacker)[0].node;
  auto tor_config = switches.find(tor);
  if (tor_config == switches.end()) {
    return absl::InvalidArgumentError(absl::StrFormat("no tables for switch %d", tor));
  }
  s.attacker_ip = control::NodeIp(attacker);
  s.attacker_mac = control::NodeMac(attacker);
  s.first_hop_mac = control::NodeMac(tor);
  s.root = root;
  s.victim = workers[0];
  const sw::JobEntry& job = tor_config->second.jobs.at(workers[0].job_id);
  if (job.aggregate) s.victim = workers.at(job.aggregate->members.front().rank);
  for (const auto& [node, c] : switches) {
    const auto& entry = c.jobs.at(s.victim.job_id);
    if (!entry.aggregate) continue;
    if (s.to_root_label == 0 || node == tor) s.to_root_label = entry.aggregate->to_root_label;
    for (const sw::Member& m : entry.aggregate->members) {
      if (m.rank == s.victim.rank) s.victim_result_label = m.result_label;
    }
  }
  for (const auto& c : root.contributors) {
    if (!c.is_switch && c.rank == s.victim.rank) s.victim_result_label = c.result_label;
  }
  if (s.to_root_label == 0) s.to_root_label = s.victim.up_label;
  return s;
}

}  // namespace grid::tools
