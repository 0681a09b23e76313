// grid-root: the root (parameter server) as its own process. It reads its
// config and transport from the store the controller filled (or from
// --config/--transport), then completes chunks until SIGINT/SIGTERM, when it
// prints its counters as JSON on stdout (SIGUSR1: on stderr, and go on;
// SIGHUP: the config again, and nothing held from before).
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grid/control.h"
#include "grid/options.h"
#include "grid/store.h"
#include "grid/transport.h"
#include "node/metrics.h"
#include "node/status.h"
#include "root/lanes.h"
#include "store/wait.h"
#include "tools/flags.h"
#include "tools/trace_env.h"

namespace {

constexpr char kUsage[] =
    "usage: grid-root (--store=SPEC | --config=root.json --transport=SPEC)\n"
    "                 [--bootstrap-timeout-ms=60000] [--threads=1] [--metrics=ADDR:PORT]\n"
    "Runs the job's root. The store holds grid/root and grid/root-transport.\n"
    "--threads=N: N threads, each completing the slots s with s % N == its index\n"
    "(docs/worker.md, \"Threads\").\n"
    "--metrics serves the counters to Prometheus at http://ADDR:PORT/metrics (PORT 0: any).\n"
    "Signals: SIGUSR1 prints the counters (JSON, stderr); SIGHUP reads the config again and\n"
    "drops every slot it holds (a job's next run; docs/worker.md, \"One run per job\");\n"
    "SIGINT and SIGTERM print them on stdout and exit.\n";

volatile std::sig_atomic_t g_stop = 0, g_dump = 0, g_reload = 0;
void OnSignal(int sig) {
  if (sig == SIGUSR1) {
    g_dump = 1;
  } else if (sig == SIGHUP) {
    g_reload = 1;
  } else {
    g_stop = 1;
  }
}

// The root's counters by name: the JSON of SIGUSR1 and of the end, and
// the metrics (grid_root_NAME_total).
struct StatField {
  const char* name;
  uint64_t grid::root::RootStats::*member;
  const char* help;
};
using RS = grid::root::RootStats;
constexpr StatField kStatFields[] = {
    {"packets_received", &RS::packets_received, "Frames received."},
    {"packets_sent", &RS::packets_sent, "Frames sent."},
    {"bytes_received", &RS::bytes_received, "Bytes received."},
    {"bytes_sent", &RS::bytes_sent, "Bytes sent."},
    {"contributions", &RS::contributions, "Contributions added to a sum."},
    {"completed", &RS::completed, "Chunks completed."},
    {"results_resent", &RS::results_resent, "Results sent again for a retransmission."},
    {"duplicates", &RS::duplicates, "Retransmissions into incomplete chunks."},
    {"stale", &RS::stale, "Late frames of chunks a copy has moved past."},
    {"collisions", &RS::collisions, "Newer chunks while the copy was mid-aggregation."},
    {"overflows", &RS::overflows, "int32 sums that wrapped."},
    {"malformed", &RS::malformed, "Frames that failed parsing."},
    {"foreign", &RS::foreign, "Frames of another job, or not from a contributor's source."},
    {"rejected", &RS::rejected,
     "Frames of this job with a contributor, fan-in, slot or length "
     "it does not have."},
    {"passed", &RS::passed, "DATA a best-effort switch passed on, added to a sum."},
    {"proxied", &RS::proxied, "Partials a proxy sent in a best-effort switch's stead."},
};

std::string StatsJson(const grid::root::RootStats& s) {
  std::string out = "{";
  for (const StatField& f : kStatFields) {
    absl::StrAppendFormat(&out, "%s\"%s\":%d", out.size() > 1 ? "," : "", f.name, s.*f.member);
  }
  return out + "}";
}

// grid-root --metrics: the counters and the drops per (job, token), read
// from the lanes' published copies, which any thread may.
std::string StatsMetrics(const std::string& name, const grid::root::RootLanes& root) {
  const grid::root::RootStats s = root.stats();
  grid::node::MetricsText m;
  for (const StatField& f : kStatFields) {
    m.Family(absl::StrCat("grid_root_", f.name, "_total"), "counter", f.help);
    m.Sample({{"root", name}}, static_cast<double>(s.*f.member));
  }
  grid::node::AppendJobDrops(m, "grid_root_job_drops_total", {"root", name}, root.DropsByJob());
  return m.text();
}

// A wait on the store that says, after a few seconds, what it waits for.
grid::store::KeyWait RootWait(std::string key, std::string what, absl::Duration timeout) {
  grid::store::KeyWait w;
  w.key = std::move(key);
  w.who = "grid-root";
  w.what = std::move(what) + " from grid-controller";
  w.timeout = timeout;
  w.notice = grid::NoticeToStderr;
  return w;
}

// Where the root's config comes from: the store's grid/root, or --config.
// Read at start and again on SIGHUP.
absl::StatusOr<grid::host_config::RootConfig> ReadConfig(const grid::tools::Flags& flags,
                                                         grid::Store* store, absl::Duration wait) {
  std::string text;
  if (store != nullptr) {
    auto t = grid::store::AwaitKey(*store, RootWait("grid/root", "its config", wait));
    if (!t.ok()) return t.status();
    text = *std::move(t);
  } else {
    const std::string path = flags.Required("config");
    std::ifstream in(path);
    if (!in) return absl::NotFoundError("cannot open " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  return grid::host_config::ParseRootConfigJson(text);
}

// SIGHUP: the config again, and every thread starts over with nothing held.
void Reload(const grid::tools::Flags& flags, grid::Store* store, grid::root::RootLanes& root) {
  auto config = ReadConfig(flags, store, absl::Seconds(5));
  const absl::Status s = config.ok() ? root.Reload(*config, absl::Seconds(5)) : config.status();
  std::fprintf(stderr, "grid-root: reload%s: %s\n",
               config.ok() ? absl::StrFormat(" (job %d)", config->job_id).c_str() : "",
               s.ToString().c_str());
}

// From a store, the root tells the job's ranks it is alive and what it
// drops against their job (lib/node/status.h), on a connection of its own,
// under its topology name. Null without --store.
std::unique_ptr<grid::node::NodeReporter> StartReporter(const grid::tools::Flags& flags,
                                                        const grid::host_config::RootConfig& config,
                                                        grid::root::RootLanes* lanes) {
  const std::optional<std::string> spec = flags.Get("store");
  if (!spec) return nullptr;
  auto own = grid::OpenStore(*spec);
  if (!own.ok()) flags.Exit(own.status());
  return std::make_unique<grid::node::NodeReporter>(
      *std::move(own), config.name.empty() ? "root" : config.name, grid::node::NodeKind::kRoot,
      [lanes] { return lanes->DropsByJob(); });
}

// --metrics: a server whose thread reads the lanes' published counters.
// Null without the flag; a bad or taken address ends the process.
std::unique_ptr<grid::node::MetricsServer> StartMetrics(const grid::tools::Flags& flags,
                                                        const grid::host_config::RootConfig& config,
                                                        const grid::root::RootLanes* lanes) {
  const std::optional<std::string> address = flags.Get("metrics");
  if (!address) return nullptr;
  const std::string name = config.name.empty() ? "root" : config.name;
  auto server = grid::node::MetricsServer::Start(
      *address, [name, lanes] { return StatsMetrics(name, *lanes); });
  if (!server.ok()) flags.Exit(server.status());
  std::fprintf(stderr, "grid-root: metrics at %s\n", (*server)->url().c_str());
  return *std::move(server);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const tools::Flags flags(
      "grid-root", argc, argv,
      {"store", "config", "transport", "bootstrap-timeout-ms", "threads", "metrics"}, kUsage);
  const auto threads = static_cast<uint32_t>(flags.Int("threads", 1, 1, 64));
  const absl::Duration wait =
      absl::Milliseconds(flags.Int("bootstrap-timeout-ms", 60000, 1, 1ll << 40));
  std::string spec = flags.String("transport", "");
  std::unique_ptr<Store> store;
  if (auto store_spec = flags.Get("store")) {
    auto opened = OpenStore(*store_spec);
    if (!opened.ok()) flags.Exit(opened.status());
    store = *std::move(opened);
  }
  auto config = ReadConfig(flags, store.get(), wait);
  if (!config.ok()) flags.Exit(config.status());
  if (spec.empty() && store != nullptr) {
    auto t = store::AwaitKey(*store, RootWait("grid/root-transport", "its transport", wait));
    if (!t.ok()) flags.Exit(t.status());
    spec = *t;
  }
  while (!spec.empty() && (spec.back() == '\n' || spec.back() == ' ')) spec.pop_back();
  if (spec.empty()) flags.Fail("--transport is required");
  auto transport = OpenTransport(spec);
  if (!transport.ok()) flags.Exit(transport.status());
  const auto trace = tools::TraceFromEnvironment();
  if (!trace.ok()) flags.Exit(trace.status());
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGHUP}) std::signal(sig, OnSignal);
  auto root = root::RootLanes::Start(*config, *std::move(transport), threads, absl::Milliseconds(5),
                                     trace->events);
  if (!root.ok()) flags.Exit(root.status());
  std::fprintf(stderr, "grid-root: job %d, %zu contributors, %s\n", config->job_id,
               config->contributors.size(), (*root)->Describe().c_str());
  std::unique_ptr<node::NodeReporter> reporter = StartReporter(flags, *config, root->get());
  const std::unique_ptr<node::MetricsServer> metrics = StartMetrics(flags, *config, root->get());
  // The lanes run on their own threads; this one waits for a signal.
  while (!g_stop) {
    absl::SleepFor(absl::Milliseconds(20));
    if (g_dump) {
      g_dump = 0;
      std::fprintf(stderr, "%s\n", StatsJson((*root)->stats()).c_str());
    }
    if (g_reload) {
      g_reload = 0;
      Reload(flags, store.get(), **root);
    }
  }
  if (reporter) reporter->Stop();
  (*root)->Stop();
  std::printf("%s\n", StatsJson((*root)->stats()).c_str());
  if (!trace->dir.empty()) {
    const std::string name = absl::StrFormat("job%d", config->job_id);
    if (absl::Status s = (*root)->WriteTrace(trace->dir, name, *config); !s.ok()) flags.Exit(s);
  }
  return 0;
}
