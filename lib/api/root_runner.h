// Internal: the job's root (parameter server) hosted in a rank's process, on
// its own threads and transport, for as long as the communicator lives
// (RootHostOptions).
#ifndef GRID_LIB_API_ROOT_RUNNER_H_
#define GRID_LIB_API_ROOT_RUNNER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/host_config.h"
#include "grid/transport.h"
#include "root/lanes.h"

namespace grid::api {

class RootRunner {
 public:
  // How long the root's thread waits on its transport when a poll found
  // nothing: short enough that a result goes out within a round trip.
  static constexpr absl::Duration kIdleWait = absl::Milliseconds(2);

  // `threads`: the root's lanes of `transport` (root/lanes.h).
  static absl::StatusOr<std::unique_ptr<RootRunner>> Start(const host_config::RootConfig& config,
                                                           std::unique_ptr<Transport> transport,
                                                           uint32_t threads);

 private:
  explicit RootRunner(std::unique_ptr<root::RootLanes> lanes) : lanes_(std::move(lanes)) {}
  std::unique_ptr<root::RootLanes> lanes_;
};

}  // namespace grid::api

#endif  // GRID_LIB_API_ROOT_RUNNER_H_
