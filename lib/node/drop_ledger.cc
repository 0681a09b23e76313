#include "node/drop_ledger.h"

namespace grid::node {

const char* JobDropName(JobDrop reason) {
  switch (reason) {
    case JobDrop::kUnknownJob:
      return "unknown_job";
    case JobDrop::kBadToken:
      return "bad_token";
    case JobDrop::kNotMember:
      return "not_member";
    case JobDrop::kBadSource:
      return "bad_source";
    case JobDrop::kBadIngress:
      return "bad_ingress";
    case JobDrop::kStale:
      return "stale";
    case JobDrop::kEnd:
      break;
  }
  return "unknown";
}

void DropLedger::Count(uint16_t job, uint32_t token, JobDrop reason) {
  const uint64_t key = Key(job, token);
  const auto r = static_cast<size_t>(reason);
  if (r >= static_cast<size_t>(kNumJobDrops)) return;
  if (last_ >= 0 && entries_[last_].key.load(std::memory_order_relaxed) == key) {
    Bump(entries_[last_].counts[r]);
    return;
  }
  const int used = used_.load(std::memory_order_relaxed);
  for (int i = 0; i < used; ++i) {
    if (entries_[i].key.load(std::memory_order_relaxed) == key) {
      last_ = i;
      Bump(entries_[i].counts[r]);
      return;
    }
  }
  if (used == kCapacity) {
    Bump(untracked_);
    return;
  }
  // The count first, then the key, then the size: a reader that sees the
  // entry sees its first drop.
  Entry& e = entries_[used];
  Bump(e.counts[r]);
  e.key.store(key, std::memory_order_release);
  used_.store(used + 1, std::memory_order_release);
  last_ = used;
}

std::vector<JobDrops> DropLedger::Snapshot() const {
  std::vector<JobDrops> out;
  const int used = used_.load(std::memory_order_acquire);
  out.reserve(used);
  for (int i = 0; i < used; ++i) {
    const uint64_t key = entries_[i].key.load(std::memory_order_acquire);
    JobDrops d;
    d.job = static_cast<uint16_t>(key >> 32);
    d.token = static_cast<uint32_t>(key);
    for (int r = 0; r < kNumJobDrops; ++r) {
      d.counts[r] = entries_[i].counts[r].load(std::memory_order_relaxed);
    }
    out.push_back(d);
  }
  return out;
}

std::vector<JobDrops> MergeDrops(const std::vector<std::vector<JobDrops>>& parts) {
  std::vector<JobDrops> out;
  for (const auto& part : parts) {
    for (const JobDrops& d : part) {
      JobDrops* into = nullptr;
      for (JobDrops& o : out) {
        if (o.job == d.job && o.token == d.token) into = &o;
      }
      if (into == nullptr) {
        out.push_back(d);
        continue;
      }
      for (int r = 0; r < kNumJobDrops; ++r) into->counts[r] += d.counts[r];
    }
  }
  return out;
}

}  // namespace grid::node
