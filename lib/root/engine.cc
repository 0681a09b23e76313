#include "root/engine.h"

#include <algorithm>

#include "aggregation/copy.h"
#include "grid/numerics.h"

namespace grid::root {

namespace {

// Contributor bits, then one per member of each best-effort switch.
uint32_t Bits(const host_config::RootConfig& config) {
  size_t bits = config.contributors.size();
  for (const auto& c : config.contributors) bits += c.members.size();
  return static_cast<uint32_t>(bits);
}

}  // namespace

RootEngine::RootEngine(const host_config::RootConfig& config, Transport* transport, size_t batch,
                       node::DropLedger* job_drops)
    : config_(config),
      transport_(transport),
      batch_(std::max<size_t>(1, batch)),
      job_drops_(job_drops),
      words_((Bits(config) + 63) / 64),
      copies_(size_t{2} * config.slots),
      bitmaps_(size_t{2} * config.slots * words_),
      sums_(size_t{2} * config.slots * config.elements),
      by_rank_(config.world, -1),
      member_bit_(config.contributors.size(), 0),
      tx_(batch_) {
  uint32_t next_bit = static_cast<uint32_t>(config.contributors.size());
  for (size_t i = 0; i < config.contributors.size(); ++i) {
    const auto& c = config.contributors[i];
    if (c.is_switch) {
      by_ip_[c.ip] = static_cast<int>(i);
    } else if (c.rank < by_rank_.size()) {
      by_rank_[c.rank] = static_cast<int>(i);
    }
    if (c.is_switch && !c.members.empty()) {
      by_node_[static_cast<uint16_t>(c.node)] = static_cast<int>(i);
      member_bit_[i] = next_bit;
      next_bit += static_cast<uint32_t>(c.members.size());
    }
    units_ += c.members.empty() ? 1 : static_cast<uint32_t>(c.members.size());
  }
}

bool RootEngine::Poll() {
  const size_t n = transport_->Receive(batch_, [&](absl::Span<const uint8_t> f) { OnFrame(f); });
  Flush();
  return n > 0;
}

RootEngine::From RootEngine::Contributor(const wire::FrameView& v) const {
  // A contribution counts only from where it must come from: a switch of the
  // plan (by its address; switches drop any packet that claims another
  // node's address at the edge) sending a PARTIAL, a worker the plan sends
  // to the root sending DATA from its own address, or a member of a
  // best-effort switch whose DATA that switch passed on. On a transport of
  // whole frames, through the root's first hop too (its MAC).
  const wire::Header& h = v.header;
  From from;
  if (h.job_id != config_.job_id || h.job_token != config_.token) return from;
  int who = -1;
  if (h.type == wire::MessageType::kPartial && (h.flags & wire::flags::kPassed)) {
    // A best-effort switch's chunk, completed by its proxy (ATP's second
    // level): counts as that switch's partial, from the proxy's address only.
    auto it = by_node_.find(h.agg_node);
    if (it != by_node_.end() && config_.contributors[it->second].proxy_ip != 0 &&
        config_.contributors[it->second].proxy_ip == v.address.src_ip) {
      who = it->second;
      from.bit = static_cast<uint32_t>(who);
      from.weight = static_cast<uint32_t>(config_.contributors[who].members.size());
      from.proxied = true;
    }
  } else if (h.type == wire::MessageType::kPartial) {
    if (auto it = by_ip_.find(v.address.src_ip); it != by_ip_.end()) who = it->second;
    if (who >= 0) {
      from.bit = static_cast<uint32_t>(who);
      const size_t members = config_.contributors[who].members.size();
      from.weight = members == 0 ? 1 : static_cast<uint32_t>(members);
    }
  } else if (h.type == wire::MessageType::kData && (h.flags & wire::flags::kPassed)) {
    auto it = by_node_.find(h.agg_node);
    if (it != by_node_.end()) {
      const auto& members = config_.contributors[it->second].members;
      for (size_t m = 0; m < members.size(); ++m) {
        if (members[m].rank != h.rank) continue;
        if (members[m].ip == v.address.src_ip) {
          who = it->second;
          from.bit = member_bit_[who] + static_cast<uint32_t>(m);
          from.passed = true;
        }
        break;
      }
    }
  } else if (h.type == wire::MessageType::kData && h.rank < by_rank_.size()) {
    who = by_rank_[h.rank];
    if (who >= 0 && config_.contributors[who].ip != v.address.src_ip) who = -1;
    if (who >= 0) from.bit = static_cast<uint32_t>(who);
  }
  if (who >= 0 && !transport_->datagrams() &&
      v.address.src_mac != config_.contributors[who].next_hop_mac) {
    who = -1;
  }
  from.contributor = who;
  return from;
}

bool RootEngine::Covered(const From& from, uint32_t copy_index) const {
  const auto& members = config_.contributors[from.contributor].members;
  if (members.empty()) return false;
  const uint64_t* bitmap = bitmaps_.data() + size_t{copy_index} * words_;
  auto set = [&](uint32_t bit) { return (bitmap[bit / 64] >> (bit % 64)) & 1; };
  if (from.passed) return set(static_cast<uint32_t>(from.contributor));
  const uint32_t first = member_bit_[from.contributor];
  for (uint32_t b = first; b < first + members.size(); ++b) {
    if (set(b)) return true;
  }
  return false;
}

void RootEngine::CountOtherJob(const wire::Header& h) {
  if (job_drops_ == nullptr || (h.job_id == config_.job_id && h.job_token == config_.token)) {
    return;
  }
  job_drops_->Count(
      h.job_id, h.job_token,
      h.job_id != config_.job_id ? node::JobDrop::kUnknownJob : node::JobDrop::kBadToken);
}

void RootEngine::OnFrame(absl::Span<const uint8_t> frame) {
  ++stats_.packets_received;
  stats_.bytes_received += frame.size();
  wire::FrameView v;
  if (wire::ParseFrame(frame, &v) != wire::WireError::kOk) {
    ++stats_.malformed;
    return;
  }
  const wire::Header& h = v.header;
  CountOtherJob(h);
  const From from = Contributor(v);
  const int who = from.contributor;
  if (who < 0) {
    ++stats_.foreign;
    return;
  }
  const size_t contributors = config_.contributors.size();
  // A passed DATA still carries what its member sent to the switch, and a
  // proxy's partial the same fan-in.
  const bool addressed =
      from.passed || from.proxied
          ? h.fan_in == config_.contributors[who].members.size()
          : h.agg_node == static_cast<uint16_t>(config_.node) && h.fan_in == contributors;
  if (!addressed || h.slot >= config_.slots ||
      (h.num_elements != 0 && h.num_elements != config_.elements)) {
    ++stats_.rejected;
    return;
  }
  const uint32_t copy_index = 2u * h.slot + ((h.flags & wire::flags::kCopy) ? 1u : 0u);
  aggregation::Copy& c = copies_[copy_index];
  aggregation::Verdict verdict;
  if (c.count > 0 && wire::CompareChunk(h.op_seq, h.chunk, c.op_seq, c.chunk) == 0 &&
      Covered(from, copy_index)) {
    // The switch's share is in already, in the other form: a retransmission,
    // answered only in the copy's own length (aggregation::Contribute).
    verdict = (h.num_elements == 0) != c.header_only ? aggregation::Verdict::kOtherLength
              : c.complete                           ? aggregation::Verdict::kResend
                                                     : aggregation::Verdict::kDuplicate;
  } else {
    verdict = aggregation::Contribute(
        c, absl::MakeSpan(bitmaps_).subspan(size_t{copy_index} * words_, words_),
        sums_.data() + size_t{copy_index} * config_.elements, config_.elements, units_,
        {h.op_seq, h.chunk, h.exponent, h.next_exponent, h.flags,
         h.num_elements == 0 ? nullptr : v.payload, from.bit, from.weight});
  }
  switch (verdict) {
    case aggregation::Verdict::kStale:
      ++stats_.stale;
      if (job_drops_ != nullptr) job_drops_->Count(h.job_id, h.job_token, node::JobDrop::kStale);
      return;
    case aggregation::Verdict::kOtherLength:
      ++stats_.rejected;
      return;
    case aggregation::Verdict::kCollision:
      ++stats_.collisions;
      return;
    case aggregation::Verdict::kDuplicate:
      ++stats_.duplicates;
      return;
    case aggregation::Verdict::kResend:
      // The result was lost on its way: answer whoever asked. A switch's
      // retransmitted partial names the worker, so the switch unicasts.
      ++stats_.results_resent;
      SendResult(c, copy_index, who, h.rank);
      return;
    case aggregation::Verdict::kFirst:
    case aggregation::Verdict::kAdded:
      break;
  }
  ++stats_.contributions;
  if (from.passed) ++stats_.passed;
  if (from.proxied) ++stats_.proxied;
  if (!c.complete) return;
  ++stats_.completed;
  if (c.flags & wire::flags::kOverflow) ++stats_.overflows;
  for (size_t i = 0; i < contributors; ++i) {
    SendResult(c, copy_index, static_cast<int>(i), wire::kAllRanks);
  }
}

void RootEngine::SendResult(const aggregation::Copy& c, uint32_t copy_index, int contributor,
                            uint16_t rank) {
  const host_config::RootConfig::Contributor& to = config_.contributors[contributor];
  wire::Header h;
  h.type = wire::MessageType::kResult;
  aggregation::StampSum(c, copy_index, rank, static_cast<uint16_t>(config_.elements), h);
  h.job_id = config_.job_id;
  h.job_token = config_.token;
  // A switch replicates to all its members (or to the one that asked); a
  // direct worker is addressed by its rank.
  h.rank = to.is_switch ? rank : to.rank;
  h.agg_node = static_cast<uint16_t>(to.is_switch ? to.node : config_.node);
  h.path = to.result_label;
  h.fan_in = static_cast<uint16_t>(config_.contributors.size());
  wire::FrameAddress a;
  a.src_mac = config_.mac;
  a.dst_mac = to.next_hop_mac;
  a.src_ip = config_.ip;
  a.dst_ip = to.ip;
  if (tx_count_ == tx_.size()) Flush();
  std::vector<uint8_t>& frame = tx_[tx_count_];
  frame.resize(wire::FrameBytes(h.num_elements));
  if (!wire::WriteFrameHeaders(a, h, absl::MakeSpan(frame)).ok()) return;
  if (h.num_elements != 0) {
    numerics::Int32ToWire({sums_.data() + size_t{copy_index} * config_.elements, config_.elements},
                          frame.data() + wire::kPayloadOffset);
  }
  ++tx_count_;
}

void RootEngine::Flush() {
  if (tx_count_ == 0) return;
  spans_.assign(tx_.begin(), tx_.begin() + tx_count_);
  const size_t taken = transport_->Send(spans_);
  for (size_t i = 0; i < taken; ++i) stats_.bytes_sent += spans_[i].size();
  stats_.packets_sent += taken;
  tx_count_ = 0;
}

size_t RootEngine::BusyCopies() const {
  size_t busy = 0;
  for (const aggregation::Copy& c : copies_) busy += c.count > 0 && !c.complete ? 1 : 0;
  return busy;
}

}  // namespace grid::root
