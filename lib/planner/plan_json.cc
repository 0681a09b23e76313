// Plan <-> JSON (docs/plan.md).
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "grid/planner.h"
#include "util/json.h"

namespace grid::planner {
namespace {

using Ordered = nlohmann::ordered_json;

// Rounds to 1e-6 Gbps (1 kbps) so printed plans do not carry solver noise.
double Clean(double v) { return std::round(v * 1e6) / 1e6; }

}  // namespace

Path ReversePath(const Path& p) {
  Path r;
  r.nodes.assign(p.nodes.rbegin(), p.nodes.rend());
  for (auto it = p.arcs.rbegin(); it != p.arcs.rend(); ++it)
    r.arcs.push_back(Topology::Reverse(*it));
  return r;
}

PathLabels LabelPaths(const Plan& plan) {
  PathLabels labels;
  auto label_of = [&](const Path& path) {
    for (size_t i = 0; i < labels.paths.size(); ++i) {
      if (labels.paths[i].nodes == path.nodes) return static_cast<uint16_t>(i + 1);
    }
    labels.paths.push_back(path);
    return static_cast<uint16_t>(labels.paths.size());
  };
  for (const WorkerRoute& route : plan.workers) {
    labels.up.push_back(label_of(route.up));
    labels.result.push_back(label_of(ReversePath(route.up)));
  }
  for (const auto& [sw, path] : plan.to_root) {
    labels.to_root[sw] = label_of(path);
    labels.from_root[sw] = label_of(ReversePath(path));
  }
  return labels;
}

namespace {

// What the evaluator predicts for the plan, under `model`.
Ordered Predicted(const Topology& topo, const Evaluation& e, Model model) {
  Ordered p;
  p["model"] = ModelName(model);
  p["min_rate_gbps"] = Clean(e.min_gbps);
  p["mean_rate_gbps"] = Clean(e.mean_gbps);
  p["switch_aggregation_gbps"] = Clean(e.switch_aggregation_gbps);
  p["ps_ingress_gbps"] = Clean(e.ps_ingress_gbps);
  Ordered rates = Ordered::array();
  for (double v : e.worker_gbps) rates.push_back(Clean(v));
  p["worker_rates_gbps"] = rates;
  Ordered loads = Ordered::array();
  for (const auto& [node, load] : e.switch_load_gbps) {
    loads.push_back({{"node", topo.node(node).name},
                     {"load_gbps", Clean(load)},
                     {"capacity_gbps", topo.node(node).capacity_gbps}});
  }
  p["switch_loads"] = loads;
  return p;
}

}  // namespace

std::string PlanToJson(const Topology& topo, const Plan& plan, const Evaluation* evaluation,
                       Model model) {
  const PathLabels labels = LabelPaths(plan);
  const std::string& root = topo.node(plan.job.root).name;
  Ordered doc;
  doc["format"] = "grid-plan/1";
  doc["planner"] = plan.planner;
  if (plan.best_effort) doc["best_effort"] = true;
  doc["topology"] = topo.name();
  Ordered job;
  job["root"] = root;
  Ordered hosts = Ordered::array();
  for (NodeId h : plan.job.workers) hosts.push_back(topo.node(h).name);
  job["workers"] = hosts;
  job["worker_gbps"] = Clean(plan.job.worker_gbps);
  job["ps_ingress_gbps"] = Clean(PsIngressGbps(topo, plan.job));
  job["seed"] = plan.job.seed;
  doc["job"] = job;

  Ordered workers = Ordered::array();
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    const WorkerRoute& route = plan.workers[r];
    Ordered w;
    w["rank"] = r;
    w["host"] = topo.node(plan.job.workers[r]).name;
    w["aggregator"] = topo.node(route.aggregator).name;
    w["path"] = labels.up[r];
    w["result_path"] = labels.result[r];
    workers.push_back(w);
  }
  Ordered aggregators = Ordered::array();
  Ordered contributors = Ordered::array();
  for (const Aggregator& a : Aggregators(plan)) {
    Ordered j;
    j["node"] = topo.node(a.node).name;
    j["members"] = a.members;
    j["fan_in"] = a.members.size();
    j["path_to_root"] = labels.ToRoot(a.node);
    j["path_from_root"] = labels.FromRoot(a.node);
    aggregators.push_back(j);
    contributors.push_back({{"switch", topo.node(a.node).name}});
  }
  for (size_t r = 0; r < plan.workers.size(); ++r) {
    if (plan.workers[r].aggregator == plan.job.root) contributors.push_back({{"rank", r}});
  }
  doc["workers"] = workers;
  doc["aggregators"] = aggregators;
  doc["root"] = {{"host", root}, {"fan_in", contributors.size()}, {"contributors", contributors}};
  Ordered paths = Ordered::array();
  for (size_t i = 0; i < labels.paths.size(); ++i) {
    Ordered nodes = Ordered::array();
    for (NodeId n : labels.paths[i].nodes) nodes.push_back(topo.node(n).name);
    paths.push_back({{"label", i + 1}, {"nodes", nodes}});
  }
  doc["paths"] = paths;
  if (evaluation != nullptr) doc["predicted"] = Predicted(topo, *evaluation, model);
  const PlanDiagnostics& d = plan.diagnostics;
  doc["diagnostics"] = {{"lambda_lp", Clean(d.lambda_lp)},
                        {"lambda_rounded", Clean(d.lambda_rounded)},
                        {"lambda_repaired", Clean(d.lambda_repaired)},
                        {"lambda_improved", Clean(d.lambda_improved)},
                        {"max_capacity_violation", Clean(d.max_capacity_violation)},
                        {"rounding_samples", d.rounding_samples},
                        {"improve_starts", d.improve_starts}};
  return doc.dump(2) + "\n";
}

namespace {

using Json = nlohmann::json;

absl::Status Error(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrFormat("plan %s: %s", where, what));
}

absl::StatusOr<NodeId> NodeNamed(const Topology& topo, const Json& v, const std::string& where) {
  if (!v.is_string()) return Error(where, "must be a node name");
  auto id = topo.Find(v.get<std::string>());
  if (!id) return Error(where, absl::StrFormat("unknown node \"%s\"", v.get<std::string>()));
  return *id;
}

absl::StatusOr<int> Int(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return Error(where + "." + key, "is required");
  if (!it->is_number_integer()) return Error(where + "." + key, "must be an integer");
  return it->get<int>();
}

absl::StatusOr<Path> PathFromNodes(const Topology& topo, const std::vector<NodeId>& nodes,
                                   const std::string& where) {
  Path p;
  p.nodes = nodes;
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    bool found = false;
    for (const topology::Adjacent& adj : topo.neighbors(nodes[i])) {
      if (adj.node == nodes[i + 1]) {
        p.arcs.push_back(adj.arc);
        found = true;
        break;
      }
    }
    if (!found) {
      return Error(where, absl::StrFormat("no link between \"%s\" and \"%s\"",
                                          topo.node(nodes[i]).name, topo.node(nodes[i + 1]).name));
    }
  }
  return p;
}

absl::StatusOr<double> Number(const Json& obj, const char* key, const std::string& where,
                              double fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (!it->is_number() || !(it->get<double>() >= 0)) {
    return Error(where + "." + key, "must be a number >= 0");
  }
  return it->get<double>();
}

absl::StatusOr<Plan> ParsePlan(const Topology& topo, const Json& doc);

}  // namespace

absl::StatusOr<Plan> ParsePlanJson(const Topology& topo, std::string_view text) {
  // No exceptions: the parse does not throw, and every field is
  // type-checked before it is read.
  auto doc = util::ParseJson<Json>(text, "plan JSON");
  if (!doc.ok()) return doc.status();
  return ParsePlan(topo, *doc);
}

namespace {

absl::StatusOr<JobSpec> ParseJobSpec(const Topology& topo, const Json& doc) {
  if (!doc.contains("job") || !doc["job"].is_object()) return Error("job", "is required");
  const Json& job = doc["job"];
  JobSpec spec;
  auto root = NodeNamed(topo, job.contains("root") ? job["root"] : Json(), "job.root");
  if (!root.ok()) return root.status();
  spec.root = *root;
  if (!job.contains("workers") || !job["workers"].is_array()) {
    return Error("job.workers", "is required");
  }
  for (size_t i = 0; i < job["workers"].size(); ++i) {
    auto h = NodeNamed(topo, job["workers"][i], absl::StrFormat("job.workers[%d]", i));
    if (!h.ok()) return h.status();
    spec.workers.push_back(*h);
  }
  auto worker_gbps = Number(job, "worker_gbps", "job", 0);
  if (!worker_gbps.ok()) return worker_gbps.status();
  spec.worker_gbps = *worker_gbps;
  auto ps_gbps = Number(job, "ps_ingress_gbps", "job", 0);
  if (!ps_gbps.ok()) return ps_gbps.status();
  spec.ps_ingress_gbps = *ps_gbps;
  if (job.contains("seed")) {
    if (!job["seed"].is_number_unsigned()) return Error("job.seed", "must be a whole number >= 0");
    spec.seed = job["seed"].get<uint64_t>();
  }
  return spec;
}

// The labelled paths, by label.
absl::StatusOr<std::map<int, Path>> ParsePaths(const Topology& topo, const Json& doc) {
  std::map<int, Path> paths;
  if (!doc.contains("paths") || !doc["paths"].is_array()) return Error("paths", "is required");
  for (size_t i = 0; i < doc["paths"].size(); ++i) {
    const std::string where = absl::StrFormat("paths[%d]", i);
    const Json& p = doc["paths"][i];
    if (!p.is_object()) return Error(where, "must be an object");
    auto label = Int(p, "label", where);
    if (!label.ok()) return label.status();
    if (*label < 1 || *label > 65535 || paths.count(*label)) {
      return Error(where + ".label",
                   absl::StrFormat("%d is out of [1, 65535] or repeated", *label));
    }
    if (!p.contains("nodes") || !p["nodes"].is_array() || p["nodes"].empty()) {
      return Error(where + ".nodes", "must be a non-empty array of node names");
    }
    std::vector<NodeId> nodes;
    for (size_t j = 0; j < p["nodes"].size(); ++j) {
      auto id = NodeNamed(topo, p["nodes"][j], absl::StrFormat("%s.nodes[%d]", where, j));
      if (!id.ok()) return id.status();
      nodes.push_back(*id);
    }
    auto path = PathFromNodes(topo, nodes, where);
    if (!path.ok()) return path.status();
    paths[*label] = *std::move(path);
  }
  return paths;
}

absl::StatusOr<Path> PathLabelled(const std::map<int, Path>& paths, const Json& obj,
                                  const char* key, const std::string& where) {
  auto label = Int(obj, key, where);
  if (!label.ok()) return label.status();
  auto it = paths.find(*label);
  if (it == paths.end()) {
    return Error(where + "." + key, absl::StrFormat("unknown path label %d", *label));
  }
  return it->second;
}

// Each rank's aggregator and uplink.
absl::Status ParseWorkerRoutes(const Topology& topo, const Json& doc,
                               const std::map<int, Path>& paths, Plan& plan) {
  if (!doc.contains("workers") || !doc["workers"].is_array()) {
    return Error("workers", "is required");
  }
  const Json& workers = doc["workers"];
  if (workers.size() != plan.job.workers.size()) {
    return Error("workers", absl::StrFormat("has %d entries for %d ranks", workers.size(),
                                            plan.job.workers.size()));
  }
  plan.workers.resize(workers.size());
  for (size_t i = 0; i < workers.size(); ++i) {
    const std::string where = absl::StrFormat("workers[%d]", i);
    auto rank = Int(workers[i], "rank", where);
    if (!rank.ok()) return rank.status();
    if (*rank != static_cast<int>(i)) {
      return Error(where + ".rank", "ranks must be listed in order");
    }
    if (!workers[i].is_object()) return Error(where, "must be an object");
    auto agg =
        NodeNamed(topo, workers[i].contains("aggregator") ? workers[i]["aggregator"] : Json(),
                  where + ".aggregator");
    if (!agg.ok()) return agg.status();
    auto up = PathLabelled(paths, workers[i], "path", where);
    if (!up.ok()) return up.status();
    plan.workers[i] = {*agg, *std::move(up)};
  }
  return absl::OkStatus();
}

// Each aggregating switch's path to the root.
absl::Status ParseAggregators(const Topology& topo, const Json& doc,
                              const std::map<int, Path>& paths, Plan& plan) {
  if (!doc.contains("aggregators") || !doc["aggregators"].is_array()) {
    return Error("aggregators", "is required");
  }
  for (size_t i = 0; i < doc["aggregators"].size(); ++i) {
    const std::string where = absl::StrFormat("aggregators[%d]", i);
    const Json& a = doc["aggregators"][i];
    if (!a.is_object()) return Error(where, "must be an object");
    auto node = NodeNamed(topo, a.contains("node") ? a["node"] : Json(), where + ".node");
    if (!node.ok()) return node.status();
    auto to_root = PathLabelled(paths, a, "path_to_root", where);
    if (!to_root.ok()) return to_root.status();
    plan.to_root[*node] = *std::move(to_root);
  }
  return absl::OkStatus();
}

absl::StatusOr<Plan> ParsePlan(const Topology& topo, const Json& doc) {
  if (!doc.is_object()) return Error("", "must be a JSON object");
  if (!doc.contains("format") || doc["format"] != "grid-plan/1") {
    return Error("format", "must be \"grid-plan/1\"");
  }
  Plan plan;
  if (doc.contains("best_effort")) {
    if (!doc["best_effort"].is_boolean()) return Error("best_effort", "must be true or false");
    plan.best_effort = doc["best_effort"].get<bool>();
  }
  if (doc.contains("planner")) {
    if (!doc["planner"].is_string()) return Error("planner", "must be a string");
    plan.planner = doc["planner"].get<std::string>();
  }
  auto job = ParseJobSpec(topo, doc);
  if (!job.ok()) return job.status();
  plan.job = *std::move(job);
  auto paths = ParsePaths(topo, doc);
  if (!paths.ok()) return paths.status();
  if (absl::Status s = ParseWorkerRoutes(topo, doc, *paths, plan); !s.ok()) return s;
  if (absl::Status s = ParseAggregators(topo, doc, *paths, plan); !s.ok()) return s;
  if (absl::Status s = ValidatePlan(topo, plan); !s.ok()) return s;
  return plan;
}

}  // namespace

}  // namespace grid::planner
