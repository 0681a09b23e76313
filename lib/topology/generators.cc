// Generated topologies (docs/topology.md): the paper's testbed, one rack,
// k-ary fat trees and leaf-spine fabrics, from a spec string.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/topology.h"
#include "util/random.h"

namespace grid::topology {
namespace {

struct Spec {
  std::string kind;
  std::map<std::string, std::string> options;
  std::map<std::string, bool> used;

  std::optional<std::string> Take(const std::string& key) {
    auto it = options.find(key);
    if (it == options.end()) return std::nullopt;
    used[key] = true;
    return it->second;
  }
};

absl::StatusOr<Spec> ParseSpec(std::string_view text) {
  Spec spec;
  const size_t colon = text.find(':');
  spec.kind = std::string(text.substr(0, colon));
  if (colon == std::string_view::npos) return spec;
  const std::string_view rest = text.substr(colon + 1);
  // absl::string_view is its own type in this Abseil, not std::string_view.
  for (absl::string_view item :
       absl::StrSplit(absl::string_view(rest.data(), rest.size()), ',', absl::SkipEmpty())) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("topology spec \"%s\": option \"%s\" is not key=value", text, item));
    }
    const std::string key(item.substr(0, eq));
    if (spec.options.count(key)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("topology spec \"%s\": option %s given twice", text, key));
    }
    spec.options[key] = std::string(item.substr(eq + 1));
  }
  return spec;
}

absl::StatusOr<int> IntOption(Spec& spec, const std::string& key, int fallback, int lo, int hi) {
  auto v = spec.Take(key);
  if (!v) return fallback;
  int out = 0;
  if (!absl::SimpleAtoi(*v, &out) || out < lo || out > hi) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "topology spec option %s=%s: expected a whole number in [%d, %d]", key, *v, lo, hi));
  }
  return out;
}

absl::StatusOr<double> DoubleOption(Spec& spec, const std::string& key, double fallback) {
  auto v = spec.Take(key);
  if (!v) return fallback;
  double out = 0;
  if (!absl::SimpleAtod(*v, &out) || !(out > 0) || !std::isfinite(out)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("topology spec option %s=%s: expected a positive number", key, *v));
  }
  return out;
}

// The options every generator takes, applied once the graph exists.
struct Common {
  std::string prog;
  std::string cap;
  int slots;
  uint64_t seed;
  double gbps;         // host links
  double fabric_gbps;  // switch-to-switch links
  double latency_us;
};

absl::StatusOr<Common> CommonOptions(Spec& spec, const char* default_prog,
                                     const char* default_cap) {
  Common c;
  c.prog = spec.Take("prog").value_or(default_prog);
  c.cap = spec.Take("cap").value_or(default_cap);
  auto slots = IntOption(spec, "slots", 4096, 0, 1 << 24);
  if (!slots.ok()) return slots.status();
  c.slots = *slots;
  auto seed = IntOption(spec, "seed", 1, 0, 2147483647);
  if (!seed.ok()) return seed.status();
  c.seed = static_cast<uint64_t>(*seed);
  auto gbps = DoubleOption(spec, "link", 100);
  if (!gbps.ok()) return gbps.status();
  c.gbps = *gbps;
  auto fabric = DoubleOption(spec, "fabric", c.gbps);
  if (!fabric.ok()) return fabric.status();
  c.fabric_gbps = *fabric;
  auto lat = DoubleOption(spec, "lat", 1);
  if (!lat.ok()) return lat.status();
  c.latency_us = *lat;
  return c;
}

absl::Status ApplyProgrammable(Topology& topo, std::vector<Node>& nodes, const Common& c) {
  std::vector<NodeId> switches = topo.Switches();
  if (c.prog == "all" || c.prog == "none") {
    for (NodeId s : switches) nodes[s].programmable = c.prog == "all";
    return absl::OkStatus();
  }
  if (c.prog == "tor") {
    for (NodeId s : switches) nodes[s].programmable = nodes[s].tier == Tier::kTor;
    return absl::OkStatus();
  }
  if (c.prog.rfind("random:", 0) == 0) {
    double fraction = 0;
    if (!absl::SimpleAtod(c.prog.substr(7), &fraction) || fraction < 0 || fraction > 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("topology spec option prog=%s: the fraction must be in [0, 1]", c.prog));
    }
    const auto count = static_cast<size_t>(std::lround(fraction * switches.size()));
    util::Random rng(c.seed * 0x9e3779b97f4a7c15ull + 11);
    rng.Shuffle(switches);
    for (size_t i = 0; i < switches.size(); ++i) nodes[switches[i]].programmable = i < count;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "topology spec option prog=%s: expected all, none, tor or random:FRACTION", c.prog));
}

absl::Status ApplyCapacity(const Topology& topo, std::vector<Node>& nodes, const Common& c) {
  const std::vector<std::string> parts = absl::StrSplit(c.cap, ':');
  double lo = 0, hi = 0;
  const bool uniform = parts.size() == 3 && parts[0] == "uniform";
  const bool fixed = parts.size() == 2 && parts[0] == "fixed";
  const bool ok = (uniform && absl::SimpleAtod(parts[1], &lo) && absl::SimpleAtod(parts[2], &hi)) ||
                  (fixed && absl::SimpleAtod(parts[1], &lo) && (hi = lo, true));
  if (!ok || !(lo > 0) || !(hi >= lo)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "topology spec option cap=%s: expected uniform:LO:HI or fixed:C with 0 < LO <= HI", c.cap));
  }
  util::Random rng(c.seed * 0x9e3779b97f4a7c15ull + 23);
  for (NodeId s : topo.Switches()) {
    nodes[s].slots = c.slots;
    // Every switch draws, programmable or not, so the capacity of a switch
    // does not depend on which others are programmable.
    const double draw = uniform ? std::round(rng.Uniform(lo, hi)) : lo;
    nodes[s].capacity_gbps = nodes[s].programmable ? draw : 0;
  }
  return absl::OkStatus();
}

// Builds the graph with `nodes` first (programmability and capacities are
// filled in after), then the links.
struct Builder {
  std::vector<Node> nodes;
  std::vector<std::tuple<std::string, std::string, double>> links;  // 0: the default rate

  void Switch(std::string name, Tier tier) {
    Node n;
    n.name = std::move(name);
    n.kind = NodeKind::kSwitch;
    n.tier = tier;
    nodes.push_back(std::move(n));
  }
  void Host(std::string name, HostRole role = HostRole::kIdle) {
    Node n;
    n.name = std::move(name);
    n.kind = NodeKind::kHost;
    n.role = role;
    nodes.push_back(std::move(n));
  }
  void Connect(std::string a, std::string b, double gbps = 0) {
    links.emplace_back(std::move(a), std::move(b), gbps);
  }

  absl::StatusOr<Topology> Finish(const std::string& name, Spec& spec, const Common& common) {
    // cap.NAME=GBPS: one switch's capacity C_s, instead of cap's.
    std::map<std::string, double> own_cap;
    for (const auto& [key, value] : spec.options) {
      if (key.rfind("cap.", 0) != 0) continue;
      auto gbps = DoubleOption(spec, key, 0);
      if (!gbps.ok()) return gbps.status();
      own_cap[key.substr(4)] = *gbps;
    }
    for (const auto& [key, value] : spec.options) {
      if (!spec.used[key]) {
        return absl::InvalidArgumentError(
            absl::StrFormat("topology spec \"%s\": unknown option %s", spec.kind, key));
      }
    }
    // A scratch topology gives the switch list for the options.
    Topology scratch(name);
    for (const Node& n : nodes) {
      Node copy = n;
      copy.programmable = false;
      if (auto id = scratch.AddNode(copy); !id.ok()) return id.status();
    }
    if (absl::Status s = ApplyProgrammable(scratch, nodes, common); !s.ok()) return s;
    if (absl::Status s = ApplyCapacity(scratch, nodes, common); !s.ok()) return s;
    for (const auto& [switch_name, gbps] : own_cap) {
      auto id = scratch.Find(switch_name);
      if (!id || !nodes[*id].is_switch()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "topology spec \"%s\": option cap.%s: no switch of that name", spec.kind, switch_name));
      }
      if (nodes[*id].programmable) nodes[*id].capacity_gbps = gbps;
    }
    Topology topo(name);
    for (Node& n : nodes) {
      if (auto id = topo.AddNode(std::move(n)); !id.ok()) return id.status();
    }
    for (const auto& [a, b, given] : links) {
      const bool fabric =
          topo.node(*topo.Find(a)).is_switch() && topo.node(*topo.Find(b)).is_switch();
      const double gbps = given > 0 ? given : fabric ? common.fabric_gbps : common.gbps;
      if (auto id = topo.AddLink(a, b, gbps, common.latency_us); !id.ok()) return id.status();
    }
    if (absl::Status s = topo.Validate(); !s.ok()) return s;
    return topo;
  }
};

absl::StatusOr<Topology> Testbed(Spec& spec) {
  // The paper's testbed: three Tofinos in a triangle. S1 hosts W1, W2 and the
  // parameter server; S2 hosts W3, W4, W7; S3 hosts W5, W6, W8.
  auto common = CommonOptions(spec, "all", "fixed:3200");
  if (!common.ok()) return common.status();
  // The root's access rate B_alpha (the PS link), if not the hosts' rate.
  auto ps = DoubleOption(spec, "ps", common->gbps);
  if (!ps.ok()) return ps.status();
  Builder b;
  for (const char* s : {"S1", "S2", "S3"}) b.Switch(s, Tier::kTor);
  const std::pair<const char*, const char*> hosts[] = {{"W1", "S1"}, {"W2", "S1"}, {"W3", "S2"},
                                                       {"W4", "S2"}, {"W5", "S3"}, {"W6", "S3"},
                                                       {"W7", "S2"}, {"W8", "S3"}, {"PS", "S1"}};
  for (const auto& [h, s] : hosts) {
    b.Host(h, std::string(h) == "PS" ? HostRole::kRoot : HostRole::kWorker);
  }
  b.Connect("S1", "S2");
  b.Connect("S2", "S3");
  b.Connect("S3", "S1");
  for (const auto& [h, s] : hosts) b.Connect(h, s, std::string(h) == "PS" ? *ps : 0);
  return b.Finish("testbed", spec, *common);
}

// One rack: a ToR that every host hangs off, the setting SwitchML and ATP
// measure. A job's aggregation has one switch and the root one hop from it.
absl::StatusOr<Topology> Rack(Spec& spec) {
  auto hosts = IntOption(spec, "hosts", 9, 2, 4096);
  if (!hosts.ok()) return hosts.status();
  auto common = CommonOptions(spec, "all", "fixed:3200");
  if (!common.ok()) return common.status();
  Builder b;
  b.Switch("tor", Tier::kTor);
  for (int h = 0; h < *hosts; ++h) b.Host(absl::StrFormat("h%d", h));
  for (int h = 0; h < *hosts; ++h) b.Connect(absl::StrFormat("h%d", h), "tor");
  return b.Finish(absl::StrFormat("rack-%d", *hosts), spec, *common);
}

absl::StatusOr<Topology> FatTree(Spec& spec) {
  auto k = IntOption(spec, "k", 4, 2, 64);
  if (!k.ok()) return k.status();
  if (*k % 2 != 0) return absl::InvalidArgumentError("topology spec fattree: k must be even");
  auto hosts = IntOption(spec, "hosts", *k / 2, 0, 1024);
  if (!hosts.ok()) return hosts.status();
  auto common = CommonOptions(spec, "all", "uniform:100:3200");
  if (!common.ok()) return common.status();
  const int half = *k / 2;
  Builder b;
  for (int c = 0; c < half * half; ++c) b.Switch(absl::StrFormat("core%d", c), Tier::kCore);
  for (int p = 0; p < *k; ++p) {
    for (int i = 0; i < half; ++i) b.Switch(absl::StrFormat("agg%d_%d", p, i), Tier::kAgg);
  }
  for (int p = 0; p < *k; ++p) {
    for (int i = 0; i < half; ++i) b.Switch(absl::StrFormat("edge%d_%d", p, i), Tier::kTor);
  }
  int h = 0;
  for (int p = 0; p < *k; ++p) {
    for (int e = 0; e < half; ++e) {
      for (int j = 0; j < *hosts; ++j) b.Host(absl::StrFormat("h%d", h++));
    }
  }
  for (int p = 0; p < *k; ++p) {
    for (int i = 0; i < half; ++i) {
      // Aggregation switch i of every pod reaches cores [i*half, (i+1)*half).
      for (int c = 0; c < half; ++c) {
        b.Connect(absl::StrFormat("agg%d_%d", p, i), absl::StrFormat("core%d", i * half + c));
      }
      for (int e = 0; e < half; ++e) {
        b.Connect(absl::StrFormat("edge%d_%d", p, e), absl::StrFormat("agg%d_%d", p, i));
      }
    }
  }
  h = 0;
  for (int p = 0; p < *k; ++p) {
    for (int e = 0; e < half; ++e) {
      for (int j = 0; j < *hosts; ++j) {
        b.Connect(absl::StrFormat("h%d", h++), absl::StrFormat("edge%d_%d", p, e));
      }
    }
  }
  return b.Finish(absl::StrFormat("fattree-k%d", *k), spec, *common);
}

absl::StatusOr<Topology> LeafSpine(Spec& spec) {
  auto spines = IntOption(spec, "spines", 4, 1, 4096);
  if (!spines.ok()) return spines.status();
  auto leaves = IntOption(spec, "leaves", 4, 1, 4096);
  if (!leaves.ok()) return leaves.status();
  auto hosts = IntOption(spec, "hosts", 4, 0, 4096);
  if (!hosts.ok()) return hosts.status();
  auto common = CommonOptions(spec, "all", "uniform:100:3200");
  if (!common.ok()) return common.status();
  Builder b;
  for (int s = 0; s < *spines; ++s) b.Switch(absl::StrFormat("spine%d", s), Tier::kCore);
  for (int l = 0; l < *leaves; ++l) b.Switch(absl::StrFormat("leaf%d", l), Tier::kTor);
  for (int h = 0; h < *leaves * *hosts; ++h) b.Host(absl::StrFormat("h%d", h));
  for (int l = 0; l < *leaves; ++l) {
    for (int s = 0; s < *spines; ++s) {
      b.Connect(absl::StrFormat("leaf%d", l), absl::StrFormat("spine%d", s));
    }
  }
  for (int h = 0; h < *leaves * *hosts; ++h) {
    b.Connect(absl::StrFormat("h%d", h), absl::StrFormat("leaf%d", h / *hosts));
  }
  return b.Finish(absl::StrFormat("leafspine-%dx%d", *spines, *leaves), spec, *common);
}

}  // namespace

absl::StatusOr<Topology> GenerateTopology(std::string_view text) {
  auto spec = ParseSpec(text);
  if (!spec.ok()) return spec.status();
  if (spec->kind == "testbed") return Testbed(*spec);
  if (spec->kind == "rack") return Rack(*spec);
  if (spec->kind == "fattree") return FatTree(*spec);
  if (spec->kind == "leafspine") return LeafSpine(*spec);
  return absl::InvalidArgumentError(absl::StrFormat(
      "topology spec \"%s\": unknown generator \"%s\" (testbed, rack, fattree, leafspine)", text,
      spec->kind));
}

absl::StatusOr<Topology> LoadTopology(std::string_view spec_or_path) {
  const bool is_file =
      spec_or_path.find('/') != std::string_view::npos ||
      (spec_or_path.size() > 5 && spec_or_path.substr(spec_or_path.size() - 5) == ".json");
  if (!is_file) return GenerateTopology(spec_or_path);
  std::ifstream in{std::string(spec_or_path)};
  if (!in) {
    return absl::NotFoundError(absl::StrFormat("cannot open topology file \"%s\"", spec_or_path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto topo = ParseTopologyJson(buffer.str());
  if (!topo.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", spec_or_path, topo.status().message()));
  }
  return topo;
}

}  // namespace grid::topology
