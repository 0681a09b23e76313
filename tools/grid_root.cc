// grid-root: the root (parameter server) as its own process. It reads its
// config and transport from the store the controller filled (or from
// --config/--transport), then completes chunks until SIGINT/SIGTERM, when it
// prints its counters as JSON on stdout (SIGUSR1: on stderr, and go on).
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "grid/control.h"
#include "grid/store.h"
#include "grid/transport.h"
#include "root/shards.h"
#include "tools/flags.h"

namespace {

constexpr char kUsage[] =
    "usage: grid-root (--store=SPEC | --config=root.json --transport=SPEC)\n"
    "                 [--bootstrap-timeout-ms=60000] [--threads=1]\n"
    "Runs the job's root. The store holds grid/root and grid/root-transport.\n"
    "--threads=N: N threads, each completing the slots s with s % N == its index\n"
    "(docs/worker.md, \"Threads\").\n";

volatile std::sig_atomic_t g_stop = 0, g_dump = 0;
void OnSignal(int sig) {
  if (sig == SIGUSR1) {
    g_dump = 1;
  } else {
    g_stop = 1;
  }
}

std::string StatsJson(const grid::root::RootStats& s) {
  return absl::StrFormat(
      "{\"packets_received\":%d,\"packets_sent\":%d,\"bytes_received\":%d,\"bytes_sent\":%d,"
      "\"contributions\":%d,\"completed\":%d,\"results_resent\":%d,\"duplicates\":%d,"
      "\"stale\":%d,\"collisions\":%d,\"overflows\":%d,\"malformed\":%d,\"foreign\":%d,"
      "\"rejected\":%d,\"passed\":%d,\"proxied\":%d}",
      s.packets_received, s.packets_sent, s.bytes_received, s.bytes_sent, s.contributions,
      s.completed, s.results_resent, s.duplicates, s.stale, s.collisions, s.overflows, s.malformed,
      s.foreign, s.rejected, s.passed, s.proxied);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const tools::Flags flags("grid-root", argc, argv,
                           {"store", "config", "transport", "bootstrap-timeout-ms", "threads"},
                           kUsage);
  const auto threads = static_cast<uint32_t>(flags.Int("threads", 1, 1, 64));
  const absl::Duration wait =
      absl::Milliseconds(flags.Int("bootstrap-timeout-ms", 60000, 1, 1ll << 40));
  std::string config_text, spec = flags.String("transport", "");
  if (auto store_spec = flags.Get("store")) {
    auto store = OpenStore(*store_spec);
    if (!store.ok()) flags.Exit(store.status());
    auto text = (*store)->Get("grid/root", wait);
    if (!text.ok()) flags.Exit(text.status());
    config_text = *text;
    if (spec.empty()) {
      auto t = (*store)->Get("grid/root-transport", wait);
      if (!t.ok()) flags.Exit(t.status());
      spec = *t;
    }
  } else {
    const std::string path = flags.Required("config");
    std::ifstream in(path);
    if (!in) flags.Fail("cannot open " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    config_text = ss.str();
  }
  while (!spec.empty() && (spec.back() == '\n' || spec.back() == ' ')) spec.pop_back();
  if (spec.empty()) flags.Fail("--transport is required");
  auto config = control::ParseRootConfigJson(config_text);
  if (!config.ok()) flags.Exit(config.status());
  auto transport = OpenTransport(spec);
  if (!transport.ok()) flags.Exit(transport.status());
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGUSR1, OnSignal);
  auto root =
      root::RootShards::Start(*config, *std::move(transport), threads, absl::Milliseconds(5));
  if (!root.ok()) flags.Exit(root.status());
  std::fprintf(stderr, "grid-root: job %d, %zu contributors, %s\n", config->job_id,
               config->contributors.size(), (*root)->Describe().c_str());
  // The lanes run on their own threads; this one waits for a signal.
  while (!g_stop) {
    absl::SleepFor(absl::Milliseconds(20));
    if (g_dump) {
      g_dump = 0;
      std::fprintf(stderr, "%s\n", StatsJson((*root)->stats()).c_str());
    }
  }
  (*root)->Stop();
  std::printf("%s\n", StatsJson((*root)->stats()).c_str());
  return 0;
}
