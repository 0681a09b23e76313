// grid-report: a GRID_TRACE directory into a Run (tools/report.h).
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/report.h"
#include "util/json.h"

namespace grid::tools {
namespace {

using Json = nlohmann::json;

double Seconds(const Json& e) { return e.value("ts", 0.0) / 1e6; }

// An integer of a trace, clamped to +-2^40: no count GRID writes comes
// near, and sums of a file's worth of them stay far from int64's limits.
int64_t IntOf(const Json& v) {
  constexpr double kLimit = static_cast<double>(int64_t{1} << 40);
  if (v.is_number_unsigned())
    return static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), int64_t{1} << 40));
  if (v.is_number()) return static_cast<int64_t>(std::clamp(v.get<double>(), -kLimit, kLimit));
  throw std::invalid_argument("expected a number, not " + v.dump());
}
int64_t IntAt(const Json& object, const char* key, int64_t fallback = 0) {
  return object.is_object() && object.contains(key) ? IntOf(object[key]) : fallback;
}

// A cumulative counter's growth over the run: its last value less its first.
class Growth {
 public:
  void Add(const std::string& name, int64_t v) {
    first_.emplace(name, v);  // kept when there
    last_[name] = v;
  }
  std::map<std::string, int64_t> Deltas() const {
    std::map<std::string, int64_t> out;
    for (const auto& [name, v] : last_) out[name] = v - first_.at(name);
    return out;
  }

 private:
  std::map<std::string, int64_t> first_, last_;
};

void ReadRank(const Json& doc, const std::vector<const Json*>& events, RankRun& r) {
  const Json& other = doc["otherData"];
  r.rank = static_cast<int>(IntAt(other, "rank"));
  r.slots = IntAt(other, "slots");
  r.window = IntAt(other, "window");
  std::map<std::string, double> op_start;
  std::map<int64_t, std::pair<std::string, double>> open;  // by tid
  std::vector<std::pair<double, double>> busy;
  std::vector<double> srtt;
  r.min_rtt_us = 0;
  for (const Json* p : events) {
    const Json& e = *p;
    const std::string ph = e["ph"], name = e["name"];
    const double t = Seconds(e);
    const Json args = e.value("args", Json::object());
    if (ph == "b" && name == "allreduce") {
      op_start[e.value("id", "")] = t;
      r.chunks += IntAt(args, "chunks");
    } else if (ph == "e" && name == "allreduce") {
      if (auto it = op_start.find(e.value("id", "")); it != op_start.end()) {
        busy.push_back({it->second, t});
        ++r.operations;
        op_start.erase(it);
      }
    } else if (ph == "B") {
      open[IntAt(e, "tid")] = {name, t};
    } else if (ph == "E") {
      if (auto it = open.find(IntAt(e, "tid")); it != open.end() && it->second.first == name) {
        r.wait_s[name] += t - it->second.second;
        r.slices.push_back({name, it->second.second, t});
        open.erase(it);
      }
    } else if (ph == "i") {
      ++r.instants[name];
      if (absl::StartsWith(name, "resend") || name == "stall probe") r.resent_at.push_back(t);
    } else if (ph == "C" && name == "chunks") {
      r.samples.push_back({t, args.value("in_flight", 0.0), args.value("window", 0.0)});
    } else if (ph == "C" && name == "round trip (us)") {
      const double s = args.value("srtt", 0.0), m = args.value("min", 0.0);
      if (s > 0) srtt.push_back(s);
      if (m > 0 && (r.min_rtt_us == 0 || m < r.min_rtt_us)) r.min_rtt_us = m;
    } else if (ph == "C" && name == "signals") {
      r.marked = std::max<int64_t>(r.marked, IntAt(args, "marked"));
    }
  }
  // Operations overlap (pipelined): the time covered by any.
  std::sort(busy.begin(), busy.end());
  double end = -std::numeric_limits<double>::infinity();
  for (const auto& [a, b] : busy) {
    if (b <= end) continue;
    r.busy_s += b - std::max(a, end);
    end = b;
  }
  if (!srtt.empty()) {
    std::nth_element(srtt.begin(), srtt.begin() + srtt.size() / 2, srtt.end());
    r.srtt_us = srtt[srtt.size() / 2];
  }
}

// A switch's samples count while some rank is busy: between the run's
// first operation and its last (a switch samples while idle too).
void ReadSwitch(const Json& doc, const std::vector<const Json*>& events, double from, double to,
                SwitchRun& s) {
  const Json& other = doc["otherData"];
  s.name = other.value("process", "");
  if (absl::StartsWith(s.name, "switch ")) s.name = s.name.substr(7);
  s.capacity_gbps = other.value("capacity_gbps", 0.0);
  s.congestion_threshold = IntAt(other, "congestion_threshold");
  const Json hosts = other.value("hosts", Json::object());
  for (const auto& [port, host] : hosts.items()) s.hosts[std::stoi(port)] = host.get<std::string>();
  const Json roots = other.value("roots", Json::object());
  for (const auto& [job, root] : roots.items()) s.roots.insert(root.get<std::string>());
  Growth drops, aggregated;
  std::map<int, std::pair<double, int>> depth_sum;  // by port: sum, samples
  for (const Json* p : events) {
    const Json& e = *p;
    if (e["ph"] != "C") continue;
    const std::string name = e["name"];
    const bool busy = Seconds(e) >= from && Seconds(e) <= to;
    const Json args = e.value("args", Json::object());
    for (const auto& [arg, v] : args.items()) {
      const int64_t n = IntOf(v);
      if (name == "drops") drops.Add(arg, n);
      if (name == "aggregated") aggregated.Add(arg, n);
      if (name == "queue depth" && absl::StartsWith(arg, "port ") && busy) {
        const int port = std::stoi(arg.substr(5));
        s.max_depth[port] = std::max(s.max_depth[port], n);
        depth_sum[port].first += static_cast<double>(n);
        ++depth_sum[port].second;
      }
      if (name == "copies busy") s.max_busy = std::max(s.max_busy, n);
    }
  }
  for (const auto& [port, sum] : depth_sum) s.mean_depth[port] = sum.first / sum.second;
  s.drops = drops.Deltas();
  std::erase_if(s.drops, [](const auto& kv) { return kv.second == 0; });
  const auto agg = aggregated.Deltas();
  s.data = agg.count("data") ? agg.at("data") : 0;
  s.passed = agg.count("passed") ? agg.at("passed") : 0;
}

void ReadRoot(const Json& doc, const std::vector<const Json*>& events, RootRun& r) {
  r.ip = doc["otherData"].value("ip", "");
  Growth chunks;
  for (const Json* p : events) {
    const Json& e = *p;
    if (e["ph"] != "C") continue;
    const Json args = e.value("args", Json::object());
    if (e["name"] == "chunks") {
      for (const auto& [arg, v] : args.items()) chunks.Add(arg, IntOf(v));
    } else if (e["name"] == "copies busy") {
      r.max_busy = std::max<int64_t>(r.max_busy, IntAt(args, "busy"));
    }
  }
  const auto d = chunks.Deltas();
  r.completed = d.count("completed") ? d.at("completed") : 0;
  r.results_resent = d.count("results_resent") ? d.at("results_resent") : 0;
}

}  // namespace

int64_t RankRun::resends() const {
  int64_t n = 0;
  for (const auto& [name, count] : instants) {
    if (absl::StartsWith(name, "resend") || name == "stall probe") n += count;
  }
  return n;
}

absl::Status ReadTraceText(const std::string& name, std::string_view text, Run& run) {
  auto doc = util::ParseJson<Json>(text, name);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object() || !doc->contains("traceEvents") || !doc->contains("otherData") ||
      !(*doc)["traceEvents"].is_array() || !(*doc)["otherData"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": not a GRID_TRACE file"));
  }
  try {  // a field of another type than GRID writes
    std::vector<const Json*> events;
    for (const Json& e : (*doc)["traceEvents"]) {
      if (e.is_object() && e.contains("ph") && e.contains("name") && e["ph"] != "M") {
        events.push_back(&e);
      }
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Json* a, const Json* b) { return Seconds(*a) < Seconds(*b); });
    const std::string role = (*doc)["otherData"].value("role", "");
    if (role == "rank") {
      RankRun& r = run.ranks.emplace_back();
      r.file = name;
      ReadRank(*doc, events, r);
      if (!events.empty()) {
        run.t0_s = std::min(run.t0_s, Seconds(*events.front()));
        run.t1_s = std::max(run.t1_s, Seconds(*events.back()));
      }
    } else if (role == "switch") {
      ReadSwitch(*doc, events, run.t0_s, run.t1_s, run.switches.emplace_back());
    } else if (role == "root") {
      ReadRoot(*doc, events, run.roots.emplace_back());
    }
  } catch (const std::exception& e) {  // nlohmann's type errors, a port that is no number
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Run> ReadRun(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return absl::NotFoundError(absl::StrCat(dir, ": cannot open the directory"));
  std::vector<std::string> files;
  while (dirent* ent = ::readdir(d)) {
    if (absl::EndsWith(ent->d_name, ".json")) files.push_back(ent->d_name);
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  // Ranks first: their operations are the span the switches' samples count in.
  std::stable_partition(files.begin(), files.end(),
                        [](const std::string& f) { return absl::StartsWith(f, "rank-"); });
  Run run;
  for (const std::string& f : files) {
    const std::string path = dir + "/" + f;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (absl::Status s = ReadTraceText(path, text.str(), run); !s.ok()) return s;
  }
  if (run.ranks.empty()) {
    return absl::NotFoundError(absl::StrCat(dir, ": no rank's trace (rank-*.json) in it"));
  }
  FromRunStart(run);
  return run;
}

void FromRunStart(Run& run) {
  for (RankRun& r : run.ranks) {
    for (auto& s : r.slices) s.start -= run.t0_s, s.end -= run.t0_s;
    for (auto& s : r.samples) s.t -= run.t0_s;
    for (double& t : r.resent_at) t -= run.t0_s;
  }
  std::sort(run.ranks.begin(), run.ranks.end(),
            [](const RankRun& a, const RankRun& b) { return a.rank < b.rank; });
}

}  // namespace grid::tools
