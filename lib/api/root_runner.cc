#include "api/root_runner.h"

#include <utility>

namespace grid::api {

absl::StatusOr<std::unique_ptr<RootRunner>> RootRunner::Start(const control::RootConfig& config,
                                                              std::unique_ptr<Transport> transport,
                                                              uint32_t threads) {
  auto shards = root::RootShards::Start(config, std::move(transport), threads, kIdleWait);
  if (!shards.ok()) return shards.status();
  return std::unique_ptr<RootRunner>(new RootRunner(*std::move(shards)));
}

}  // namespace grid::api
