// grid-tables: a plan's switch table entries, one file per switch:
// DIR/<switch>.json (grid-switch/1, for grid-switch) and, with --p4,
// DIR/<switch>.p4rt.json (P4Runtime-style entries for p4/) and
// DIR/<switch>.bmv2.txt (the same entries as simple_switch_CLI commands).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "grid/control.h"
#include "grid/planner.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "tools/flags.h"

namespace {

constexpr char kUsage[] =
    "usage: grid-tables --topology=SPEC|FILE --plan=plan.json --out=DIR\n"
    "                   --token=N [--job-id=1] [--slots=256] [--elements=64]\n"
    "                   [--p4 [--queue-cell-bytes=N]]\n"
    "Writes DIR/<switch>.json for grid-switch (and, with --p4, DIR/<switch>.p4rt.json\n"
    "for the P4 programs and DIR/<switch>.bmv2.txt for simple_switch_CLI)\n"
    "for every switch of the topology. docs/switch.md describes both formats.\n"
    "The P4 entries' congestion threshold counts packets, as BMv2 does; for a Tofino,\n"
    "which counts queue cells, --queue-cell-bytes gives the chip's cell size and the\n"
    "threshold is converted (docs/switch.md, \"Tofino\").\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const tools::Flags flags(
      "grid-tables", argc, argv,
      {"topology", "plan", "out", "job-id", "token", "slots", "elements", "p4", "queue-cell-bytes"},
      kUsage);
  auto topo = topology::LoadTopology(flags.Required("topology"));
  if (!topo.ok()) flags.Exit(topo.status());
  const std::string plan_path = flags.Required("plan");
  std::ifstream in(plan_path);
  if (!in) flags.Fail("cannot open " + plan_path);
  std::stringstream text;
  text << in.rdbuf();
  auto plan = planner::ParsePlanJson(*topo, text.str());
  if (!plan.ok()) flags.Fail(plan_path + ": " + std::string(plan.status().message()));
  host_config::JobParams job;
  job.job_id = static_cast<uint16_t>(flags.Int("job-id", 1, 0, 65535));
  // The hosts' configs must carry the same token, so it is given, not drawn.
  if (!flags.Get("token")) flags.Fail("--token is required: the job's token (1 to 2^32-1)");
  job.token = static_cast<uint32_t>(flags.Int("token", 0, 1, 0xffffffffll));
  job.slots = static_cast<uint32_t>(flags.Int("slots", 256, 1, 65536));
  job.elements =
      static_cast<uint16_t>(flags.Int("elements", wire::kDefaultElements, 1, wire::kMaxElements));
  const bool p4 = flags.Bool("p4");
  const auto cell_bytes = static_cast<uint32_t>(flags.Int("queue-cell-bytes", 0, 0, 65536));
  if (cell_bytes > 0 && !p4) flags.Fail("--queue-cell-bytes is for the P4 entries: add --p4");
  auto configs = control::BuildSwitchConfigs(*topo, *plan, job);
  if (!configs.ok()) flags.Exit(configs.status());
  const std::filesystem::path out = flags.Required("out");
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) flags.Fail("cannot create " + out.string());
  for (const auto& [node, config] : *configs) {
    std::ofstream(out / (config.name + ".json")) << sw::ConfigToJson(config);
    if (p4) {
      auto entries = sw::ConfigToP4Entries(config, cell_bytes);
      if (!entries.ok()) flags.Exit(entries.status());
      std::ofstream(out / (config.name + ".p4rt.json")) << *entries;
      auto commands = sw::P4EntriesToBmv2Commands(*entries);
      if (!commands.ok()) flags.Exit(commands.status());
      std::ofstream(out / (config.name + ".bmv2.txt")) << *commands;
    }
  }
  std::printf("grid-tables: %zu switches written to %s\n", configs->size(), out.string().c_str());
  return 0;
}
