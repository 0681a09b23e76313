// grid-report's rules: which factor limited a run, from the evidence each
// leaves in the traces (docs/observability.md, "What grid-report names").
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/report.h"

namespace grid::tools {
namespace {

// The thresholds of the rules, each with its reason.
struct ReportTunables {
  // Resends per chunk above which loss matters: a resend costs a round
  // trip at least, an RTO at most, and 1% of chunks costs a few percent.
  static constexpr double kLossyResends = 0.01;
  // A queue is deep when it holds this share of the congestion threshold,
  // which is where a switch starts marking: a sampled depth is a lower
  // bound of the peak.
  static constexpr double kDeepQueue = 0.5;
  // Round trips this many times the shortest: the path queues.
  static constexpr double kInflatedRtt = 2.0;
  // The share of busy time waiting on the window (or the pool) above which
  // the window limits, when the path does not queue.
  static constexpr double kWindowBound = 0.5;
  // A queue that stays: its mean depth over the busy span, as a share of the
  // threshold. A descheduled switch process (two cores, a dozen processes)
  // shows a deep queue in one sample; a slow link keeps it.
  static constexpr double kStandingQueue = 0.1;
  // Resends that no switch saw dropped name loss only above this share: a
  // rank descheduled past its RTO resends what was never lost.
  static constexpr double kUnseenLoss = 0.05;
};

struct Totals {
  double busy = 0, window_wait = 0, results_wait = 0;
  int64_t chunks = 0, resends = 0, marked = 0, window = 0, slots = 0;
  double srtt = 0, min_rtt = 0;  // means over the ranks
};

Totals Sum(const Run& run) {
  Totals t;
  for (const RankRun& r : run.ranks) {
    t.busy += r.busy_s;
    for (const char* w : {"window full", "slot busy"}) {
      if (auto it = r.wait_s.find(w); it != r.wait_s.end()) t.window_wait += it->second;
    }
    if (auto it = r.wait_s.find("results wait"); it != r.wait_s.end()) t.results_wait += it->second;
    t.chunks += r.chunks;
    t.resends += r.resends();
    t.marked += r.marked;
    t.window = std::max(t.window, r.window);
    t.slots = std::max(t.slots, r.slots);
    t.srtt += r.srtt_us / run.ranks.size();
    t.min_rtt += r.min_rtt_us / run.ranks.size();
  }
  return t;
}

int64_t Drop(const SwitchRun& s, const char* reason) {
  auto it = s.drops.find(reason);
  return it == s.drops.end() ? 0 : it->second;
}

// "S1's port 2 (toward the root 10.0.0.9)".
std::string PortName(const Run& run, const SwitchRun& s, int port) {
  std::string name = absl::StrFormat("%s's port %d", s.name, port);
  auto host = s.hosts.find(port);
  if (host == s.hosts.end()) return name;
  for (const RootRun& r : run.roots) {
    if (r.ip == host->second) return absl::StrCat(name, " (the root's link, ", r.ip, ")");
  }
  return absl::StrCat(name, " (to host ", host->second, ")");
}

}  // namespace

Diagnosis Diagnose(const Run& run) {
  const Totals t = Sum(run);
  const double resend_share = t.chunks > 0 ? static_cast<double>(t.resends) / t.chunks : 0;
  const double rtt_ratio = t.min_rtt > 0 ? t.srtt / t.min_rtt : 1;
  // 1. A switch short of aggregation capacity: DATA dropped over C_s (each
  //    resent), or chunks passed on to the root (best effort).
  const SwitchRun* tight = nullptr;
  int64_t most = 0;
  for (const SwitchRun& s : run.switches) {
    const int64_t n = Drop(s, "over_capacity") + s.passed;
    if (n > most) most = n, tight = &s;
  }
  if (tight != nullptr && (Drop(*tight, "over_capacity") > 0 || tight->passed > t.chunks / 100)) {
    return {"capacity",
            absl::StrFormat("%s aggregates at C_s = %g Gbps: %d DATA dropped over capacity, %d "
                            "passed on to the root; the ranks resent %d of %d chunks",
                            tight->name, tight->capacity_gbps, Drop(*tight, "over_capacity"),
                            tight->passed, t.resends, t.chunks),
            absl::StrFormat("give %s more capacity (capacity_gbps in its tables, or grid-switch "
                            "--capacity-gbps), or plan with its C_s in the topology "
                            "(cap.%s=...) so the planner sends it less",
                            tight->name, tight->name)};
  }
  // 2. A slow link: a queue that fills (deep, or dropping) while round trips
  //    grow.
  //    The port is the one whose queue stands deepest on average.
  const SwitchRun* slow = nullptr;
  int slow_port = -1;
  double standing = 0;
  for (const SwitchRun& s : run.switches) {
    for (const auto& [port, mean] : s.mean_depth) {
      const double share = s.congestion_threshold > 0 ? mean / s.congestion_threshold : 0;
      if (share > standing) standing = share, slow = &s, slow_port = port;
    }
  }
  const int64_t queue_full = slow != nullptr ? Drop(*slow, "queue_full") : 0;
  const double deepest =
      slow != nullptr && slow->congestion_threshold > 0
          ? static_cast<double>(slow->max_depth.at(slow_port)) / slow->congestion_threshold
          : 0;
  if (slow != nullptr &&
      ((deepest >= ReportTunables::kDeepQueue && standing >= ReportTunables::kStandingQueue) ||
       queue_full > 0) &&
      (rtt_ratio >= ReportTunables::kInflatedRtt || t.marked > 0 || queue_full > 0)) {
    return {"slow link",
            absl::StrFormat("%s queues up to %d frames, %.1f on average (marks from %d); round "
                            "trips are %.1fx the shortest (%.0f vs %.0f us), %d results marked, %d "
                            "frames dropped at full queues",
                            PortName(run, *slow, slow_port), slow->max_depth.at(slow_port),
                            slow->mean_depth.at(slow_port), slow->congestion_threshold, rtt_ratio,
                            t.srtt, t.min_rtt, t.marked, queue_full),
            absl::StrFormat("a faster link at %s, or a plan that sends less over it (more "
                            "aggregation in the switches: --planner=grid; another root)",
                            PortName(run, *slow, slow_port))};
  }
  // 3. Loss: chunks resent, by timeout or order, on links that drop. Where
  //    no switch saw a drop, only many resends are loss (kUnseenLoss); fewer
  //    may be a rank's late ones, and the window comes first.
  std::vector<std::string> lossy;
  for (const SwitchRun& s : run.switches) {
    if (const int64_t n = Drop(s, "impaired"); n > 0) lossy.push_back(absl::StrCat(s.name, " ", n));
  }
  const Diagnosis loss = {
      "loss",
      absl::StrFormat("%d of %d chunks resent (%.1f%%); dropped on the switches' links: %s",
                      t.resends, t.chunks, 100 * resend_share,
                      lossy.empty() ? "none (the loss is elsewhere: hosts' links or NICs, or "
                                      "ranks resent late chunks)"
                                    : absl::StrJoin(lossy, ", ")),
      "repair or route around the lossy links (grid-plan's topology); a shorter RTO "
      "(GRID_RTO_US) shortens each loss's wait"};
  if (resend_share >= ReportTunables::kLossyResends &&
      (!lossy.empty() || resend_share >= ReportTunables::kUnseenLoss)) {
    return loss;
  }
  // 4. The window: ranks wait for it while the path does not queue.
  const double window_share = t.busy > 0 ? t.window_wait / t.busy : 0;
  if (window_share >= ReportTunables::kWindowBound) {
    return {"window",
            absl::StrFormat("ranks wait for the window %.0f%% of their busy time, with at most %d "
                            "chunks in flight (a pool of %d) and round trips %.1fx the shortest",
                            100 * window_share, t.window, t.slots, rtt_ratio),
            absl::StrFormat("a larger window: GRID_WINDOW (now %d; 0 is the whole pool), and a "
                            "larger pool (GRID_SLOTS, grid-controller --slots) once it is the pool",
                            t.window)};
  }
  if (resend_share >= ReportTunables::kLossyResends) return loss;
  return {"none",
          absl::StrFormat("no network factor binds: %.0f%% of busy time waits for results, %.0f%% "
                          "for the window, %d resends",
                          t.busy > 0 ? 100 * t.results_wait / t.busy : 0, 100 * window_share,
                          t.resends),
          "look at the ranks' compute and CPU (allreduce_perf's cpu(us) and net(us))"};
}

std::string FormatReport(const Run& run, const Diagnosis& d) {
  std::string out =
      absl::StrFormat("%-6s %8s %6s %8s %9s %9s %9s %8s %9s %8s\n", "rank", "busy(s)", "ops",
                      "chunks", "window%", "slot%", "results%", "resends", "srtt(us)", "min(us)");
  for (const RankRun& r : run.ranks) {
    auto share = [&](const char* w) {
      auto it = r.wait_s.find(w);
      return r.busy_s > 0 && it != r.wait_s.end() ? 100 * it->second / r.busy_s : 0.0;
    };
    absl::StrAppendFormat(&out, "%-6d %8.3f %6d %8d %9.1f %9.1f %9.1f %8d %9.0f %8.0f\n", r.rank,
                          r.busy_s, r.operations, r.chunks, share("window full"),
                          share("slot busy"), share("results wait"), r.resends(), r.srtt_us,
                          r.min_rtt_us);
  }
  for (const SwitchRun& s : run.switches) {
    std::vector<std::string> drops, depth;
    for (const auto& [reason, n] : s.drops) drops.push_back(absl::StrCat(reason, " ", n));
    for (const auto& [port, n] : s.max_depth) {
      depth.push_back(absl::StrFormat("%d:%d/%.1f", port, n, s.mean_depth.at(port)));
    }
    absl::StrAppendFormat(&out,
                          "%s: %d DATA aggregated, %d passed; drops: %s; queue per port "
                          "(deepest/mean): %s\n",
                          s.name, s.data, s.passed,
                          drops.empty() ? "none" : absl::StrJoin(drops, ", "),
                          absl::StrJoin(depth, " "));
  }
  for (const RootRun& r : run.roots) {
    absl::StrAppendFormat(&out, "root %s: %d chunks completed, %d results resent\n", r.ip,
                          r.completed, r.results_resent);
  }
  absl::StrAppendFormat(&out, "limited by: %s\nevidence: %s\nchange: %s\n", d.factor, d.evidence,
                        d.change);
  return out;
}

}  // namespace grid::tools
