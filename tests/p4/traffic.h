// What the differential test sends a switch: the traffic of a running job
// (members' chunks with loss, duplication, reordering and retransmissions
// into complete and incomplete copies, results from the root, packets passing
// through), mixed with everything a switch must refuse (stale and colliding
// chunks, wrong tokens, non-members, every malformed field, TTL 1, IPv4
// options and fragments, plain IPv4 and non-IPv4 frames, random bit flips).
#ifndef GRID_TESTS_P4_TRAFFIC_H_
#define GRID_TESTS_P4_TRAFFIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "switch/fabric.h"

namespace grid::testing {

struct Packet {
  uint16_t port = 0;
  std::vector<uint8_t> frame;
  std::string kind;  // what it was made as, for failure messages
};

// About `budget` packets for switch `sw` of `job`, reproducible from `seed`.
std::vector<Packet> MakeTraffic(const Job& job, topology::NodeId sw, size_t budget, uint64_t seed);

}  // namespace grid::testing

#endif  // GRID_TESTS_P4_TRAFFIC_H_
