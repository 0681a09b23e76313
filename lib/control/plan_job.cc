// One way to plan a job, for grid-controller and for rank 0 as the
// controller (lib/api/controller.cc): planner, frames, bandwidth-delay
// product, pool limit, pool, token.
#include <optional>

#include "absl/strings/str_format.h"
#include "grid/control.h"

namespace grid::control {
namespace {

uint16_t SwitchElements(SwitchKind kind) {
  // The P4 programs parse exactly wire::kDefaultElements; grid-switch sums
  // up to wire::kMaxElements.
  return kind == SwitchKind::kP4 ? wire::kDefaultElements : wire::kMaxElements;
}

absl::StatusOr<planner::Plan> MakePlan(const topology::Topology& topology,
                                       const JobRequest& request) {
  if (request.workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("workers: %d; a job needs at least one", request.workers));
  }
  auto job = planner::MakeJob(topology, request.workers,
                              request.root.empty() ? std::nullopt
                                                   : std::optional<std::string>(request.root),
                              request.seed);
  if (!job.ok()) return job.status();
  const planner::PlannerRegistry builtins = planner::PlannerRegistry::WithBuiltins();
  const planner::PlannerRegistry& planners =
      request.planners != nullptr ? *request.planners : builtins;
  auto created = planners.Create(request.planner, request.planner_options);
  if (!created.ok()) return created.status();
  return (*created)->Plan(topology, *job);
}

}  // namespace

absl::StatusOr<PlannedJob> PlanJob(const topology::Topology& topology, const JobRequest& request) {
  PlannedJob out;
  auto plan = MakePlan(topology, request);
  if (!plan.ok()) return plan.status();
  out.plan = *std::move(plan);
  out.params = request.params;
  if (out.params.elements == 0) {
    auto frames = ChooseFrames(request.path_mtu, SwitchElements(request.switches));
    if (!frames.ok()) return frames.status();
    out.params.elements = frames->elements;
  }
  auto bdp = PlanBdpBytes(topology, out.plan, request.rtt);
  if (!bdp.ok()) return bdp.status();
  out.bdp_bytes = *bdp;
  if (out.params.slots == 0) {
    auto max_slots = request.switches == SwitchKind::kP4
                         ? P4PoolLimit(topology, out.plan, out.params.slot_base)
                         : PoolLimit(topology, out.plan, out.params.slot_base);
    if (!max_slots.ok()) return max_slots.status();
    out.params.slots = PoolSlots(out.params.elements, out.bdp_bytes, *max_slots);
  }
  if (out.params.token == 0) {
    auto token = NewToken();
    if (!token.ok()) return token.status();
    out.params.token = *token;
  }
  if (absl::Status s = ValidateJobParams(out.params); !s.ok()) return s;
  return out;
}

}  // namespace grid::control
