// Gloo's ring allreduce as a peer in allreduce_perf: the same ranks, the
// same run, over Gloo's own TCP transport. Built from gloo_peer.cc where
// CMake finds Gloo (Debian's libgloo-dev), else from
// gloo_peer_unavailable.cc, whose Connect says so.
#ifndef GRID_BENCH_GLOO_PEER_H_
#define GRID_BENCH_GLOO_PEER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/store.h"

namespace grid::bench {

class GlooPeer {
 public:
  // Connects the `world` ranks' Gloo TCP devices, bound to `address` (an
  // interface's IP; 127.0.0.1 is loopback), meeting through `store` under
  // keys that start with "gloo/".
  static absl::StatusOr<std::unique_ptr<GlooPeer>> Connect(Store& store, int rank, int world,
                                                           const std::string& address,
                                                           absl::Duration timeout);
  virtual ~GlooPeer() = default;
  // Gloo's ring allreduce (gloo::allreduce) over `count` floats, in place. Gloo's exceptions
  // come back as errors that name the rank.
  virtual absl::Status AllReduce(float* data, size_t count) = 0;
};

}  // namespace grid::bench

#endif  // GRID_BENCH_GLOO_PEER_H_
