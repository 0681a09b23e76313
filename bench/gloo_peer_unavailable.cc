// allreduce_perf without Gloo: --gloo says how to get it.
#include "gloo_peer.h"

namespace grid::bench {

absl::StatusOr<std::unique_ptr<GlooPeer>> GlooPeer::Connect(Store&, int, int, const std::string&,
                                                            absl::Duration) {
  return absl::FailedPreconditionError(
      "allreduce_perf was built without Gloo: install libgloo-dev and reconfigure");
}

}  // namespace grid::bench
