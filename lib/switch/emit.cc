// What the switch pipeline sends of its own: a slot's partial toward the
// root, a result replicated to the members, and a collision's SIGNAL
// (docs/switch.md).
#include <cstring>

#include "grid/numerics.h"
#include "grid/switch.h"
#include "switch/frame_fields.h"
#include "switch/job_state.h"

namespace grid::sw {
namespace {

namespace ff = frame_fields;
using wire::FrameView;
using wire::Header;
using wire::MessageType;

// A frame from this switch to `to`, in the job's UDP port (the one the
// frame that prompted it came to).
wire::FrameAddress AddressTo(const SwitchConfig& config, const Endpoint& to, uint16_t dst_port) {
  wire::FrameAddress a;
  a.src_mac = config.mac;
  a.dst_mac = to.mac;
  a.src_ip = config.ip;
  a.dst_ip = to.ip;
  a.src_port = wire::kUdpPortBase;
  a.dst_port = dst_port;
  return a;
}

}  // namespace

void Pipeline::EmitPartial(const FrameView& view, const JobEntry& job,
                           const JobEntry::Aggregate& agg, bool proxy, JobState& state,
                           uint32_t copy_index, uint16_t requester, Output* out) {
  const aggregation::Copy& c = state.copies[copy_index];
  Header p;
  p.type = MessageType::kPartial;
  aggregation::StampSum(c, copy_index, requester, static_cast<uint16_t>(agg.elements), p);
  // A proxy's partial carries PASSED: the root takes it, from this switch,
  // as the owner's (agg_node), which this switch could not be otherwise.
  if (proxy) p.flags |= wire::flags::kPassed;
  if (Congested(agg.root.port)) p.flags |= wire::flags::kCongestion;
  p.job_id = job.job_id;
  p.job_token = job.token;
  p.rank = requester;
  p.agg_node = agg.root_node;
  p.path = agg.to_root_label;
  p.next_path = 0;
  p.fan_in = agg.root_fan_in;
  const wire::FrameAddress a = AddressTo(config_, agg.root, view.address.dst_port);
  const size_t bytes = wire::FrameBytes(p.num_elements);
  const size_t offset = out->arena.size();
  out->arena.resize(offset + bytes);
  uint8_t* frame = out->arena.data() + offset;
  // The header fields were all checked above, so this cannot fail.
  (void)wire::WriteFrameHeaders(a, p, {frame, bytes});
  if (p.num_elements != 0) {
    numerics::Int32ToWire({state.values.data() + size_t{copy_index} * agg.elements, agg.elements},
                          frame + wire::kPayloadOffset);
  }
  Emit(agg.root.port, false, static_cast<uint32_t>(offset), static_cast<uint32_t>(bytes), out);
}

void Pipeline::Replicate(absl::Span<uint8_t> frame, const FrameView& view, const JobEntry& job,
                         const JobState& state, uint16_t in_port, Output* out) {
  const JobEntry::Aggregate& agg = *job.aggregate;
  const Header& h = view.header;
  // Results come from the root, on the path from it.
  if (in_port != agg.root.port) {
    DropPacket(Reason(Drop::kBadIngress));
    return;
  }
  if (view.address.src_ip != agg.root.ip) {
    DropPacket(Reason(Drop::kBadSource));
    return;
  }
  if (h.rank != wire::kAllRanks && state.member[h.rank] == 0) {
    DropPacket(Reason(Drop::kNotMember));
    return;
  }
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
    ff::RewriteMacs(r, m.to.mac, config_.mac);
    wire::Ipv4Header ip = ff::LoadIpv4(r);
    ip.src = wire::HostToNet32(config_.ip);
    ip.dst = wire::HostToNet32(m.to.ip);
    ip.ttl = ff::kFreshTtl;
    ff::StoreIpv4(r, ip);
    ff::Store16(r + ff::kUdpChecksumOffset, 0);
    ff::Store16(r + ff::kRankOffset, m.rank);
    ff::Store16(r + ff::kPathOffset, m.result_label);
    if (Congested(m.to.port)) r[ff::kFlagsOffset] |= wire::flags::kCongestion;
    ++jc.replicas;
    Emit(m.to.port, false, static_cast<uint32_t>(offset), static_cast<uint32_t>(bytes), out);
  }
}

void Pipeline::Signal(const FrameView& view, const JobEntry& job, const Member& to, Output* out) {
  const Header& h = view.header;
  Header s;
  s.type = MessageType::kSignal;
  s.flags = static_cast<uint8_t>(wire::flags::kCollision | (h.flags & wire::flags::kCopy));
  s.job_id = h.job_id;
  s.job_token = job.token;
  s.rank = h.rank;
  s.agg_node = config_.node_id;
  s.path = to.result_label;
  s.fan_in = h.fan_in;
  s.slot = h.slot;
  s.op_seq = h.op_seq;
  s.chunk = h.chunk;
  s.num_elements = 0;
  const wire::FrameAddress a = AddressTo(config_, to.to, view.address.dst_port);
  const size_t offset = out->arena.size();
  out->arena.resize(offset + wire::kPayloadOffset);
  (void)wire::WriteFrameHeaders(a, s, {out->arena.data() + offset, wire::kPayloadOffset});
  Emit(to.to.port, false, static_cast<uint32_t>(offset),
       static_cast<uint32_t>(wire::kPayloadOffset), out);
}

}  // namespace grid::sw
