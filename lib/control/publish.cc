// A planned job into a rendezvous store: what grid-controller and a rank 0
// acting as the controller publish (docs/worker.md, "Bootstrap").
#include "absl/strings/str_format.h"
#include "grid/control.h"
#include "grid/store.h"

namespace grid::control {

absl::Status PublishJob(const topology::Topology& topology, const planner::Plan& plan,
                        const host_config::JobParams& job, Store& store) {
  auto switches = BuildSwitchConfigs(topology, plan, job);
  if (!switches.ok()) return switches.status();
  auto workers = BuildWorkerConfigs(topology, plan, job);
  if (!workers.ok()) return workers.status();
  auto root = BuildRootConfig(topology, plan, job);
  if (!root.ok()) return root.status();
  std::vector<std::pair<std::string, std::string>> entries;
  entries.emplace_back("grid/plan", planner::PlanToJson(topology, plan));
  for (const auto& [node, c] : *switches) {
    entries.emplace_back("grid/switch/" + c.name, sw::ConfigToJson(c));
  }
  entries.emplace_back("grid/root", RootConfigToJson(*root));
  // Worker configs last: a rank that sees its config finds the rest there.
  for (const host_config::WorkerConfig& w : *workers) {
    entries.emplace_back(absl::StrFormat("grid/worker/%d", w.rank), WorkerConfigToJson(w));
  }
  for (const auto& [key, value] : entries) {
    if (absl::Status s = store.Set(key, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace grid::control
