// The drops a switch or the root counts against a job, so the job's ranks can
// be told why their frames go nowhere (docs/worker.md, "What nodes tell the
// ranks"). Counted by the job id and token a frame claims: a rank reads only
// the counts under its own job's token, so a host that does not hold the
// token cannot make any job's ranks fail (docs/security.md, "Drop notices").
//
// One thread counts (the packet loop that owns the pipeline or root engine);
// any thread may read, without a lock: every field is an atomic written by
// that one thread. A fixed table, so counting never allocates and a flood
// of made-up (job, token) pairs costs bounded memory; pairs beyond it are
// counted only in `untracked`.
#ifndef GRID_LIB_NODE_DROP_LEDGER_H_
#define GRID_LIB_NODE_DROP_LEDGER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace grid::node {

// The reasons a job's ranks hear of. All but kStale mean the node's tables
// and the ranks' plan disagree, so the job cannot make progress there;
// kStale is normal late traffic, except during a run's fence, where it means
// the node holds an earlier run's slots (api/fence.h).
enum class JobDrop : uint8_t {
  kUnknownJob,  // the node has no tables for the job id
  kBadToken,    // it holds the job under another token
  kNotMember,   // the rank is not a member where its DATA arrived
  kBadSource,   // from another address than the member's
  kBadIngress,  // on another port than the member's path
  kStale,       // a chunk older than the one its slot copy holds
  kEnd,
};
inline constexpr int kNumJobDrops = static_cast<int>(JobDrop::kEnd);
// "unknown_job", "bad_token", ...: the names the switch's counters use.
const char* JobDropName(JobDrop reason);

struct JobDrops {
  uint16_t job = 0;
  uint32_t token = 0;
  std::array<uint64_t, kNumJobDrops> counts{};
  bool operator==(const JobDrops&) const = default;
};

class DropLedger {
 public:
  // (job, token) pairs the ledger keeps apart. A job has one token at a
  // time, and a node serves a few jobs; 64 leaves room for republished jobs
  // and for junk.
  static constexpr int kCapacity = 64;

  DropLedger() = default;
  DropLedger(const DropLedger&) = delete;
  DropLedger& operator=(const DropLedger&) = delete;

  // The counting thread only.
  void Count(uint16_t job, uint32_t token, JobDrop reason);

  // Any thread: the pairs with counts, in the order they were first seen.
  std::vector<JobDrops> Snapshot() const;
  // Drops of pairs that found the table full.
  uint64_t untracked() const { return untracked_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::atomic<uint64_t> key{0};  // 0: free; else Key(job, token)
    std::array<std::atomic<uint64_t>, kNumJobDrops> counts{};
  };
  static uint64_t Key(uint16_t job, uint32_t token) {
    return (uint64_t{1} << 48) | (uint64_t{job} << 32) | token;
  }
  // A single writer: a relaxed load and store, no read-modify-write.
  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  std::array<Entry, kCapacity> entries_;
  std::atomic<int> used_{0};  // entries_[0, used_) hold keys
  std::atomic<uint64_t> untracked_{0};
  int last_ = -1;  // the counting thread's last entry: drops come in runs
};

// Every ledger's pairs, summed (a switch runs one pipeline per lane).
std::vector<JobDrops> MergeDrops(const std::vector<std::vector<JobDrops>>& parts);

}  // namespace grid::node

#endif  // GRID_LIB_NODE_DROP_LEDGER_H_
