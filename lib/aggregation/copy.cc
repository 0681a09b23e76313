#include "aggregation/copy.h"

#include <algorithm>

#include "aggregation/elements.h"
#include "grid/numerics.h"
#include "grid/wire.h"

namespace grid::aggregation {

namespace {
// What a copy keeps of its contributions' flags, and passes on with the sum:
// a queue's CONGESTION, a wrapped sum's OVERFLOW, and RETRANSMIT when any
// contribution was sent again, so no rank takes the sum's round trip for a
// clean sample of the network's (the worker's RTO, lib/worker/loss.cc).
constexpr uint8_t kKeptFlags =
    wire::flags::kCongestion | wire::flags::kOverflow | wire::flags::kRetransmit;
}  // namespace

Verdict Contribute(Copy& c, absl::Span<uint64_t> bitmap, int32_t* values, uint32_t elements,
                   uint32_t fan_in, const Contribution& in) {
  const int order = c.count == 0 ? 1 : wire::CompareChunk(in.op_seq, in.chunk, c.op_seq, c.chunk);
  const uint64_t mask = uint64_t{1} << (in.bit % 64);
  uint64_t& word = bitmap[in.bit / 64];
  if (order < 0) return Verdict::kStale;
  const bool header_only = in.payload == nullptr;
  if (order > 0) {
    if (c.count > 0 && !c.complete) return Verdict::kCollision;
    c = Copy{in.op_seq,   in.chunk,         in.weight,
             in.exponent, in.next_exponent, static_cast<uint8_t>(in.flags & kKeptFlags),
             false,       header_only};
    std::fill(bitmap.begin(), bitmap.end(), 0);
    word = mask;
    if (!header_only) numerics::Int32FromWire(in.payload, {values, elements});
  } else {
    // Before the duplicate check: a resend is answered only in its own length.
    if (header_only != c.header_only) return Verdict::kOtherLength;
    if (word & mask) return c.complete ? Verdict::kResend : Verdict::kDuplicate;
    const bool wrapped = !header_only && AddElements(values, in.payload, elements);
    word |= mask;
    c.count += in.weight;
    c.exponent = std::max(c.exponent, in.exponent);
    c.next_exponent = std::max(c.next_exponent, in.next_exponent);
    c.flags |= (in.flags & kKeptFlags) | (wrapped ? wire::flags::kOverflow : 0);
  }
  c.complete = c.count == fan_in;
  return order > 0 ? Verdict::kFirst : Verdict::kAdded;
}

void StampSum(const Copy& copy, uint32_t copy_index, uint16_t requester, uint16_t elements,
              wire::Header& h) {
  h.flags = static_cast<uint8_t>((copy_index & 1 ? wire::flags::kCopy : 0) | copy.flags |
                                 (requester != wire::kAllRanks ? wire::flags::kRetransmit : 0));
  h.slot = static_cast<uint16_t>(copy_index / 2);
  h.op_seq = copy.op_seq;
  h.chunk = copy.chunk;
  h.exponent = copy.exponent;
  h.next_exponent = copy.next_exponent;
  h.num_elements = copy.header_only ? 0 : elements;
}

}  // namespace grid::aggregation
