// grid-ns3's host-collective baseline: a ring allreduce, the algorithm of
// Gloo's and NCCL's rings (a reduce-scatter, then an allgather: 2(N-1)
// steps in which each rank sends 1/N of the gradient to the next), over
// ns-3's TCP on the same topology, hosts and links as a GRID run. The
// switches are plain IPv4 routers (ns-3's nix-vector routing, one shortest
// path per pair); a rank sends step s+1 once it has received step s, and
// reduces in no time.
#ifndef GRID_SIM_RING_H_
#define GRID_SIM_RING_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/topology.h"

namespace grid::sim {

struct RingOutcome {
  absl::Duration comm_time;  // until the last rank has received every step
  double gbps = 0;           // the bytes each rank sent over that time
  uint64_t bytes_per_rank = 0;
  uint64_t events = 0;
  double wall_seconds = 0;
};

// Ring allreduce of `bytes` per rank among `hosts` (rank r on hosts[r], the
// ring in rank order), from a standing start; `seed` seeds ns-3's random
// streams. An error names a host that is not one, or a ring that did not
// finish within `limit` of simulated time.
absl::StatusOr<RingOutcome> RunRing(const topology::Topology& topology,
                                    const std::vector<topology::NodeId>& hosts, uint64_t bytes,
                                    uint64_t seed, absl::Duration limit = absl::Seconds(60));

}  // namespace grid::sim

#endif  // GRID_SIM_RING_H_
