// Internal: the job's root (parameter server) hosted in a rank's process, on
// its own thread and transport, for as long as the communicator lives
// (RootHostOptions).
#ifndef GRID_LIB_API_ROOT_RUNNER_H_
#define GRID_LIB_API_ROOT_RUNNER_H_

#include <atomic>
#include <memory>
#include <thread>

#include "absl/time/time.h"
#include "grid/host_config.h"
#include "grid/transport.h"
#include "root/engine.h"

namespace grid::api {

class RootRunner {
 public:
  // How long the root's thread waits on its transport when a poll found
  // nothing: short enough that a result goes out within a round trip.
  static constexpr absl::Duration kIdleWait = absl::Milliseconds(2);

  RootRunner(const control::RootConfig& config, std::unique_ptr<Transport> transport);
  ~RootRunner();
  RootRunner(const RootRunner&) = delete;
  RootRunner& operator=(const RootRunner&) = delete;

 private:
  std::unique_ptr<Transport> transport_;
  root::RootEngine engine_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace grid::api

#endif  // GRID_LIB_API_ROOT_RUNNER_H_
