// GRID_TRACE in grid-switch (docs/observability.md): a recorder per lane,
// attached to the lane's runtime, and written as DIR/switch-NAME.json
// when the switch stops, after the lanes have.
#ifndef GRID_TOOLS_SWITCH_TRACE_H_
#define GRID_TOOLS_SWITCH_TRACE_H_

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grid/switch.h"
#include "grid/wire.h"
#include "tools/switch_flags.h"
#include "tools/trace_env.h"
#include "trace/chrome.h"

namespace grid::tools {

class SwitchTrace {
 public:
  // Null when GRID_TRACE is not set; a bad GRID_TRACE_EVENTS fails the tool.
  static std::unique_ptr<SwitchTrace> FromEnvironment() {
    auto env = TraceFromEnvironment();
    if (!env.ok()) Fail(std::string(env.status().message()));
    if (env->dir.empty()) return nullptr;
    return std::unique_ptr<SwitchTrace>(new SwitchTrace(*env));
  }

  // A lane's `runtime` (a SwitchRuntime) records from now on; its clock is
  // SteadyNs, traced as Unix time.
  template <typename Runtime>
  void Attach(Runtime& runtime) {
    recorders_.push_back(std::make_unique<trace::Recorder>(env_.events));
    runtime.SetTrace(recorders_.back().get(), absl::ToUnixNanos(absl::Now()) - SteadyNs());
  }

  // Once no lane runs. A write that fails is said on stderr (the switch's
  // counters are already out).
  void Write(const sw::SwitchConfig& config) const {
    const std::string& name = config.name;
    trace::TraceProcess p;
    p.name = "switch " + name;
    // Which port faces which host, and each job's root: the report names
    // the root's link by them.
    std::string hosts, roots;
    for (const auto& [port, ip] : config.hosts) {
      absl::StrAppendFormat(&hosts, "%s\"%d\":\"%s\"", hosts.empty() ? "" : ",", port,
                            wire::IpToString(ip));
    }
    for (const auto& [id, job] : config.jobs) {
      if (!job.aggregate) continue;
      absl::StrAppendFormat(&roots, "%s\"%d\":\"%s\"", roots.empty() ? "" : ",", id,
                            wire::IpToString(job.aggregate->root.ip));
    }
    p.other_json = absl::StrFormat(
        R"("capacity_gbps":%g,"congestion_threshold":%d,"ports":%d,"hosts":{%s},"roots":{%s})",
        config.capacity_gbps, config.congestion_threshold, config.num_ports, hosts, roots);
    p.role = "switch";
    p.pid = static_cast<int>(::getpid());
    for (size_t k = 0; k < recorders_.size(); ++k) {
      p.tracks.push_back({"pipeline " + std::to_string(k), recorders_[k].get()});
    }
    absl::Status s = trace::WriteChromeTrace(env_.dir, trace::TraceFileName("switch", name), p);
    if (!s.ok()) std::fprintf(stderr, "grid-switch: %s\n", std::string(s.message()).c_str());
  }

 private:
  explicit SwitchTrace(TraceEnv env) : env_(std::move(env)) {}
  TraceEnv env_;
  std::vector<std::unique_ptr<trace::Recorder>> recorders_;
};

}  // namespace grid::tools

#endif  // GRID_TOOLS_SWITCH_TRACE_H_
