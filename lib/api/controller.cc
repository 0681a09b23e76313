#include "api/controller.h"

#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "grid/wire.h"

namespace grid::api {
namespace {

// A tcp:HOST:PORT store is served here; a file store needs no server.
absl::StatusOr<std::unique_ptr<StoreServer>> ServeStore(const std::string& spec) {
  if (spec.rfind("tcp:", 0) != 0) return nullptr;
  int port = 0;
  if (!absl::SimpleAtoi(spec.substr(spec.rfind(':') + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrFormat("store \"%s\": no port", spec));
  }
  return ServeTcpStore(port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenBootstrapStore(const BootstrapOptions& bootstrap) {
  if (!bootstrap.open_store) return OpenStore(bootstrap.store);
  auto store = bootstrap.open_store();
  if (store.ok() && *store == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d: bootstrap.open_store returned no store", bootstrap.rank));
  }
  return store;
}

absl::StatusOr<std::unique_ptr<StoreServer>> ControlJob(const BootstrapOptions& bootstrap,
                                                        const ControlOptions& control) {
  absl::StatusOr<std::unique_ptr<StoreServer>> server = std::unique_ptr<StoreServer>();
  if (!bootstrap.open_store) server = ServeStore(bootstrap.store);
  if (!server.ok()) return server.status();
  auto store = OpenBootstrapStore(bootstrap);
  if (!store.ok()) return store.status();
  auto topo = topology::LoadTopology(control.topology);
  if (!topo.ok()) return topo.status();
  auto job = planner::MakeJob(
      *topo, bootstrap.world_size,
      control.root.empty() ? std::nullopt : std::optional<std::string>(control.root), 1);
  if (!job.ok()) return job.status();
  const planner::PlannerRegistry builtins = planner::PlannerRegistry::WithBuiltins();
  const planner::PlannerRegistry& planners =
      control.planners != nullptr ? *control.planners : builtins;
  auto created = planners.Create(control.planner);
  if (!created.ok()) return created.status();
  auto plan = (*created)->Plan(*topo, *job);
  if (!plan.ok()) return plan.status();
  control::JobParams params = control.job;
  if (params.elements == 0) {
    auto frames = control::ChooseFrames(control.path_mtu, wire::kMaxElements);
    if (!frames.ok()) return frames.status();
    params.elements = frames->elements;
  }
  if (params.slots == 0) {
    // As grid-controller chooses them, for the job's width, with the
    // topology's latencies for the round trip.
    auto bdp = control::PlanBdpBytes(*topo, *plan);
    if (!bdp.ok()) return bdp.status();
    auto max_slots = control::PoolLimit(*topo, *plan, params.slot_base);
    if (!max_slots.ok()) return max_slots.status();
    params.slots = control::PoolSlots(params.elements, *bdp, *max_slots);
  }
  if (params.token == 0) {
    auto token = control::NewToken();
    if (!token.ok()) return token.status();
    params.token = *token;
  }
  if (absl::Status s = control::PublishJob(*topo, *plan, params, **store); !s.ok()) return s;
  return server;
}

}  // namespace grid::api
