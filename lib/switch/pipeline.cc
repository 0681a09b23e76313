// The switch pipeline, packet by packet. docs/switch.md states the rules; the
// slot rules themselves are aggregation::Contribute, shared with the root, and
// the P4 programs implement the same decisions (tests/p4/ holds them to it).
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/str_format.h"
#include "aggregation/copy.h"
#include "grid/switch.h"
#include "node/drop_ledger.h"
#include "switch/frame_fields.h"
#include "switch/job_state.h"

namespace grid::sw {
namespace {

using frame_fields::kDstIpOffset;
using frame_fields::kEtherTypeOffset;
using frame_fields::kFlagsOffset;
using frame_fields::kPathOffset;
using frame_fields::kProtocolOffset;
using frame_fields::kTtlOffset;
using frame_fields::kUdpChecksumOffset;
using frame_fields::kUdpDstPortOffset;
using frame_fields::kVersionIhl;
using frame_fields::kVersionIhlOffset;
using frame_fields::Load16;
using frame_fields::LoadIpv4;
using frame_fields::RewriteMacs;
using frame_fields::Store16;
using frame_fields::StoreIpv4;

using wire::FrameView;
using wire::Header;
using wire::MessageType;

}  // namespace

Pipeline::Pipeline(SwitchConfig config)
    : config_(std::move(config)), job_drops_(std::make_unique<node::DropLedger>()) {
  // A switch starts with a full bucket (BuildState caps it at the burst).
  credit_bits_ = std::numeric_limits<double>::infinity();
}
Pipeline::~Pipeline() = default;
Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;

absl::StatusOr<Pipeline> Pipeline::Create(SwitchConfig config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  Pipeline p(std::move(config));
  p.BuildState();
  return p;
}

namespace {

// A pool's state for aggregate `a` of a job with `token`: `old`'s if neither
// its pool nor the token changed (a table reload must not lose chunks in
// flight), fresh otherwise. A new token is a new run of the job (the
// controller draws one per publish): the old run's complete copies would
// answer its chunks with the old sums.
template <typename State>
std::unique_ptr<State> StateFor(const JobEntry::Aggregate& a, uint32_t token,
                                std::unique_ptr<State> old) {
  std::unique_ptr<State> s;
  if (old && old->token == token && old->copies.size() == 2u * a.slots &&
      old->values.size() == 2u * a.slots * a.elements) {
    s = std::move(old);
  } else {
    s = std::make_unique<State>();
    s->copies.assign(2u * a.slots, aggregation::Copy{});
    s->bitmaps.assign(2u * a.slots * State::kBitmapWords, 0);
    s->values.assign(2u * a.slots * a.elements, 0);
    s->passed.assign(2u * a.slots, typename State::PassMark{});
    s->token = token;
  }
  s->member.assign(65536, 0);
  for (size_t i = 0; i < a.members.size(); ++i) {
    s->member[a.members[i].rank] = static_cast<uint16_t>(i + 1);
  }
  return s;
}

}  // namespace

void Pipeline::BuildState() {
  counters_.ports.resize(config_.num_ports);
  queue_depth_.resize(config_.num_ports, 0);
  std::map<uint16_t, std::unique_ptr<JobState>> next;
  std::map<std::pair<uint16_t, uint16_t>, std::unique_ptr<JobState>> next_proxies;
  credit_cap_bits_ = CapacityBurstBits(config_);
  for (const auto& [id, job] : config_.jobs) {
    for (const auto& [owner, a] : job.proxies) {
      auto old = proxy_state_.find({id, owner});
      next_proxies.emplace(
          std::pair{id, owner},
          StateFor<JobState>(a, job.token,
                             old == proxy_state_.end() ? nullptr : std::move(old->second)));
    }
    if (!job.aggregate && job.proxies.empty()) continue;
    counters_.jobs[id];
    if (!job.aggregate) continue;
    auto old = state_.find(id);
    next.emplace(id, StateFor<JobState>(*job.aggregate, job.token,
                                        old == state_.end() ? nullptr : std::move(old->second)));
  }
  state_ = std::move(next);
  proxy_state_ = std::move(next_proxies);
  credit_bits_ = std::min(credit_bits_, credit_cap_bits_);
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
    if (job.aggregate || !job.proxies.empty()) counters_.jobs[id];
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
  // Is it GRID at all: IPv4, UDP, to a GRID port (read where an option-less
  // header puts it)? Anything else, of any length, is plain IPv4 forwarding
  // by destination address. A GRID packet that fails a codec check is
  // dropped and counted by reason.
  const uint8_t* f = frame.data();
  const bool ipv4 =
      frame.size() >= wire::kUdpOffset && Load16(f + kEtherTypeOffset) == wire::kEtherTypeIpv4;
  const bool grid = ipv4 && frame.size() >= wire::kGridOffset &&
                    f[kProtocolOffset] == wire::kIpProtocolUdp &&
                    Load16(f + kUdpDstPortOffset) >= wire::kUdpPortBase &&
                    Load16(f + kUdpDstPortOffset) < wire::kUdpPortBase + wire::kUdpPortCount;
  if (!grid) {
    ForwardOther(frame, ipv4, in_port, out);
    return;
  }
  FrameView view;
  const wire::WireError error = wire::ParseFrame(frame, &view);
  if (error != wire::WireError::kOk) {
    DropPacket(Reason(error));
    return;
  }
  const Header& h = view.header;
  if (!FromItsHost(in_port, view.address.src_ip)) {
    DropForJob(h, Drop::kBadSource);
    return;
  }
  auto job_it = config_.jobs.find(h.job_id);
  if (job_it == config_.jobs.end()) {
    DropForJob(h, Drop::kUnknownJob);
    return;
  }
  const JobEntry& job = job_it->second;
  if (h.job_token != job.token) {
    DropForJob(h, Drop::kBadToken);
    return;
  }
  if (h.agg_node != config_.node_id) {
    // ATP's second level: the owner passed this chunk on, and this switch
    // is its proxy.
    if (h.type == MessageType::kData && (h.flags & wire::flags::kPassed)) {
      auto proxy = job.proxies.find(h.agg_node);
      auto state = proxy_state_.find({h.job_id, h.agg_node});
      if (proxy != job.proxies.end() && state != proxy_state_.end()) {
        Aggregate(frame, view, job, proxy->second, true, *state->second, in_port, out);
        return;
      }
    }
    ForwardByLabel(frame, view, out);
    return;
  }
  auto state = state_.find(h.job_id);
  if (state == state_.end() || (h.type != MessageType::kData && h.type != MessageType::kResult)) {
    DropPacket(Reason(Drop::kNotForUs));
    return;
  }
  if (h.type == MessageType::kData) {
    Aggregate(frame, view, job, *job.aggregate, false, *state->second, in_port, out);
  } else {
    Replicate(frame, view, job, *state->second, in_port, out);
  }
}

bool Pipeline::FromItsHost(uint16_t in_port, uint32_t src_ip) const {
  // On a port that faces a host, only that host's address is a valid source
  // (ingress filtering, BCP 38): no host can speak for another node.
  auto host = config_.hosts.find(in_port);
  return host == config_.hosts.end() || host->second == src_ip;
}

void Pipeline::ForwardOther(absl::Span<uint8_t> frame, bool ipv4, uint16_t in_port, Output* out) {
  // A router's checks: a header it can read and whose checksum verifies.
  if (!ipv4) {
    DropPacket(Reason(Drop::kNoRoute));
    return;
  }
  uint8_t* f = frame.data();
  const uint8_t version_ihl = f[kVersionIhlOffset];
  const wire::Ipv4Header ip = LoadIpv4(f);
  if ((version_ihl >> 4) != 4) {
    DropPacket(Reason(wire::WireError::kIpVersion));
  } else if (version_ihl != kVersionIhl) {
    DropPacket(Reason(wire::WireError::kIpHeaderLength));
  } else if (wire::Ipv4Checksum(ip) != wire::NetToHost16(ip.checksum)) {
    DropPacket(Reason(wire::WireError::kIpChecksum));
  } else if (!FromItsHost(in_port, wire::NetToHost32(ip.src))) {
    DropPacket(Reason(Drop::kBadSource));
  } else if (f[kTtlOffset] <= 1) {
    DropPacket(Reason(Drop::kTtlExpired));
  } else {
    uint32_t dst;
    std::memcpy(&dst, f + kDstIpOffset, 4);
    auto route = config_.ip_routes.find(wire::NetToHost32(dst));
    if (route == config_.ip_routes.end()) {
      DropPacket(Reason(Drop::kNoRoute));
      return;
    }
    wire::Ipv4Header next = ip;
    --next.ttl;
    StoreIpv4(f, next);
    RewriteMacs(f, route->second.mac, config_.mac);
    ++counters_.other_forwarded;
    Emit(route->second.port, true, 0, static_cast<uint32_t>(frame.size()), out);
  }
}

void Pipeline::ForwardByLabel(absl::Span<uint8_t> frame, const FrameView& view, Output* out) {
  uint8_t* f = frame.data();
  if (f[kTtlOffset] <= 1) {
    DropPacket(Reason(Drop::kTtlExpired));
    return;
  }
  auto route = config_.label_routes.find(view.header.path);
  if (route == config_.label_routes.end()) {
    DropPacket(Reason(Drop::kNoRoute));
    return;
  }
  wire::Ipv4Header ip = LoadIpv4(f);
  --ip.ttl;
  StoreIpv4(f, ip);
  RewriteMacs(f, route->second.mac, config_.mac);
  // Every GRID packet a switch sends has no UDP checksum (wire-protocol.md):
  // the flags may change here, and a sender's kernel may have set one.
  Store16(f + kUdpChecksumOffset, 0);
  if (Congested(route->second.port)) f[kFlagsOffset] |= wire::flags::kCongestion;
  ++counters_.forwarded;
  Emit(route->second.port, true, 0, static_cast<uint32_t>(view.frame_bytes), out);
}

std::optional<Drop> Pipeline::Refuse(const FrameView& view, const JobEntry::Aggregate& agg,
                                     const JobState& state, uint16_t in_port) const {
  const Header& h = view.header;
  const uint16_t index = state.member[h.rank];
  if (index == 0) return Drop::kNotMember;
  // A rank's chunks come from its host, on the plan's path: the port the
  // switch sends its results out of, and the host's address.
  const Member& member = agg.members[index - 1];
  if (in_port != member.to.port) return Drop::kBadIngress;
  if (view.address.src_ip != member.to.ip) return Drop::kBadSource;
  if (h.fan_in != agg.fan_in) return Drop::kBadFanIn;
  if (h.slot >= agg.slots) return Drop::kBadSlot;
  // Every chunk of a job carries exactly `elements` (tails are padded), which
  // is what a P4 target's fixed payload parser needs, or none (a probe).
  if (h.num_elements != 0 && h.num_elements != agg.elements) return Drop::kBadLength;
  return std::nullopt;
}

void Pipeline::Aggregate(absl::Span<uint8_t> frame, const FrameView& view, const JobEntry& job,
                         const JobEntry::Aggregate& agg, bool proxy, JobState& state,
                         uint16_t in_port, Output* out) {
  const Header& h = view.header;
  if (const std::optional<Drop> refused = Refuse(view, agg, state, in_port)) {
    DropForJob(h, *refused);
    return;
  }
  JobCounters& jc = counters_.jobs[h.job_id];
  const Member& member = agg.members[state.member[h.rank] - 1];
  const uint32_t copy_index = 2u * h.slot + ((h.flags & wire::flags::kCopy) ? 1u : 0u);
  aggregation::Copy& c = state.copies[copy_index];
  // Capacity C_s: a best-effort job decides per chunk, on its first packet
  // here (PassOn); any other job's DATA beyond the capacity is dropped, and
  // its sender's loss recovery sends it again.
  const double bits = 8.0 * static_cast<double>(view.frame_bytes);
  bool charged = false;
  if (agg.best_effort) {
    switch (PassOn(view, agg, state, copy_index)) {
      case Admission::kPass:
        Pass(frame, view, job, agg, out);
        return;
      case Admission::kStale:
        DropForJob(h, Drop::kStale);
        return;
      case Admission::kAggregate:
        break;
    }
  } else if (config_.capacity_gbps > 0) {
    if (!SpendCredit(bits)) {
      DropPacket(Reason(Drop::kOverCapacity));
      return;
    }
    charged = true;
  }
  const aggregation::Verdict verdict = aggregation::Contribute(
      c,
      absl::MakeSpan(state.bitmaps)
          .subspan(size_t{copy_index} * JobState::kBitmapWords, JobState::kBitmapWords),
      state.values.data() + size_t{copy_index} * agg.elements, agg.elements, agg.fan_in,
      {h.op_seq, h.chunk, h.exponent, h.next_exponent, h.flags,
       h.num_elements == 0 ? nullptr : view.payload, member.bit});
  const bool added =
      verdict == aggregation::Verdict::kFirst || verdict == aggregation::Verdict::kAdded;
  if (charged && !added) credit_bits_ += bits;  // nothing was aggregated
  switch (verdict) {
    case aggregation::Verdict::kStale:
    case aggregation::Verdict::kOtherLength:
      DropForJob(h, verdict == aggregation::Verdict::kStale ? Drop::kStale : Drop::kBadLength);
      return;
    case aggregation::Verdict::kCollision:
      // Another chunk is mid-aggregation here: tell the sender, drop.
      ++jc.collisions;
      DropPacket(Reason(Drop::kCollision));
      // A proxy is not the member's aggregation node, whose SIGNALs alone
      // the member takes: its loss recovery resends instead.
      if (!proxy) Signal(view, job, member, out);
      return;
    case aggregation::Verdict::kDuplicate:
      ++jc.duplicates;
      DropPacket(Reason(Drop::kDuplicate));
      return;
    case aggregation::Verdict::kResend:
      // The partial (or the result on its way back) was lost: the partial
      // goes to the root again, naming the rank that asked.
      ++jc.partials_resent;
      EmitPartial(view, job, agg, proxy, state, copy_index, h.rank, out);
      return;
    case aggregation::Verdict::kFirst:
    case aggregation::Verdict::kAdded:
      break;
  }
  ++(proxy ? jc.proxied : jc.data);
  if (c.complete) {
    ++jc.partials;
    if (c.flags & wire::flags::kOverflow) ++jc.overflows;
    EmitPartial(view, job, agg, proxy, state, copy_index, wire::kAllRanks, out);
  }
}

Pipeline::Admission Pipeline::PassOn(const FrameView& view, const JobEntry::Aggregate& agg,
                                     JobState& state, uint32_t copy_index) {
  // ATP's rule: the first packet of a chunk at a copy takes an aggregator if
  // the switch has the capacity for the whole chunk (every member's packet);
  // otherwise the chunk is passed on, all its packets alike, so the root
  // gets either this switch's partial or every member's DATA, never a mix.
  const wire::Header& h = view.header;
  JobState::PassMark& mark = state.passed[copy_index];
  if (mark.valid) {
    const int order = wire::CompareChunk(h.op_seq, h.chunk, mark.op_seq, mark.chunk);
    if (order == 0) return Admission::kPass;
    if (order < 0) return Admission::kStale;
    mark.valid = false;
  }
  const aggregation::Copy& c = state.copies[copy_index];
  const bool starts =
      c.count == 0 || (c.complete && wire::CompareChunk(h.op_seq, h.chunk, c.op_seq, c.chunk) > 0);
  if (!starts || SpendCredit(8.0 * agg.fan_in * static_cast<double>(view.frame_bytes))) {
    return Admission::kAggregate;
  }
  mark = {h.op_seq, h.chunk, true};
  ++counters_.jobs[h.job_id].passed_chunks;
  return Admission::kPass;
}

void Pipeline::Pass(absl::Span<uint8_t> frame, const FrameView& view, const JobEntry& job,
                    const JobEntry::Aggregate& agg, Output* out) {
  // On toward the root, unchanged but for the hop: the partials' path, the
  // PASSED flag, the root as destination and this switch as the previous
  // hop. The source address stays the member's, which the root checks.
  uint8_t* f = frame.data();
  if (f[kTtlOffset] <= 1) {
    DropPacket(Reason(Drop::kTtlExpired));
    return;
  }
  wire::Ipv4Header ip = LoadIpv4(f);
  --ip.ttl;
  ip.dst = wire::HostToNet32(agg.root.ip);  // a root on kernel sockets takes only its own
  StoreIpv4(f, ip);
  RewriteMacs(f, agg.root.mac, config_.mac);
  Store16(f + kUdpChecksumOffset, 0);
  Store16(f + kPathOffset, agg.to_root_label);
  f[kFlagsOffset] |= wire::flags::kPassed;
  if (Congested(agg.root.port)) f[kFlagsOffset] |= wire::flags::kCongestion;
  ++counters_.jobs[job.job_id].passed;
  Emit(agg.root.port, true, 0, static_cast<uint32_t>(view.frame_bytes), out);
}

size_t Pipeline::BusyCopies() const {
  size_t busy = 0;
  auto count = [&](const JobState& state) {
    for (const aggregation::Copy& c : state.copies) busy += c.count > 0 && !c.complete ? 1 : 0;
  };
  for (const auto& [id, state] : state_) count(*state);
  for (const auto& [key, state] : proxy_state_) count(*state);
  return busy;
}

}  // namespace grid::sw
