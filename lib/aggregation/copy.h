// The slot protocol's state machine: what an aggregation node does with one
// contribution to one copy of a slot (docs/switch.md, "Per packet"). The
// switch pipeline and the root both run it; they differ only in how they
// name contributors (a member's bit at a switch, a contributor index at the
// root) and in what they send when a verdict asks for it. The P4 programs are
// separate copies of these rules, held to them by the differential test
// (tests/p4/).
#ifndef GRID_LIB_AGGREGATION_COPY_H_
#define GRID_LIB_AGGREGATION_COPY_H_

#include <cstdint>

#include "absl/types/span.h"
#include "grid/wire.h"

namespace grid::aggregation {

// One copy of a slot: the chunk it holds and how far its sum has got. The
// values and the contributor bitmap live beside it, in the node's layout.
struct Copy {
  uint32_t op_seq = 0;
  uint32_t chunk = 0;
  uint32_t count = 0;  // contributions added, by weight; 0: never used
  uint8_t exponent = 0;
  uint8_t next_exponent = 0;
  uint8_t flags = 0;  // CONGESTION, OVERFLOW and RETRANSMIT seen while aggregating
  bool complete = false;
  // Its contributions carry no elements (exponent probes, docs/worker.md):
  // the copy sums only their exponents and its values are not used.
  bool header_only = false;
};

// What a contribution did to its copy.
enum class Verdict : uint8_t {
  kFirst,        // a newer chunk into an idle or complete copy: it overwrote the copy
  kAdded,        // the chunk's next contribution: added
  kResend,       // a retransmission into a complete copy: send the sum again
  kDuplicate,    // a retransmission into an incomplete copy: drop, the others are coming
  kCollision,    // a newer chunk while the copy is mid-aggregation: drop (a window violation)
  kStale,        // an older chunk than the copy's: drop, its result is already out
  kOtherLength,  // the copy's chunk, header-only where the copy has elements or the
                 // other way round: drop (a copy's first contribution decides)
};

// The packet fields the state machine reads.
struct Contribution {
  uint32_t op_seq = 0;
  uint32_t chunk = 0;
  uint8_t exponent = 0;
  uint8_t next_exponent = 0;
  uint8_t flags = 0;  // the packet's GRID flags
  // `elements` int32 in network order; null for a header-only contribution.
  const uint8_t* payload = nullptr;
  uint32_t bit = 0;  // the contributor's bit in `bitmap`
  // How many of fan_in this contribution covers: 1, except at a root whose
  // best-effort switches pass some chunks on, where a switch's partial
  // covers each of the members it could have passed (docs/switch.md).
  uint32_t weight = 1;
};

// Applies `in` to `copy`. `bitmap` holds the copy's contributor bits (at
// least bit + 1 of them) and `values` its `elements` sums. After kFirst or
// kAdded, copy.complete says whether the contributions' weights reached fan_in.
// On every verdict but kFirst and kAdded nothing changes.
Verdict Contribute(Copy& copy, absl::Span<uint64_t> bitmap, int32_t* values, uint32_t elements,
                   uint32_t fan_in, const Contribution& in);

// The fields a copy's sum goes out with, a switch's PARTIAL and the root's
// RESULT alike: its slot and COPY (`copy_index` = 2 * slot + copy), the
// chunk, the exponents, the flags its contributions carried, with
// RETRANSMIT when it answers one rank's resend (`requester`, else
// wire::kAllRanks), and its length: the job's `elements`, or none for a
// header-only copy. The sender fills in the rest, and the payload when
// num_elements is not 0.
void StampSum(const Copy& copy, uint32_t copy_index, uint16_t requester, uint16_t elements,
              wire::Header& h);

}  // namespace grid::aggregation

#endif  // GRID_LIB_AGGREGATION_COPY_H_
