// The NCCL layer's agreement check: before a call's (a group's) data, the
// ranks allreduce a fixed-size digest of what each queued, so that ranks
// that disagree on the number of operations, or on a count, type or op, all
// refuse the call instead of summing mismatched buffers (docs/nccl.md). A
// rank that refuses the call for its own arguments (a null buffer, a type
// GRID does not add) still takes part, saying so, and every rank refuses
// with it: the others are not left matched against its next call.
#ifndef GRID_LIB_NCCL_AGREEMENT_H_
#define GRID_LIB_NCCL_AGREEMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace grid::nccl {

// One queued operation, as the ranks must agree on it.
struct OpKey {
  size_t count;
  int type;  // ncclDataType_t
  int op;    // ncclRedOp_t
};

// The int32 vector to sum over the ranks: the same length whatever `ops`
// holds. `refused`: this rank (`rank`) refuses the call for its arguments.
std::vector<int32_t> AgreementCheck(const std::vector<OpKey>& ops, bool refused, int rank);

// What the sum of every rank's AgreementCheck says.
struct Verdict {
  int refused = 0;         // how many ranks refused the call
  int refusing_rank = -1;  // which one, when exactly one did
  bool same_ops = false;   // every rank queued the same operations
};
Verdict ReadAgreement(const std::vector<int32_t>& sums, int nranks);

// What this rank queued, for the refusal's message, types and ops by name.
std::string Describe(const std::vector<OpKey>& ops);

}  // namespace grid::nccl

#endif  // GRID_LIB_NCCL_AGREEMENT_H_
