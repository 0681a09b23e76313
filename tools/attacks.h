// Adversarial traffic (docs/security.md, "Tested"): frames crafted with the
// wire codec, each class something a switch, the root or a worker must drop
// and count, never add to a sum. grid-attack sends them into a running job,
// and tests/security/adversarial_test.cc into an in-process one.
#ifndef GRID_TOOLS_ATTACKS_H_
#define GRID_TOOLS_ATTACKS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grid/control.h"
#include "grid/switch.h"

namespace grid::tools {

enum class Attack : uint8_t {
  kWrongToken,      // a member's chunk with another token
  kWrongJob,        // with a job id nobody has
  kNonMember,       // for a rank the aggregation switch does not have
  kImpersonate,     // for a member's rank, from the attacker's own address
  kSpoofedSource,   // for a member's rank, from the member's address
  kOldData,         // replayed: an early operation's chunk
  kOldResult,       // replayed: an early result, to the member's aggregation switch
  kForeignResult,   // a result straight to the member, from the attacker
  kForgedPartial,   // a partial sum to the root, from the attacker's address
  kSpoofedPartial,  // the same, claiming a switch's address
  kBadSlot,         // a slot beyond the pool
  kLengthMismatch,  // num_elements that disagrees with the payload's length
  kTruncated,       // a frame cut short
  kExponent,        // exponents no data of the job can have
  kTtl1,            // a packet to forward with TTL 1
  kIpOptions,       // IPv4 options on a GRID port
  kIpFragment,      // an IPv4 fragment on a GRID port
  kCollisionFlood,  // valid-looking chunks of a future operation for owned slots
  kEnd,
};
inline constexpr int kNumAttacks = static_cast<int>(Attack::kEnd);

const char* AttackName(Attack attack);
absl::StatusOr<Attack> ParseAttack(std::string_view name);

// Where the attacker sits and whom it imitates.
struct AttackSetup {
  host_config::WorkerConfig victim;      // a member: its job, token, rank, aggregation node, labels
  host_config::RootConfig root;          // the root (its contributors name the switches)
  uint16_t victim_result_label = 0;  // the path its results take (from its switch's tables)
  uint16_t to_root_label = 0;        // a path from the attacker's switch to the root
  uint32_t attacker_ip = 0;          // the attacker's host
  wire::MacAddress attacker_mac{};
  wire::MacAddress first_hop_mac{};  // the attacker's switch
};

// The i-th frame of `attack` (fields vary with i). The frame is what the
// attacker's host puts on its link.
std::vector<uint8_t> AttackFrame(Attack attack, const AttackSetup& setup, uint64_t i);

// The setup for an attacker on host `attacker` of a planned job: the victim
// is the first member of the attacker's own switch if it aggregates (so the
// frames meet the checks of an aggregation switch first), else rank 0.
absl::StatusOr<AttackSetup> MakeAttackSetup(
    const topology::Topology& topology, topology::NodeId attacker,
    const std::vector<host_config::WorkerConfig>& workers, const host_config::RootConfig& root,
    const std::map<topology::NodeId, sw::SwitchConfig>& switches);

}  // namespace grid::tools

#endif  // GRID_TOOLS_ATTACKS_H_
