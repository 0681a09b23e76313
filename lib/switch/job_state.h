// Internal to the switch pipeline (pipeline.cc, emit.cc): a job's slot
// memory and the drop counters' index.
#ifndef GRID_LIB_SWITCH_JOB_STATE_H_
#define GRID_LIB_SWITCH_JOB_STATE_H_

#include <cstdint>
#include <vector>

#include "aggregation/copy.h"
#include "grid/switch.h"

namespace grid::sw {

struct Pipeline::JobState {
  static constexpr size_t kBitmapWords = kMaxMembers / 64;
  std::vector<aggregation::Copy> copies;  // 2 per slot
  std::vector<uint64_t> bitmaps;          // kBitmapWords per copy
  std::vector<int32_t> values;            // elements per copy
  std::vector<uint16_t> member;           // rank -> index in members + 1 (0: none), 65536 entries
  // Best-effort jobs: the chunk each copy last passed on, if it did.
  struct PassMark {
    uint32_t op_seq = 0;
    uint32_t chunk = 0;
    bool valid = false;
  };
  std::vector<PassMark> passed;  // 2 per slot
  uint32_t token = 0;            // the job's token these copies were summed under
};

inline int Reason(Drop d) { return static_cast<int>(d); }
inline int Reason(wire::WireError e) { return static_cast<int>(e); }

}  // namespace grid::sw

#endif  // GRID_LIB_SWITCH_JOB_STATE_H_
