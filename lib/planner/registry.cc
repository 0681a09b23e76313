#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grid/planner.h"
#include "planner/builtin.h"

namespace grid::planner {

PlannerRegistry PlannerRegistry::WithBuiltins() {
  PlannerRegistry registry;
  registry.factories_["geryon"] = [](const PlannerOptions&) { return internal::MakeGeryon(); };
  registry.factories_["switchml"] = [](const PlannerOptions&) { return internal::MakeSwitchMl(); };
  registry.factories_["atp"] = [](const PlannerOptions& o) {
    return internal::MakeAtp(o.atp_demand_gbps, o.atp_best_effort);
  };
  registry.factories_["grid"] = [](const PlannerOptions& o) {
    return internal::MakeGrid(o, false);
  };
  registry.factories_["grid-paths"] = [](const PlannerOptions& o) {
    return internal::MakeGrid(o, true);
  };
  return registry;
}

absl::Status PlannerRegistry::Register(std::string name, PlannerFactory factory) {
  if (name.empty() || !factory) {
    return absl::InvalidArgumentError("a planner needs a name and a factory");
  }
  if (factories_.count(name)) {
    return absl::AlreadyExistsError(absl::StrFormat("planner \"%s\" is already registered", name));
  }
  factories_[std::move(name)] = std::move(factory);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Planner>> PlannerRegistry::Create(
    std::string_view name, const PlannerOptions& options) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    return absl::NotFoundError(absl::StrFormat("unknown planner \"%s\" (known: %s)",
                                               std::string(name), absl::StrJoin(Names(), ", ")));
  }
  return it->second(options);
}

std::vector<std::string> PlannerRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

}  // namespace grid::planner
