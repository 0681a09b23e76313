// The switch pipeline, packet by packet. docs/switch.md states the rules;
// the P4 programs implement the same decisions.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "grid/numerics.h"
#include "grid/switch.h"
#include "switch/elements.h"

namespace grid::sw {
namespace {

using wire::FrameView;
using wire::Header;
using wire::MessageType;

constexpr size_t kFlagsOffset = wire::kGridOffset + offsetof(wire::WireHeader, flags);
constexpr size_t kTtlOffset = wire::kIpv4Offset + offsetof(wire::Ipv4Header, ttl);
constexpr size_t kChecksumOffset = wire::kIpv4Offset + offsetof(wire::Ipv4Header, checksum);

uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return wire::NetToHost16(v);
}

void Store16(uint8_t* p, uint16_t v) {
  v = wire::HostToNet16(v);
  std::memcpy(p, &v, 2);
}

// Decrements the TTL and patches the IPv4 checksum incrementally (RFC 1624):
// what any router does, so a forwarding loop cannot live forever. Returns
// false when the TTL ran out.
bool DecrementTtl(uint8_t* frame) {
  if (frame[kTtlOffset] <= 1) return false;
  const uint16_t old_word = Load16(frame + kTtlOffset);
  --frame[kTtlOffset];
  const uint16_t new_word = Load16(frame + kTtlOffset);
  uint32_t sum = static_cast<uint16_t>(~Load16(frame + kChecksumOffset));
  sum += static_cast<uint16_t>(~old_word);
  sum += new_word;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  Store16(frame + kChecksumOffset, static_cast<uint16_t>(~sum));
  return true;
}

void RewriteMacs(uint8_t* frame, const wire::MacAddress& dst, const wire::MacAddress& src) {
  std::memcpy(frame + offsetof(wire::EthernetHeader, dst), dst.data(), dst.size());
  std::memcpy(frame + offsetof(wire::EthernetHeader, src), src.data(), src.size());
}

}  // namespace

const char* DropName(int reason) {
  if (reason >= 0 && reason < wire::kNumWireErrors) {
    return wire::WireErrorName(static_cast<wire::WireError>(reason));
  }
  switch (static_cast<Drop>(reason)) {
    case Drop::kUnknownJob:
      return "unknown_job";
    case Drop::kBadToken:
      return "bad_token";
    case Drop::kNotMember:
      return "not_member";
    case Drop::kBadSlot:
      return "bad_slot";
    case Drop::kBadFanIn:
      return "bad_fan_in";
    case Drop::kBadLength:
      return "bad_length";
    case Drop::kCollision:
      return "collision";
    case Drop::kDuplicate:
      return "duplicate";
    case Drop::kNoRoute:
      return "no_route";
    case Drop::kNotForUs:
      return "not_for_us";
    case Drop::kStale:
      return "stale";
    case Drop::kEnd:
      break;
  }
  return "unknown";
}

uint64_t Counters::total_drops() const {
  uint64_t n = 0;
  for (uint64_t d : drops) n += d;
  return n;
}

void Counters::Add(const Counters& o) {
  for (int i = 0; i < kNumDrops; ++i) drops[i] += o.drops[i];
  forwarded += o.forwarded;
  other_forwarded += o.other_forwarded;
  for (const auto& [id, j] : o.jobs) {
    JobCounters& m = jobs[id];
    m.data += j.data;
    m.partials += j.partials;
    m.partials_resent += j.partials_resent;
    m.results += j.results;
    m.replicas += j.replicas;
    m.collisions += j.collisions;
    m.duplicates += j.duplicates;
    m.overflows += j.overflows;
  }
  if (ports.size() < o.ports.size()) ports.resize(o.ports.size());
  for (size_t p = 0; p < o.ports.size(); ++p) {
    ports[p].rx_packets += o.ports[p].rx_packets;
    ports[p].rx_bytes += o.ports[p].rx_bytes;
    ports[p].tx_packets += o.ports[p].tx_packets;
    ports[p].tx_bytes += o.ports[p].tx_bytes;
  }
}

Pipeline::Pipeline(SwitchConfig config) : config_(std::move(config)) {}

absl::StatusOr<Pipeline> Pipeline::Create(SwitchConfig config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  Pipeline p(std::move(config));
  p.BuildState();
  return p;
}

void Pipeline::BuildState() {
  counters_.ports.resize(config_.num_ports);
  queue_depth_.resize(config_.num_ports, 0);
  std::map<uint16_t, JobState> next;
  for (const auto& [id, job] : config_.jobs) {
    if (!job.aggregate) continue;
    const JobEntry::Aggregate& a = *job.aggregate;
    auto old = state_.find(id);
    JobState s;
    // Keep the slots of a job whose pool did not change (a table reload must
    // not lose chunks in flight).
    if (old != state_.end() && old->second.copies.size() == 2u * a.slots &&
        old->second.values.size() == 2u * a.slots * a.elements) {
      s = std::move(old->second);
    } else {
      s.copies.assign(2u * a.slots, Copy{});
      s.values.assign(2u * a.slots * a.elements, 0);
    }
    s.rank_bit.assign(65536, 0);
    for (const Member& m : a.members) s.rank_bit[m.rank] = static_cast<uint16_t>(m.bit + 1);
    next.emplace(id, std::move(s));
    counters_.jobs[id];
  }
  state_ = std::move(next);
}

absl::Status Pipeline::Reload(SwitchConfig config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  config_ = std::move(config);
  BuildState();
  return absl::OkStatus();
}

void Pipeline::ResetCounters() {
  counters_ = Counters{};
  counters_.ports.resize(config_.num_ports);
  for (const auto& [id, job] : config_.jobs) {
    if (job.aggregate) counters_.jobs[id];
  }
}

void Pipeline::SetQueueDepth(uint16_t port, uint32_t packets) {
  if (port < queue_depth_.size()) queue_depth_[port] = packets;
}

bool Pipeline::Congested(uint16_t port) const {
  return port < queue_depth_.size() && queue_depth_[port] > config_.congestion_threshold;
}

void Pipeline::Emit(uint16_t port, bool is_input, uint32_t offset, uint32_t length, Output* out) {
  out->frames.push_back({port, is_input, offset, length});
  PortCounters& pc = counters_.ports[port];
  ++pc.tx_packets;
  pc.tx_bytes += length;
}

void Pipeline::Process(absl::Span<uint8_t> frame, uint16_t in_port, Output* out) {
  if (in_port < counters_.ports.size()) {
    ++counters_.ports[in_port].rx_packets;
    counters_.ports[in_port].rx_bytes += frame.size();
  }
  // Is it GRID at all (IPv4/UDP to the GRID ports)? Anything else, of any
  // length, is plain IPv4 forwarding by destination address. A GRID packet
  // that fails a codec check is dropped and counted by reason.
  const uint8_t* f = frame.data();
  const bool ipv4 = frame.size() >= wire::kUdpOffset && Load16(f + 12) == wire::kEtherTypeIpv4;
  const bool grid =
      ipv4 && frame.size() >= wire::kGridOffset &&
      f[wire::kIpv4Offset + offsetof(wire::Ipv4Header, protocol)] == wire::kIpProtocolUdp &&
      Load16(f + wire::kUdpOffset + 2) >= wire::kUdpPortBase &&
      Load16(f + wire::kUdpOffset + 2) < wire::kUdpPortBase + wire::kUdpPortCount;
  if (!grid) {
    if (!ipv4) {
      DropPacket(static_cast<int>(Drop::kNoRoute));
      return;
    }
    uint32_t dst;
    std::memcpy(&dst, f + wire::kIpv4Offset + offsetof(wire::Ipv4Header, dst), 4);
    auto route = config_.ip_routes.find(wire::NetToHost32(dst));
    if (route == config_.ip_routes.end() || !DecrementTtl(frame.data())) {
      DropPacket(static_cast<int>(Drop::kNoRoute));
      return;
    }
    RewriteMacs(frame.data(), route->second.mac, config_.mac);
    ++counters_.other_forwarded;
    Emit(route->second.port, true, 0, static_cast<uint32_t>(frame.size()), out);
    return;
  }
  FrameView view;
  const wire::WireError error = wire::ParseFrame(frame, &view);
  if (error != wire::WireError::kOk) {
    DropPacket(static_cast<int>(error));
    return;
  }
  const Header& h = view.header;
  auto job_it = config_.jobs.find(h.job_id);
  if (job_it == config_.jobs.end()) {
    DropPacket(static_cast<int>(Drop::kUnknownJob));
    return;
  }
  const JobEntry& job = job_it->second;
  if (h.job_token != job.token) {
    DropPacket(static_cast<int>(Drop::kBadToken));
    return;
  }
  const bool here = h.agg_node == config_.node_id;
  if (!here) {
    ForwardByLabel(frame, view, out);
    return;
  }
  auto state = state_.find(h.job_id);
  if (state == state_.end() || (h.type != MessageType::kData && h.type != MessageType::kResult)) {
    DropPacket(static_cast<int>(Drop::kNotForUs));
    return;
  }
  if (h.type == MessageType::kData) {
    Aggregate(view, job, state->second, in_port, out);
  } else {
    Replicate(frame, view, job, out);
  }
}

void Pipeline::ForwardByLabel(absl::Span<uint8_t> frame, const FrameView& view, Output* out) {
  auto route = config_.label_routes.find(view.header.path);
  if (route == config_.label_routes.end() || !DecrementTtl(frame.data())) {
    DropPacket(static_cast<int>(Drop::kNoRoute));
    return;
  }
  RewriteMacs(frame.data(), route->second.mac, config_.mac);
  if (Congested(route->second.port)) frame[kFlagsOffset] |= wire::flags::kCongestion;
  ++counters_.forwarded;
  Emit(route->second.port, true, 0, static_cast<uint32_t>(view.frame_bytes), out);
}

void Pipeline::Aggregate(const FrameView& view, const JobEntry& job, JobState& state,
                         uint16_t in_port, Output* out) {
  const Header& h = view.header;
  const JobEntry::Aggregate& agg = *job.aggregate;
  JobCounters& jc = counters_.jobs[h.job_id];
  const uint16_t bit_plus_one = state.rank_bit[h.rank];
  if (bit_plus_one == 0) {
    DropPacket(static_cast<int>(Drop::kNotMember));
    return;
  }
  if (h.fan_in != agg.fan_in) {
    DropPacket(static_cast<int>(Drop::kBadFanIn));
    return;
  }
  if (h.slot >= agg.slots) {
    DropPacket(static_cast<int>(Drop::kBadSlot));
    return;
  }
  if (h.num_elements > agg.elements) {
    DropPacket(static_cast<int>(Drop::kBadLength));
    return;
  }
  const uint32_t copy_index = 2u * h.slot + ((h.flags & wire::flags::kCopy) ? 1u : 0u);
  Copy& c = state.copies[copy_index];
  int32_t* values = state.values.data() + size_t{copy_index} * agg.elements;
  const int bit = bit_plus_one - 1;
  const uint64_t mask = uint64_t{1} << (bit % 64);
  const int order = c.count == 0 ? 1 : wire::CompareChunk(h.op_seq, h.chunk, c.op_seq, c.chunk);
  if (order < 0) {
    // A late packet of a chunk this copy has moved past: its result is out.
    DropPacket(static_cast<int>(Drop::kStale));
    return;
  }
  if (order > 0) {
    if (c.count > 0 && !c.complete) {
      // Another chunk is mid-aggregation here: tell the sender, drop.
      ++jc.collisions;
      DropPacket(static_cast<int>(Drop::kCollision));
      Signal(view, wire::flags::kCollision, job, in_port, out);
      return;
    }
    // The first contribution overwrites the copy.
    c = Copy{h.op_seq,
             h.chunk,
             {},
             1,
             h.num_elements,
             h.exponent,
             h.next_exponent,
             static_cast<uint8_t>(h.flags & wire::flags::kCongestion),
             false};
    c.bitmap[bit / 64] = mask;
    numerics::Int32FromWire(view.payload, {values, h.num_elements});
  } else {
    if (h.num_elements != c.num_elements) {
      DropPacket(static_cast<int>(Drop::kBadLength));
      return;
    }
    if (c.bitmap[bit / 64] & mask) {
      // A retransmission. Into a complete copy: the partial (or the result on
      // its way back) was lost, so the partial goes to the root again, naming
      // the rank that asked. Into an incomplete copy: the others are still
      // coming; nothing to do.
      if (c.complete) {
        ++jc.partials_resent;
        EmitPartial(view, job, state, copy_index, h.rank, out);
      } else {
        ++jc.duplicates;
        DropPacket(static_cast<int>(Drop::kDuplicate));
      }
      return;
    }
    const bool overflow = internal::AddElements(values, view.payload, h.num_elements);
    c.bitmap[bit / 64] |= mask;
    ++c.count;
    c.exponent = std::max(c.exponent, h.exponent);
    c.next_exponent = std::max(c.next_exponent, h.next_exponent);
    c.flags |= (h.flags & wire::flags::kCongestion) | (overflow ? wire::flags::kOverflow : 0);
  }
  ++jc.data;
  if (c.count == agg.fan_in) {
    c.complete = true;
    ++jc.partials;
    if (c.flags & wire::flags::kOverflow) ++jc.overflows;
    EmitPartial(view, job, state, copy_index, wire::kAllRanks, out);
  }
}

void Pipeline::EmitPartial(const FrameView& view, const JobEntry& job, JobState& state,
                           uint32_t copy_index, uint16_t requester, Output* out) {
  const JobEntry::Aggregate& agg = *job.aggregate;
  const Copy& c = state.copies[copy_index];
  Header p;
  p.type = MessageType::kPartial;
  p.flags = static_cast<uint8_t>((copy_index & 1 ? wire::flags::kCopy : 0) | c.flags |
                                 (requester != wire::kAllRanks ? wire::flags::kRetransmit : 0));
  if (Congested(agg.root.port)) p.flags |= wire::flags::kCongestion;
  p.job_id = job.job_id;
  p.job_token = job.token;
  p.rank = requester;
  p.agg_node = agg.root_node;
  p.path = agg.to_root_label;
  p.next_path = 0;
  p.fan_in = agg.root_fan_in;
  p.slot = static_cast<uint16_t>(copy_index / 2);
  p.op_seq = c.op_seq;
  p.chunk = c.chunk;
  p.exponent = c.exponent;
  p.next_exponent = c.next_exponent;
  p.num_elements = c.num_elements;
  wire::FrameAddress a;
  a.src_mac = config_.mac;
  a.dst_mac = agg.root.mac;
  a.src_ip = config_.ip;
  a.dst_ip = agg.root.ip;
  a.src_port = wire::kUdpPortBase;
  a.dst_port = view.address.dst_port;
  const size_t offset = out->arena.size();
  out->arena.resize(offset + wire::FrameBytes(c.num_elements));
  uint8_t* frame = out->arena.data() + offset;
  // The header fields were all checked above, so this cannot fail.
  (void)wire::WriteFrameHeaders(a, p, {frame, wire::FrameBytes(c.num_elements)});
  numerics::Int32ToWire({state.values.data() + size_t{copy_index} * agg.elements, c.num_elements},
                        frame + wire::kPayloadOffset);
  Emit(agg.root.port, false, static_cast<uint32_t>(offset),
       static_cast<uint32_t>(wire::FrameBytes(c.num_elements)), out);
}

void Pipeline::Replicate(absl::Span<uint8_t> frame, const FrameView& view, const JobEntry& job,
                         Output* out) {
  const JobEntry::Aggregate& agg = *job.aggregate;
  const Header& h = view.header;
  JobCounters& jc = counters_.jobs[h.job_id];
  ++jc.results;
  const size_t bytes = view.frame_bytes;
  for (const Member& m : agg.members) {
    if (h.rank != wire::kAllRanks && h.rank != m.rank) continue;
    // Each replica: the result, readdressed to the member, on its result path.
    const size_t offset = out->arena.size();
    out->arena.resize(offset + bytes);
    uint8_t* r = out->arena.data() + offset;
    std::memcpy(r, frame.data(), bytes);
    RewriteMacs(r, m.to.mac, config_.mac);
    wire::Ipv4Header ip;
    std::memcpy(&ip, r + wire::kIpv4Offset, sizeof(ip));
    ip.src = wire::HostToNet32(config_.ip);
    ip.dst = wire::HostToNet32(m.to.ip);
    ip.ttl = 64;
    ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
    std::memcpy(r + wire::kIpv4Offset, &ip, sizeof(ip));
    uint8_t* g = r + wire::kGridOffset;
    Store16(g + offsetof(wire::WireHeader, rank), m.rank);
    Store16(g + offsetof(wire::WireHeader, path), m.result_label);
    if (Congested(m.to.port)) g[offsetof(wire::WireHeader, flags)] |= wire::flags::kCongestion;
    ++jc.replicas;
    Emit(m.to.port, false, static_cast<uint32_t>(offset), static_cast<uint32_t>(bytes), out);
  }
  if (h.rank != wire::kAllRanks && state_.at(h.job_id).rank_bit[h.rank] == 0) {
    DropPacket(static_cast<int>(Drop::kNotMember));
  }
}

void Pipeline::Signal(const FrameView& view, uint8_t flag, const JobEntry& job, uint16_t in_port,
                      Output* out) {
  const Header& h = view.header;
  const JobEntry::Aggregate& agg = *job.aggregate;
  auto member = std::find_if(agg.members.begin(), agg.members.end(),
                             [&](const Member& m) { return m.rank == h.rank; });
  Endpoint to{in_port, view.address.src_ip, view.address.src_mac};
  uint16_t label = 0;
  if (member != agg.members.end()) {
    to = member->to;
    label = member->result_label;
  }
  Header s;
  s.type = MessageType::kSignal;
  s.flags = static_cast<uint8_t>(flag | (h.flags & wire::flags::kCopy));
  s.job_id = h.job_id;
  s.job_token = h.job_token;
  s.rank = h.rank;
  s.agg_node = config_.node_id;
  s.path = label;
  s.fan_in = h.fan_in;
  s.slot = h.slot;
  s.op_seq = h.op_seq;
  s.chunk = h.chunk;
  s.num_elements = 0;
  wire::FrameAddress a;
  a.src_mac = config_.mac;
  a.dst_mac = to.mac;
  a.src_ip = config_.ip;
  a.dst_ip = view.address.src_ip;
  a.src_port = wire::kUdpPortBase;
  a.dst_port = view.address.dst_port;
  const size_t offset = out->arena.size();
  out->arena.resize(offset + wire::kPayloadOffset);
  (void)wire::WriteFrameHeaders(a, s, {out->arena.data() + offset, wire::kPayloadOffset});
  Emit(to.port, false, static_cast<uint32_t>(offset), static_cast<uint32_t>(wire::kPayloadOffset),
       out);
}

}  // namespace grid::sw
