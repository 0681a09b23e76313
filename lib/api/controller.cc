#include "api/controller.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "grid/control.h"
#include "grid/topology.h"
#include "store/wait.h"

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
  // Before planning, which can take a while: the waiting ranks see a store
  // that is being published (store::AwaitKey).
  if (absl::Status s = store::MarkPlanning(**store, "rank 0"); !s.ok()) return s;
  auto topo = topology::LoadTopology(control.topology);
  if (!topo.ok()) return topo.status();
  // As grid-controller plans it (control::PlanJob), with rank 0's options.
  control::JobRequest request;
  request.workers = bootstrap.world_size;
  request.root = control.root;
  request.planner = control.planner;
  request.planner_options = control.planner_options;
  request.planners = control.planners;
  request.params = control.job;
  request.path_mtu = control.path_mtu;
  request.switches = control.p4_switches ? control::SwitchKind::kP4 : control::SwitchKind::kGrid;
  request.rtt = control.rtt;
  auto job = control::PlanJob(*topo, request);
  if (!job.ok()) return job.status();
  if (absl::Status s = control::PublishJob(*topo, job->plan, job->params, **store); !s.ok()) {
    return s;
  }
  return server;
}

}  // namespace grid::api
