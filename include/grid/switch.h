// The GRID switch pipeline: the reference model of what an aggregation switch
// does to each packet (docs/switch.md). It is pure: no I/O, no clock, no
// allocation per packet. grid-switch runs it on DPDK ports, the tests drive it
// with crafted frames, and the P4 programs implement the same tables,
// registers and decisions.
#ifndef GRID_SWITCH_H_
#define GRID_SWITCH_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grid/export.h"
#include "grid/wire.h"

GRID_API_BEGIN

namespace grid::node {
class DropLedger;
}  // namespace grid::node

namespace grid::sw {

// ---- Table entries (docs/switch.md, "grid-switch/1" JSON) -------------------

// Where a replica or a locally generated packet goes: the next hop's port and
// the addresses written into it.
struct Endpoint {
  uint16_t port = 0;
  uint32_t ip = 0;
  wire::MacAddress mac{};
};

// Members per aggregating switch and job in this pipeline (the P4 programs'
// 32-bit bitmaps take 32).
inline constexpr int kMaxMembers = 256;

struct Member {
  uint16_t rank = 0;
  uint8_t bit = 0;            // bit in the contributor bitmap, 0..kMaxMembers-1
  Endpoint to;                // the member host: where its results go, and where (port,
                              // address) its chunks must come from
  uint16_t result_label = 0;  // path label of the member's result path
};

// A job's entry: every switch on a job's paths has one (to check the token);
// the switches that aggregate for it also have `aggregate`.
struct JobEntry {
  uint16_t job_id = 0;
  uint32_t token = 0;
  struct Aggregate {
    uint16_t fan_in = 0;                         // = members.size()
    uint16_t elements = wire::kDefaultElements;  // elements every packet of the job carries
    uint32_t slot_base = 0;                      // this job's pool in the switch's slot memory
    uint32_t slots = 0;                          // pool size P
    std::vector<Member> members;                 // at most kMaxMembers
    Endpoint root;           // the root host, via the port of the path to it; results come from it
    uint16_t root_node = 0;  // agg_node of the partials
    uint16_t root_fan_in = 0;    // fan_in of the partials (the root's contributors)
    uint16_t to_root_label = 0;  // path label of the partials
    // ATP's behaviour (docs/switch.md, "Best effort"): a chunk that finds no
    // aggregation capacity here is passed on toward the root, which
    // completes its sum, instead of being dropped.
    bool best_effort = false;
  };
  std::optional<Aggregate> aggregate;
  // ATP's second level (docs/switch.md, "Best effort"), at the PS-side ToR
  // of a best-effort job: by owner, the agg_node of a switch whose passed-on
  // chunks this switch aggregates for it. A proxy is an aggregate of the
  // owner's members (each `to.port` is where their passed DATA arrive) with
  // a pool of its own; its partial stands for the owner's, so `root_node` is
  // the owner and `root_fan_in` the owner's fan-in, and it carries PASSED.
  // Without the capacity for a chunk, the proxy passes it on to the root.
  std::map<uint16_t, Aggregate> proxies;
};

struct SwitchConfig {
  std::string name;
  uint16_t node_id = 0;  // matched against grid.agg_node
  uint32_t ip = 0;       // source address of the packets the switch makes
  wire::MacAddress mac{};
  uint16_t num_ports = 0;
  uint32_t slot_memory = 0;                   // slots the switch has in all
  std::map<uint16_t, Endpoint> label_routes;  // path label -> next hop
  std::map<uint32_t, Endpoint> ip_routes;     // plain IPv4 forwarding (other traffic)
  std::map<uint16_t, JobEntry> jobs;          // by job id
  // Ports that face a host, with the host's address: the only source a
  // packet arriving there may carry (docs/security.md).
  std::map<uint16_t, uint32_t> hosts;
  // A queue deeper than this (packets) marks CONGESTION on what it carries.
  uint32_t congestion_threshold = 64;
  // Aggregation capacity C_s: the rate of DATA this switch adds into slots,
  // in Gbps of frames; 0 is unlimited. The pipeline spends credit the I/O
  // layer grants as time passes (Pipeline::AddCapacityCredit).
  double capacity_gbps = 0;
};

// Checks ranges and consistency; errors name the job, member or field.
absl::Status ValidateConfig(const SwitchConfig& config);

std::string ConfigToJson(const SwitchConfig& config);
absl::StatusOr<SwitchConfig> ParseConfigJson(std::string_view text);

// The same table entries for the P4 programs, as P4Runtime-style JSON: table
// name, exact-match fields, action and parameters, plus the multicast groups
// (docs/switch.md, "P4"). The P4 targets aggregate only 64-element packets
// and take at most 32 members per job (a 32-bit bitmap), 1024 slots per
// switch (the Tofino program's slot memory) and a pool of kP4MaxPool per job
// (the op_seq bits of the Tofino chunk tag): a config beyond that is an
// error naming the job.
// The congestion threshold counts queued packets, as BMv2's enq_qdepth does,
// when `queue_cell_bytes` is 0. A Tofino counts its queues in buffer cells:
// give its cell size, from the chip's documentation, and the threshold
// becomes cells, each queued packet counted as the widest frame of the
// switch's jobs. Either way it must fit the programs' 19-bit threshold.
absl::StatusOr<std::string> ConfigToP4Entries(const SwitchConfig& config,
                                              uint32_t queue_cell_bytes = 0);
inline constexpr int kP4MaxMembers = 32;
inline constexpr uint32_t kP4MaxThreshold = (1u << 19) - 1;  // enq_qdepth is 19 bits
// The same entries as simple_switch_CLI commands (table_set_default,
// table_add, mc_mgrp_create, mc_node_create, mc_node_associate), for a BMv2
// switch running p4/v1model/grid.p4 whose tables are still empty.
absl::StatusOr<std::string> P4EntriesToBmv2Commands(std::string_view entries_json);
inline constexpr int kP4MaxSlots = 1024;
// A member's next chunk in a copy is 2P stream positions after its last, and
// a rank's op_seq advances at most once a position (worker::PrepareWireOps),
// so the Tofino tag's 11 bits of op_seq order the two while 2P < 1024.
inline constexpr uint32_t kP4MaxPool = 511;

// ---- Counters -----------------------------------------------------------------

// Why a packet was dropped. The first kNumWireErrors values are the codec's
// WireError reasons (malformed GRID packets); the rest are the pipeline's.
enum class Drop : uint8_t {
  kUnknownJob = wire::kNumWireErrors,
  kBadToken,
  kNotMember,     // DATA from a rank that is not a member here
  kBadSlot,       // slot outside the job's pool
  kBadFanIn,      // fan_in disagrees with the table
  kBadLength,     // num_elements is neither the job's elements per packet nor 0, or is the
                  // other of the two for the chunk its copy holds
  kCollision,     // the slot copy is busy with another chunk (a SIGNAL goes back)
  kDuplicate,     // a retransmission into a copy that is still incomplete
  kNoRoute,       // no entry for the path label or destination address
  kNotForUs,      // a PARTIAL or DATA for this switch that it does not aggregate
  kStale,         // a late packet of a chunk whose slot copy has moved on
  kTtlExpired,    // a packet to forward whose TTL ran out
  kBadIngress,    // a member's DATA or the root's RESULT on another port than its path's
  kBadSource,     // a source address its port or its sender's entry does not allow
  kOverCapacity,  // DATA beyond the switch's aggregation capacity (not best-effort jobs)
  kEnd,
};
inline constexpr int kNumDrops = static_cast<int>(Drop::kEnd);
const char* DropName(int reason);

struct JobCounters {
  uint64_t data = 0;             // DATA aggregated here (added to a slot)
  uint64_t partials = 0;         // partials sent on completion
  uint64_t partials_resent = 0;  // partials re-sent for a retransmission into a complete copy
  uint64_t results = 0;          // RESULTs received for the members
  uint64_t replicas = 0;         // RESULT copies sent to members
  uint64_t collisions = 0;
  uint64_t duplicates = 0;
  uint64_t overflows = 0;      // completed chunks whose int32 sum wrapped
  uint64_t passed = 0;         // DATA passed on toward the root (best-effort jobs)
  uint64_t passed_chunks = 0;  // chunks this switch left to the root
  uint64_t proxied = 0;        // DATA aggregated here as another switch's proxy
};

struct PortCounters {
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t tx_packets = 0, tx_bytes = 0;
};

struct Counters {
  std::array<uint64_t, kNumDrops> drops{};
  uint64_t forwarded = 0;        // by label or address, unchanged
  uint64_t other_forwarded = 0;  // non-GRID traffic forwarded by address
  std::map<uint16_t, JobCounters> jobs;
  std::vector<PortCounters> ports;
  uint64_t total_drops() const;
  // Adds another pipeline's counters (grid-switch runs one per lcore).
  void Add(const Counters& other);
};

// The counters as JSON: drops by reason name, per job, per port.
std::string CountersToJson(const Counters& counters);

// ---- The pipeline -----------------------------------------------------------

// A frame the pipeline emits: either the input frame itself (possibly
// rewritten in place) or bytes it built in the output arena.
struct OutFrame {
  uint16_t port;
  bool is_input;
  uint32_t offset;  // into Output::arena (when !is_input)
  uint32_t length;
};

struct Output {
  std::vector<uint8_t> arena;
  std::vector<OutFrame> frames;
  void Clear() {
    arena.clear();
    frames.clear();
  }
  absl::Span<const uint8_t> Bytes(const OutFrame& f, absl::Span<const uint8_t> input) const {
    return f.is_input ? input.first(f.length)
                      : absl::MakeConstSpan(arena).subspan(f.offset, f.length);
  }
};

class Pipeline {
 public:
  static absl::StatusOr<Pipeline> Create(SwitchConfig config);
  ~Pipeline();
  Pipeline(Pipeline&&) noexcept;
  Pipeline& operator=(Pipeline&&) noexcept;

  // Processes one frame that arrived on `in_port`, appending what it emits to
  // `out` (which the caller clears between frames or batches).
  void Process(absl::Span<uint8_t> frame, uint16_t in_port, Output* out);

  // The I/O layer reports queue depths; a port past the threshold marks
  // CONGESTION on the GRID packets it is given.
  void SetQueueDepth(uint16_t port, uint32_t packets);

  // Aggregation capacity (SwitchConfig::capacity_gbps): the I/O layer grants
  // `bits` of credit as time passes, capacity_gbps bits per nanosecond; DATA
  // aggregated here spends its frame's bits. Credit beyond the burst
  // (CapacityBurstBits) is lost. With no capacity configured the pipeline
  // ignores credit.
  void AddCapacityCredit(double bits);
  // The burst: kCapacityBurstBits, kCapacityBurstFrames frames of the
  // widest job, or a window of every member of every job aggregated here
  // (fan_in x slots frames each), whichever is largest. A software switch
  // takes its frames a poll round at a time, and a round after the process
  // was descheduled holds all that arrived meanwhile, up to every member's
  // window: a shallower bucket drops frames that were sent within the
  // capacity (docs/switch.md, "Capacity").
  static double CapacityBurstBits(const SwitchConfig& config);
  static constexpr double kCapacityBurstBits = 64 * 1024 * 8;
  static constexpr int kCapacityBurstFrames = 192;  // 192 frames of 64 elements: 64 KiB

  const SwitchConfig& config() const { return config_; }
  const Counters& counters() const { return counters_; }
  // Slot copies holding a chunk that is not complete yet, over every job
  // and proxy: the slot pool's occupancy (a scan of the pool, for samples,
  // not per packet).
  size_t BusyCopies() const;
  void ResetCounters();
  // The drops counted against each (job, token) for the job's ranks
  // (lib/node/drop_ledger.h): readable from any thread. It outlives Reload
  // and ResetCounters, as its readers keep their own baselines.
  const node::DropLedger& job_drops() const { return *job_drops_; }

  // Replaces the tables. Slot state of jobs that keep their pool is kept.
  absl::Status Reload(SwitchConfig config);

 private:
  // A job's slot memory (lib/switch/job_state.h): its copies, bitmaps, sums
  // and rank -> bit map.
  struct JobState;

  explicit Pipeline(SwitchConfig config);
  void BuildState();
  bool FromItsHost(uint16_t in_port, uint32_t src_ip) const;
  void ForwardOther(absl::Span<uint8_t> frame, bool ipv4, uint16_t in_port, Output* out);
  void ForwardByLabel(absl::Span<uint8_t> frame, const wire::FrameView& view, Output* out);
  // Why a member's DATA cannot count at `agg`, if it cannot.
  std::optional<Drop> Refuse(const wire::FrameView& view, const JobEntry::Aggregate& agg,
                             const JobState& state, uint16_t in_port) const;
  // `agg` is the job's aggregate, or with `proxy` one of its proxies.
  void Aggregate(absl::Span<uint8_t> frame, const wire::FrameView& view, const JobEntry& job,
                 const JobEntry::Aggregate& agg, bool proxy, JobState& state, uint16_t in_port,
                 Output* out);
  void EmitPartial(const wire::FrameView& view, const JobEntry& job, const JobEntry::Aggregate& agg,
                   bool proxy, JobState& state, uint32_t copy_index, uint16_t requester,
                   Output* out);
  void Replicate(absl::Span<uint8_t> frame, const wire::FrameView& view, const JobEntry& job,
                 const JobState& state, uint16_t in_port, Output* out);
  void Signal(const wire::FrameView& view, const JobEntry& job, const Member& to, Output* out);
  // Best effort: whether this DATA goes on toward the root unaggregated.
  enum class Admission : uint8_t { kAggregate, kPass, kStale };
  Admission PassOn(const wire::FrameView& view, const JobEntry::Aggregate& agg, JobState& state,
                   uint32_t copy_index);
  void Pass(absl::Span<uint8_t> frame, const wire::FrameView& view, const JobEntry& job,
            const JobEntry::Aggregate& agg, Output* out);
  bool SpendCredit(double bits);
  void Emit(uint16_t port, bool is_input, uint32_t offset, uint32_t length, Output* out);
  void DropPacket(int reason) { ++counters_.drops[reason]; }
  // DropPacket, and in the job's ledger where its ranks hear of the reason
  // (node::JobDrop: unknown_job, bad_token, not_member, bad_source,
  // bad_ingress, stale), under the job and token the frame claims.
  void DropForJob(const wire::Header& h, Drop reason);
  bool Congested(uint16_t port) const;

  SwitchConfig config_;
  Counters counters_;
  std::map<uint16_t, std::unique_ptr<JobState>> state_;
  // Proxies' slot memory, by (job, owner).
  std::map<std::pair<uint16_t, uint16_t>, std::unique_ptr<JobState>> proxy_state_;
  std::vector<uint32_t> queue_depth_;
  std::unique_ptr<node::DropLedger> job_drops_;
  double credit_bits_ = 0;
  double credit_cap_bits_ = kCapacityBurstBits;
};

}  // namespace grid::sw

GRID_API_END

#endif  // GRID_SWITCH_H_
