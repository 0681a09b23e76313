// The switch's counters: drop reasons by name, and sums over pipelines
// (grid-switch adds up its lcores').
#include "grid/switch.h"
#include "node/drop_ledger.h"
#include "switch/counter_fields.h"
#include "switch/job_state.h"

namespace grid::sw {

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
    case Drop::kTtlExpired:
      return "ttl_expired";
    case Drop::kBadIngress:
      return "bad_ingress";
    case Drop::kBadSource:
      return "bad_source";
    case Drop::kOverCapacity:
      return "over_capacity";
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
    for (const JobCounterField& f : kJobCounterFields) m.*f.member += j.*f.member;
  }
  if (ports.size() < o.ports.size()) ports.resize(o.ports.size());
  for (size_t p = 0; p < o.ports.size(); ++p) {
    ports[p].rx_packets += o.ports[p].rx_packets;
    ports[p].rx_bytes += o.ports[p].rx_bytes;
    ports[p].tx_packets += o.ports[p].tx_packets;
    ports[p].tx_bytes += o.ports[p].tx_bytes;
  }
}

void Pipeline::DropForJob(const wire::Header& h, Drop reason) {
  DropPacket(Reason(reason));
  node::JobDrop d;
  switch (reason) {
    case Drop::kUnknownJob:
      d = node::JobDrop::kUnknownJob;
      break;
    case Drop::kBadToken:
      d = node::JobDrop::kBadToken;
      break;
    case Drop::kNotMember:
      d = node::JobDrop::kNotMember;
      break;
    case Drop::kBadSource:
      d = node::JobDrop::kBadSource;
      break;
    case Drop::kBadIngress:
      d = node::JobDrop::kBadIngress;
      break;
    case Drop::kStale:
      d = node::JobDrop::kStale;
      break;
    default:
      return;  // fan-in, slot, length: the ranks' own checks catch those
  }
  job_drops_->Count(h.job_id, h.job_token, d);
}

}  // namespace grid::sw
