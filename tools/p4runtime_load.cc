#include "tools/p4runtime_load.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "p4runtime/client.h"
#include "p4runtime/entries.h"
#include "p4runtime/p4info.h"
#include "p4runtime/publish.h"

namespace grid::tools {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("%s %s: cannot read it", what, path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The switch named `name` at `address` (HOST:PORT[/DEVICE]).
absl::StatusOr<p4rt::SwitchTarget> Target(const std::string& name, const std::string& address,
                                          const P4RuntimeOptions& options) {
  p4rt::SwitchTarget target;
  target.name = name;
  target.address = address;
  if (const size_t slash = address.rfind('/'); slash != std::string::npos) {
    target.address = address.substr(0, slash);
    if (!absl::SimpleAtoi(address.substr(slash + 1), &target.device_id)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--switch=p4runtime: %s for switch %s: DEVICE after / must be a number", address, name));
    }
  }
  target.election_id = options.election_id;
  target.timeout = options.timeout;
  return target;
}

// The program of --p4info and --p4-json, and its index.
// Held by pointer: `program.info` points into it.
struct LoadedProgram {
  LoadedProgram() = default;
  LoadedProgram(const LoadedProgram&) = delete;
  LoadedProgram& operator=(const LoadedProgram&) = delete;
  p4rt::P4InfoIndex info;
  p4rt::Program program;
};

absl::StatusOr<std::unique_ptr<LoadedProgram>> LoadProgram(const P4RuntimeOptions& options) {
  auto p4info = ReadFile(options.p4info, "--p4info");
  if (!p4info.ok()) return p4info.status();
  auto info = p4rt::P4InfoIndex::FromText(*p4info, options.p4info);
  if (!info.ok()) return info.status();
  auto device = ReadFile(options.device_config, "--p4-json");
  if (!device.ok()) return device.status();
  auto out = std::make_unique<LoadedProgram>();
  out->info = *std::move(info);
  out->program = {&out->info, *device, p4rt::ProgramCookie(*p4info, *device)};
  return out;
}

// Each switch's address, by name: the list is either NAME=ADDR for every
// switch, in any order, or ADDR alone for each, in node order.
absl::StatusOr<std::map<std::string, std::string>> AddressesByName(
    const std::map<topology::NodeId, sw::SwitchConfig>& switches,
    const std::vector<std::string>& addresses) {
  std::vector<std::string> names;
  for (const auto& [node, config] : switches) names.push_back(config.name);
  const auto miscount = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--switch=p4runtime: %d addresses for %d switches (%s, in this order, or NAME=ADDR)",
        addresses.size(), names.size(), absl::StrJoin(names, ", ")));
  };
  std::map<std::string, std::string> out;
  const bool by_name = !addresses.empty() && addresses[0].find('=') != std::string::npos;
  if (!by_name && addresses.size() != names.size()) return miscount();
  for (size_t i = 0; i < addresses.size(); ++i) {
    const size_t eq = addresses[i].find('=');
    if ((eq != std::string::npos) != by_name) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--switch=p4runtime: %s: give NAME=ADDR for every switch or ADDR alone for each, "
          "not both",
          addresses[i]));
    }
    const std::string name = by_name ? addresses[i].substr(0, eq) : names[i];
    if (by_name && std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--switch=p4runtime: the plan has no switch %s (it has %s)", name,
                          absl::StrJoin(names, ", ")));
    }
    if (!out.emplace(name, by_name ? addresses[i].substr(eq + 1) : addresses[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--switch=p4runtime: switch %s given twice", name));
    }
  }
  if (out.size() != names.size()) return miscount();
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> LoadP4Runtime(
    const std::map<topology::NodeId, sw::SwitchConfig>& switches, uint16_t job_id,
    const P4RuntimeOptions& options) {
  auto addresses = AddressesByName(switches, options.addresses);
  if (!addresses.ok()) return addresses.status();
  auto program = LoadProgram(options);
  if (!program.ok()) return program.status();
  // Every switch's entities before any is connected to: a program without
  // what they need is refused before anything is touched.
  std::vector<p4rt::SwitchJob> jobs;
  for (const auto& [node, config] : switches) {
    auto entries = sw::ConfigToP4Entries(config);
    if (!entries.ok()) return entries.status();
    auto want = p4rt::EntriesToEntities(*entries, (*program)->info, "switch " + config.name);
    if (!want.ok()) return want.status();
    auto target = Target(config.name, addresses->at(config.name), options);
    if (!target.ok()) return target.status();
    jobs.push_back({*std::move(target), *std::move(want)});
  }
  return p4rt::PublishJob(jobs, (*program)->program, job_id);
}

absl::StatusOr<std::vector<std::string>> DeleteP4RuntimeJobs(const std::set<uint32_t>& jobs,
                                                             const P4RuntimeOptions& options) {
  auto program = LoadProgram(options);
  if (!program.ok()) return program.status();
  std::vector<p4rt::SwitchTarget> targets;
  for (const std::string& address : options.addresses) {
    // Without a plan a switch is named as the list names it (NAME=ADDR),
    // else by its place in the list.
    const size_t eq = address.find('=');
    auto target = eq == std::string::npos
                      ? Target(std::to_string(targets.size() + 1), address, options)
                      : Target(address.substr(0, eq), address.substr(eq + 1), options);
    if (!target.ok()) return target.status();
    targets.push_back(*std::move(target));
  }
  return p4rt::DeleteJobs(targets, (*program)->program, jobs);
}

}  // namespace grid::tools
