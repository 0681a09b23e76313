// grid-attack: adversarial traffic into a running job on an emulated fabric
// (docs/security.md, "Tested"). It plays a host the job does not use,
// taking that host's link from the store that grid-controller filled
// (grid/host-transport/<host>), and sends the classes of tools/attacks.h in
// turn, at a fixed rate, for a while or a number of frames. With
// --from-elsewhere it sends from a socket of its own instead, as a stranger
// that is not the link's other end. Prints what it sent, as JSON.
//
//   grid-attack --store=file:DIR --topology=SPEC --host=W8 [--classes=all|a,b,...]
//               [--pps=1000] [--seconds=5 | --count=N] [--from-elsewhere]
#include <csignal>
#include <cstdio>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grid/control.h"
#include "grid/store.h"
#include "grid/topology.h"
#include "grid/transport.h"
#include "tools/attacks.h"
#include "tools/flags.h"

namespace {

using namespace grid;

constexpr char kUsage[] =
    "usage: grid-attack --store=SPEC --topology=SPEC|FILE --host=NAME [--classes=all|a,b,...]\n"
    "                   [--pps=1000] [--seconds=5 | --count=N] [--from-elsewhere]\n"
    "Sends adversarial GRID traffic into a running job from a host the job does not use.\n";

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

template <typename T>
T Check(absl::StatusOr<T> value, const tools::Flags& flags) {
  if (!value.ok()) flags.Exit(value.status());
  return *std::move(value);
}

// The job as the store has it: every worker's config, the root's, and every
// switch's tables.
struct Published {
  std::vector<host_config::WorkerConfig> workers;
  host_config::RootConfig root;
  std::map<topology::NodeId, sw::SwitchConfig> switches;
};

Published Read(Store& store, const topology::Topology& topo, const tools::Flags& flags) {
  const absl::Duration wait = absl::Seconds(30);
  Published p;
  p.root = Check(host_config::ParseRootConfigJson(Check(store.Get("grid/root", wait), flags)), flags);
  for (int r = 0; r < p.root.world; ++r) {
    p.workers.push_back(Check(host_config::ParseWorkerConfigJson(Check(
                                  store.Get(absl::StrFormat("grid/worker/%d", r), wait), flags)),
                              flags));
  }
  for (topology::NodeId s : topo.Switches()) {
    p.switches[s] = Check(
        sw::ParseConfigJson(Check(store.Get("grid/switch/" + topo.node(s).name, wait), flags)),
        flags);
  }
  return p;
}

std::vector<tools::Attack> Classes(const std::string& text, const tools::Flags& flags) {
  std::vector<tools::Attack> out;
  if (text == "all") {
    for (int i = 0; i < tools::kNumAttacks; ++i) out.push_back(static_cast<tools::Attack>(i));
    return out;
  }
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    out.push_back(Check(tools::ParseAttack(std::string_view(name.data(), name.size())), flags));
  }
  return out;
}

// The host's link spec, or, from elsewhere, a socket of our own aimed at the
// same switch port.
std::string LinkSpec(Store& store, const std::string& host, bool elsewhere,
                     const tools::Flags& flags) {
  std::string spec = Check(store.Get("grid/host-transport/" + host, absl::Seconds(30)), flags);
  if (!elsewhere) return spec;
  const size_t bind = spec.find("bind="), comma = spec.find(',', bind);
  const std::string addr = spec.substr(bind + 5, comma - bind - 5);
  return "udp-link:bind=" + addr.substr(0, addr.rfind(':')) + ":0" + spec.substr(comma);
}

}  // namespace

int main(int argc, char** argv) {
  const tools::Flags flags(
      "grid-attack", argc, argv,
      {"store", "topology", "host", "classes", "pps", "seconds", "count", "from-elsewhere"},
      kUsage);
  const topology::Topology topo = Check(topology::LoadTopology(flags.Required("topology")), flags);
  const std::string host = flags.Required("host");
  const auto node = topo.Find(host);
  if (!node) flags.Fail("--host: no node \"" + host + "\" in the topology");
  auto store = Check(OpenStore(flags.Required("store")), flags);
  const Published job = Read(*store, topo, flags);
  const tools::AttackSetup setup =
      Check(tools::MakeAttackSetup(topo, *node, job.workers, job.root, job.switches), flags);
  auto transport =
      Check(OpenTransport(LinkSpec(*store, host, flags.Bool("from-elsewhere"), flags)), flags);
  const std::vector<tools::Attack> classes = Classes(flags.String("classes", "all"), flags);
  const double pps = static_cast<double>(flags.Int("pps", 1000, 1, 10000000));
  const int64_t count = flags.Int("count", 0, 0, int64_t{1} << 40);
  const absl::Duration length = absl::Seconds(flags.Int("seconds", 5, 0, 86400));

  std::vector<uint64_t> sent(tools::kNumAttacks, 0);
  std::signal(SIGINT, OnSignal);  // stop early, still reporting what was sent
  std::signal(SIGTERM, OnSignal);
  const absl::Time start = absl::Now();
  uint64_t i = 0;
  std::vector<std::vector<uint8_t>> frames;
  std::vector<absl::Span<const uint8_t>> spans;
  while (!g_stop && (count > 0 ? i < static_cast<uint64_t>(count) : absl::Now() - start < length)) {
    // Whatever the schedule owes by now, in batches of up to 64.
    const auto due = static_cast<uint64_t>(absl::ToDoubleSeconds(absl::Now() - start) * pps) + 1;
    frames.clear();
    while (i < due && frames.size() < 64 && (count == 0 || i < static_cast<uint64_t>(count))) {
      const tools::Attack a = classes[i % classes.size()];
      frames.push_back(tools::AttackFrame(a, setup, i / classes.size()));
      ++sent[static_cast<int>(a)];
      ++i;
    }
    if (frames.empty()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    spans.assign(frames.begin(), frames.end());
    transport->Send(spans);
  }
  std::vector<std::string> parts;
  for (tools::Attack a : classes) {
    parts.push_back(absl::StrFormat("\"%s\":%d", tools::AttackName(a), sent[static_cast<int>(a)]));
  }
  std::printf(
      "{\"host\":\"%s\",\"victim_rank\":%d,\"frames\":%llu,\"seconds\":%.3f,\"sent\":{%s}}\n",
      host.c_str(), setup.victim.rank, static_cast<unsigned long long>(i),
      absl::ToDoubleSeconds(absl::Now() - start), absl::StrJoin(parts, ",").c_str());
  return 0;
}
