#include "tools/switch_flags.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "grid/options.h"
#include "grid/store.h"
#include "store/wait.h"

namespace grid::tools {

void Fail(const std::string& message, int status) {
  std::fprintf(stderr, "grid-switch: %s\n", message.c_str());
  std::exit(status);
}

std::atomic<bool> g_stop{false}, g_dump{false}, g_reload{false};

namespace {

void OnSignal(int sig) {
  if (sig == SIGUSR1) {
    g_dump = true;
  } else if (sig == SIGHUP) {
    g_reload = true;
  } else {
    g_stop = true;
  }
}

// The table file's text: "store:SPEC#NAME" reads grid/switch/NAME from a
// rendezvous store (waiting for the controller to publish it), anything else
// is a path.
absl::StatusOr<std::string> ReadTables(const std::string& source) {
  if (source.rfind("store:", 0) != 0) {
    std::ifstream in(source);
    if (!in) return absl::NotFoundError("cannot open " + source);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  const size_t hash = source.rfind('#');
  if (hash == std::string::npos) return absl::InvalidArgumentError(source + ": no #NAME");
  auto store = OpenStore(source.substr(6, hash - 6));
  if (!store.ok()) return store.status();
  const std::string name = source.substr(hash + 1);
  store::KeyWait wait;
  wait.key = "grid/switch/" + name;
  wait.who = "grid-switch " + name;
  wait.what = "its tables from grid-controller";
  wait.timeout = absl::Seconds(60);
  wait.notice = NoticeToStderr;
  return store::AwaitKey(**store, wait);
}

absl::StatusOr<sw::SwitchConfig> ReadConfig(const SwitchFlags& flags, unsigned shares) {
  auto text = ReadTables(flags.config_path);
  if (!text.ok()) return text.status();
  auto config = sw::ParseConfigJson(*text);
  if (!config.ok()) return config.status();
  config->capacity_gbps =
      sw::CapacityShare(config->capacity_gbps, flags.capacity_gbps, flags.rate_scale, shares);
  return config;
}

// One "--NAME=value" flag's value, if `arg` is that flag.
std::optional<std::string> Value(const std::string& arg, const char* flag) {
  const std::string prefix = std::string(flag) + "=";
  if (arg.rfind(prefix, 0) != 0) return std::nullopt;
  return arg.substr(prefix.size());
}

double Number(const std::string& text, const char* flag, double lo, bool open_lo) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !(open_lo ? v > lo : v >= lo)) {
    Fail(std::string(flag) + ": expected a number " + (open_lo ? "> " : ">= ") +
         std::to_string(static_cast<int>(lo)) + ", not \"" + text + "\"");
  }
  return v;
}

}  // namespace

void InstallSignals() {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGHUP}) std::signal(sig, OnSignal);
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char kSwitchUsage[] =
    "usage: grid-switch [EAL arguments] -- (--config=FILE | --store=SPEC --name=SWITCH)\n"
    "                   [--impair=PORT:loss=P,dup=P,reorder=P,gbps=G]...\n"
    "                   [--capacity-gbps=C] [--rate-scale=S] [--idle-us=50]\n"
    "                   [--metrics=ADDR:PORT]\n"
    "       grid-switch --udp-port=BIND@PEER... (--config=FILE | --store=SPEC --name=SWITCH)\n"
    "                   [the same flags]\n"
    "The GRID switch pipeline on DPDK ports (any PMD; port i of the tables is DPDK port i)\n"
    "or, with --udp-port, on kernel UDP sockets (port i is the i-th --udp-port). Its tables\n"
    "come from a file or a store that grid-controller filled (grid/switch/SWITCH);\n"
    "grid-controller also publishes each switch's port arguments (grid/switch-ports/SWITCH).\n"
    "--capacity-gbps overrides the tables' aggregation capacity C_s, --rate-scale scales it\n"
    "(an emulation's factor; --impair rates are taken as given), --idle-us is the nap of an\n"
    "idle poll loop without a doorbell (0: busy polling), --metrics serves the counters to\n"
    "Prometheus at http://ADDR:PORT/metrics (PORT 0: any free one, said on stderr).\n"
    "Signals: SIGUSR1 prints the counters (JSON, stderr), SIGHUP reloads the tables,\n"
    "SIGINT/SIGTERM stop and print the final counters.\n"
    "docs/switch.md has the rest.\n";

bool WantsSwitchUsage(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

SwitchFlags ParseSwitchFlags(int argc, char** argv) {
  SwitchFlags f;
  std::string& store = f.store;
  std::string& name = f.name;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (auto v = Value(arg, "--config")) {
      f.config_path = *v;
    } else if (auto vs = Value(arg, "--store")) {
      store = *vs;
    } else if (auto vn = Value(arg, "--name")) {
      name = *vn;
    } else if (auto vu = Value(arg, "--udp-port")) {
      f.udp_ports.push_back(*vu);
    } else if (auto vi = Value(arg, "--impair")) {
      auto shaping = sw::ParsePortShaping(*vi);
      if (!shaping.ok()) Fail("--impair=" + std::string(shaping.status().message()));
      f.impairments.push_back(*shaping);
    } else if (auto vc = Value(arg, "--capacity-gbps")) {
      f.capacity_gbps = Number(*vc, "--capacity-gbps", 0, false);
    } else if (auto vr = Value(arg, "--rate-scale")) {
      f.rate_scale = Number(*vr, "--rate-scale", 0, true);
    } else if (auto vd = Value(arg, "--idle-us")) {
      if (!absl::SimpleAtoi(*vd, &f.idle_us) || f.idle_us < 0) {
        Fail("--idle-us: expected a whole number >= 0");
      }
    } else if (auto vm = Value(arg, "--metrics")) {
      f.metrics = *vm;
    } else if (arg != "--") {
      Fail("unknown argument \"" + arg +
           "\" (--config, --store, --name, --udp-port, --impair, --capacity-gbps, --rate-scale, "
           "--idle-us, --metrics)");
    }
  }
  if (!store.empty() || !name.empty()) {
    if (store.empty() || name.empty() || !f.config_path.empty()) {
      Fail("--store=SPEC and --name=SWITCH go together, instead of --config");
    }
    f.config_path = "store:" + store + "#" + name;
  }
  if (f.config_path.empty()) Fail("--config=FILE (or --store=SPEC --name=SWITCH) is required");
  return f;
}

sw::SwitchConfig LoadConfig(const SwitchFlags& flags, unsigned shares) {
  auto config = ReadConfig(flags, shares);
  if (!config.ok()) Fail(flags.config_path + ": " + std::string(config.status().message()));
  if (absl::Status s = sw::ValidateConfig(*config); !s.ok()) Fail(std::string(s.message()));
  return *std::move(config);
}

std::unique_ptr<node::NodeReporter> StartReporter(const SwitchFlags& flags,
                                                  std::vector<const sw::Pipeline*> pipelines) {
  if (flags.store.empty()) return nullptr;
  // A connection of its own: the reporter writes from its own thread.
  auto store = OpenStore(flags.store);
  if (!store.ok()) Fail("--store=" + flags.store + ": " + std::string(store.status().message()), 1);
  return std::make_unique<node::NodeReporter>(
      *std::move(store), flags.name, node::NodeKind::kSwitch, [pipelines = std::move(pipelines)] {
        std::vector<std::vector<node::JobDrops>> parts;
        for (const sw::Pipeline* p : pipelines) parts.push_back(p->job_drops().Snapshot());
        return node::MergeDrops(parts);
      });
}

void Reload(sw::Pipeline& pipeline, const SwitchFlags& flags, unsigned shares) {
  auto reloaded = ReadConfig(flags, shares);
  absl::Status s = reloaded.ok() ? pipeline.Reload(*std::move(reloaded)) : reloaded.status();
  std::fprintf(stderr, "grid-switch: reload %s: %s\n", flags.config_path.c_str(),
               s.ToString().c_str());
}

std::vector<sw::PortShaping> PortShapings(const SwitchFlags& flags, uint16_t ports,
                                          unsigned shares) {
  std::vector<sw::PortShaping> out(ports);
  for (const auto& [p, shaping] : flags.impairments) {
    if (p >= ports) Fail("--impair: port " + std::to_string(p) + " does not exist");
    out[p] = shaping;
    // Rates come already scaled (grid-controller --emulation-scale writes
    // them so); --rate-scale is C_s's.
    out[p].gbps = shaping.gbps / std::max(1u, shares);
  }
  return out;
}

}  // namespace grid::tools
