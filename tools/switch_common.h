// What grid-switch's DPDK and kernel-UDP port loops share: flags, signals,
// per-port impairments and rate limits.
#ifndef GRID_TOOLS_SWITCH_COMMON_H_
#define GRID_TOOLS_SWITCH_COMMON_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "grid/store.h"
#include "grid/switch.h"
#include "transport/faults.h"
#include "util/random.h"

namespace grid::tools {

[[noreturn]] inline void Fail(const std::string& message) {
  std::fprintf(stderr, "grid-switch: %s\n", message.c_str());
  std::exit(2);
}

// Per-port impairments, applied on transmit: links of a chosen quality and
// speed, emulated on one machine. The faults are the transports' own
// (transport/faults.h), with the same keys.
struct Impairment {
  transport::LinkFaults faults;
  double gbps = 0;  // 0: no rate limit
};

inline Impairment ParseImpairment(const std::string& text, uint16_t* port) {
  const size_t colon = text.find(':');
  int p = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(text.substr(0, colon), &p) || p < 0 ||
      p > 65535) {
    Fail("--impair=" + text + ": expected PORT:key=value,...");
  }
  *port = static_cast<uint16_t>(p);
  Impairment imp;
  for (absl::string_view kv : absl::StrSplit(text.substr(colon + 1), ',', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    const std::string key(kv.substr(0, eq));
    const std::string value(eq == absl::string_view::npos ? "" : kv.substr(eq + 1));
    if (key == "gbps") {
      if (!absl::SimpleAtod(value, &imp.gbps) || !(imp.gbps >= 0)) {
        Fail("--impair=" + text + ": gbps: expected a rate >= 0, not \"" + value + "\"");
      }
      continue;
    }
    auto fault = transport::ParseFault(key, value, imp.faults);
    if (!fault.ok()) Fail("--impair=" + text + ": " + std::string(fault.status().message()));
    if (!*fault) {
      Fail("--impair=" + text + ": unknown key \"" + key + "\" (loss, dup, reorder, seed, gbps)");
    }
  }
  return imp;
}

// The fault injector of one port's transmit side, its draws apart from every
// other port's and lcore's.
inline transport::FaultInjector PortFaults(const Impairment& imp, uint64_t seed, uint16_t port) {
  transport::LinkFaults faults = imp.faults;
  faults.seed = util::Mix(seed ^ faults.seed, port);
  return transport::FaultInjector(faults);
}

// A rate limiter's burst: 64 KiB, a window of default-size frames from a
// few ranks, so a limit shapes the average rate without cutting bursts.
inline constexpr double kBucketBurstBits = 64 * 1024 * 8;

inline uint64_t SteadyNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A token bucket in bits, refilled from the steady clock.
class TokenBucket {
 public:
  void Configure(double gbps, double burst_bits) {
    rate_bits_per_ns_ = gbps;  // 1 Gbps = 1 bit/ns
    burst_ = burst_bits;
    tokens_ = burst_bits;
    last_ = Now();
  }
  bool limited() const { return rate_bits_per_ns_ > 0; }
  bool Take(double bits) {
    if (!limited()) return true;
    const uint64_t now = Now();
    tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_) * rate_bits_per_ns_);
    last_ = now;
    if (tokens_ < bits) return false;
    tokens_ -= bits;
    return true;
  }

 private:
  static uint64_t Now() { return SteadyNs(); }
  double rate_bits_per_ns_ = 0, burst_ = 0, tokens_ = 0;
  uint64_t last_ = 0;
};

// SIGUSR1 dumps the counters, SIGHUP reloads the table file, SIGINT and
// SIGTERM stop.
inline std::atomic<bool> g_stop{false}, g_dump{false}, g_reload{false};

inline void OnSignal(int sig) {
  if (sig == SIGUSR1) {
    g_dump = true;
  } else if (sig == SIGHUP) {
    g_reload = true;
  } else {
    g_stop = true;
  }
}

inline void InstallSignals() {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGHUP}) std::signal(sig, OnSignal);
}

inline std::string ReadFileOrFail(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The table file's text: "store:SPEC#NAME" reads grid/switch/NAME from a
// rendezvous store (waiting for the controller to publish it), anything else
// is a path.
inline absl::StatusOr<std::string> ReadTables(const std::string& source) {
  if (source.rfind("store:", 0) != 0) return ReadFileOrFail(source);
  const size_t hash = source.rfind('#');
  if (hash == std::string::npos) return absl::InvalidArgumentError(source + ": no #NAME");
  auto store = OpenStore(source.substr(6, hash - 6));
  if (!store.ok()) return store.status();
  return (*store)->Get("grid/switch/" + source.substr(hash + 1), absl::Seconds(60));
}

struct SwitchFlags {
  std::string config_path;
  double capacity_gbps = -1;  // C_s instead of the table's; -1: the table's
  double rate_scale = 1;      // an emulation's scale: C_s times this
  int idle_us = 50;
  std::vector<std::pair<uint16_t, Impairment>> impairments;
  std::vector<std::string> udp_ports;  // BIND@PEER, in port order
};

// The aggregation capacity a pipeline enforces: the table's C_s (or
// --capacity-gbps), scaled by --rate-scale, split over `shares` pipelines.
inline void ApplyCapacity(sw::SwitchConfig& config, const SwitchFlags& flags, unsigned shares) {
  const double gbps = flags.capacity_gbps >= 0 ? flags.capacity_gbps : config.capacity_gbps;
  config.capacity_gbps = gbps * flags.rate_scale / std::max(1u, shares);
}

// Grants a pipeline the credit of its aggregation capacity as time passes.
class CapacityClock {
 public:
  void Grant(sw::Pipeline& pipeline) {
    const uint64_t now = SteadyNs();
    // 1 Gbps is 1 bit per ns.
    if (last_ != 0)
      pipeline.AddCapacityCredit(static_cast<double>(now - last_) *
                                 pipeline.config().capacity_gbps);
    last_ = now;
  }

 private:
  uint64_t last_ = 0;
};

// SIGHUP: the table file (or the store's entry) again, into a running
// pipeline.
inline void Reload(sw::Pipeline& pipeline, const SwitchFlags& flags, unsigned shares) {
  const std::string& source = flags.config_path;
  auto text = ReadTables(source);
  auto reloaded = text.ok() ? sw::ParseConfigJson(*text) : text.status();
  if (reloaded.ok()) ApplyCapacity(*reloaded, flags, shares);
  absl::Status s = reloaded.ok() ? pipeline.Reload(*std::move(reloaded)) : reloaded.status();
  std::fprintf(stderr, "grid-switch: reload %s: %s\n", source.c_str(), s.ToString().c_str());
}

inline sw::SwitchConfig LoadConfig(const std::string& source) {
  auto text = ReadTables(source);
  if (!text.ok()) Fail(source + ": " + std::string(text.status().message()));
  auto config = sw::ParseConfigJson(*text);
  if (!config.ok()) Fail(source + ": " + std::string(config.status().message()));
  return *std::move(config);
}

// grid-switch --help (before the EAL, which would print only its own).
inline constexpr char kSwitchUsage[] =
    "usage: grid-switch [EAL arguments] -- (--config=FILE | --store=SPEC --name=SWITCH)\n"
    "                   [--impair=PORT:loss=P,dup=P,reorder=P,gbps=G]...\n"
    "                   [--capacity-gbps=C] [--rate-scale=S] [--idle-us=50]\n"
    "       grid-switch --udp-port=BIND@PEER... (--config=FILE | --store=SPEC --name=SWITCH)\n"
    "                   [the same flags]\n"
    "The GRID switch pipeline on DPDK ports (any PMD; port i of the tables is DPDK port i)\n"
    "or, with --udp-port, on kernel UDP sockets (port i is the i-th --udp-port). Its tables\n"
    "come from a file or a store that grid-controller filled (grid/switch/SWITCH);\n"
    "grid-controller also publishes each switch's port arguments (grid/switch-ports/SWITCH).\n"
    "--capacity-gbps overrides the tables' aggregation capacity C_s, --rate-scale scales it\n"
    "and every --impair rate (an emulation's factor), --idle-us is the nap of an idle poll\n"
    "loop without a doorbell (0: busy polling). Signals: SIGUSR1 prints the counters (JSON,\n"
    "stderr), SIGHUP reloads the tables, SIGINT/SIGTERM stop and print the final counters.\n"
    "docs/switch.md has the rest.\n";

// True when the arguments ask for the usage.
inline bool WantsSwitchUsage(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

// The flags after the EAL arguments (DPDK mode) or all of them (UDP mode).
inline SwitchFlags ParseSwitchFlags(int argc, char** argv) {
  SwitchFlags f;
  std::string store, name;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      const std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) != 0) return std::nullopt;
      return arg.substr(prefix.size());
    };
    if (auto v = value("--config")) {
      f.config_path = *v;
    } else if (auto vs = value("--store")) {
      store = *vs;
    } else if (auto vn = value("--name")) {
      name = *vn;
    } else if (auto v1 = value("--udp-port")) {
      f.udp_ports.push_back(*v1);
    } else if (auto v2 = value("--impair")) {
      uint16_t port = 0;
      Impairment imp = ParseImpairment(*v2, &port);
      f.impairments.emplace_back(port, imp);
    } else if (auto v3 = value("--capacity-gbps")) {
      if (!absl::SimpleAtod(*v3, &f.capacity_gbps) || f.capacity_gbps < 0)
        Fail("--capacity-gbps: expected a number >= 0");
    } else if (auto v5 = value("--rate-scale")) {
      if (!absl::SimpleAtod(*v5, &f.rate_scale) || !(f.rate_scale > 0))
        Fail("--rate-scale: expected a number > 0");
    } else if (auto v4 = value("--idle-us")) {
      if (!absl::SimpleAtoi(*v4, &f.idle_us) || f.idle_us < 0) {
        Fail("--idle-us: expected a whole number >= 0");
      }
    } else if (arg != "--") {
      Fail("unknown argument \"" + arg +
           "\" (--config, --store, --name, --udp-port, --impair, --capacity-gbps, --rate-scale, "
           "--idle-us)");
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

// The UDP port mode (switch_udp.cc): argv without EAL arguments.
int RunUdpSwitch(int argc, char** argv);

}  // namespace grid::tools

#endif  // GRID_TOOLS_SWITCH_COMMON_H_
