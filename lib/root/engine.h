// The root (the paper's parameter server): completes every chunk from the
// partial sums of the aggregating switches and the chunks of the workers the
// plan assigns to it, then sends one RESULT copy per contributor
// (docs/worker.md, "The root"). Single-threaded: its owner calls Poll.
#ifndef GRID_LIB_ROOT_ENGINE_H_
#define GRID_LIB_ROOT_ENGINE_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "aggregation/copy.h"
#include "grid/host_config.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "node/drop_ledger.h"

namespace grid::root {

struct RootStats {
  uint64_t packets_received = 0, packets_sent = 0;
  uint64_t bytes_received = 0, bytes_sent = 0;
  uint64_t contributions = 0;   // added to a sum
  uint64_t completed = 0;       // chunks completed
  uint64_t results_resent = 0;  // answers to retransmissions into complete chunks
  uint64_t duplicates = 0;      // retransmissions into incomplete chunks
  uint64_t stale = 0;           // late packets of chunks a copy has moved past
  uint64_t collisions = 0;      // a newer chunk while the copy was mid-aggregation
  uint64_t overflows = 0;       // int32 sums that wrapped
  uint64_t malformed = 0;       // failed parsing
  uint64_t foreign = 0;         // another job's (id or token), or not from a contributor's source
  uint64_t rejected = 0;        // parsed, but not a contributor, fan-in, slot or length of this job
  uint64_t passed = 0;          // DATA a best-effort switch passed on, added to a sum
  uint64_t proxied = 0;         // partials a proxy sent in a best-effort switch's stead, added
};

class RootEngine {
 public:
  // `job_drops` (optional, outlives the engine): where the drops its job's
  // ranks hear of are counted (node/drop_ledger.h).
  RootEngine(const host_config::RootConfig& config, Transport* transport, size_t batch = 32,
             node::DropLedger* job_drops = nullptr);

  // Receives a batch and answers it. Returns whether anything arrived.
  bool Poll();
  // Handles one frame (Poll's per-frame step; tests call it directly).
  void OnFrame(absl::Span<const uint8_t> frame);
  void Flush();

  const RootStats& stats() const { return stats_; }
  // Slot copies holding a chunk that is not complete yet (a scan of the
  // pool, for GRID_TRACE's samples).
  size_t BusyCopies() const;
  const host_config::RootConfig& config() const { return config_; }

 private:
  // Who a packet counts for: the contributor it comes from (or, for DATA a
  // best-effort switch passed on, the switch it was passed by), its bit and
  // the share of the chunk it covers.
  struct From {
    int contributor = -1;  // -1: not from anyone of this job (docs/security.md)
    uint32_t bit = 0;
    uint32_t weight = 1;
    bool passed = false;
    bool proxied = false;  // the contributor's partial, from its proxy
  };
  From Contributor(const wire::FrameView& v) const;
  // A frame under another job id or token: in the ledger, for that job's
  // ranks (unknown_job, bad_token).
  void CountOtherJob(const wire::Header& h);
  // Whether the chunk in copy `copy_index` already has `from`'s share in the
  // other form: the switch's partial when a member's passed DATA comes, or
  // any passed DATA when the partial comes.
  bool Covered(const From& from, uint32_t copy_index) const;
  void SendResult(const aggregation::Copy& c, uint32_t copy_index, int contributor, uint16_t rank);

  host_config::RootConfig config_;
  Transport* transport_;
  size_t batch_;
  node::DropLedger* job_drops_;
  uint32_t words_;                            // bitmap words per copy
  std::vector<aggregation::Copy> copies_;     // 2 per slot
  std::vector<uint64_t> bitmaps_;             // words_ per copy
  std::vector<int32_t> sums_;                 // elements per copy
  absl::flat_hash_map<uint32_t, int> by_ip_;  // switch contributors
  std::vector<int> by_rank_;                  // direct workers: rank -> contributor, -1
  // Best-effort switches: by node, and per contributor the bit of its first
  // member (members' bits follow the contributors').
  absl::flat_hash_map<uint16_t, int> by_node_;
  std::vector<uint32_t> member_bit_;
  uint32_t units_ = 0;  // the chunk's shares: the fan-in every copy completes at
  std::vector<std::vector<uint8_t>> tx_;
  std::vector<absl::Span<const uint8_t>> spans_;  // reused per batch
  size_t tx_count_ = 0;
  RootStats stats_;
};

}  // namespace grid::root

#endif  // GRID_LIB_ROOT_ENGINE_H_
