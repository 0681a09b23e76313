#include "api/root_runner.h"

#include <utility>

namespace grid::api {

absl::StatusOr<std::unique_ptr<RootRunner>> RootRunner::Start(const host_config::RootConfig& config,
                                                              std::unique_ptr<Transport> transport,
                                                              uint32_t threads) {
  auto lanes = root::RootLanes::Start(config, std::move(transport), threads, kIdleWait);
  if (!lanes.ok()) return lanes.status();
  return std::unique_ptr<RootRunner>(new RootRunner(*std::move(lanes)));
}

}  // namespace grid::api
