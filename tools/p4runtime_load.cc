#include "tools/p4runtime_load.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "p4runtime/client.h"
#include "p4runtime/entries.h"
#include "p4runtime/p4info.h"

namespace grid::tools {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("%s %s: cannot read it", what, path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One switch: its entities first (so a program without what they need is
// refused before this switch is touched), then the pipeline, the write and
// the read-back.
absl::StatusOr<std::string> LoadOne(const sw::SwitchConfig& config, const std::string& address,
                                    const p4rt::P4InfoIndex& info, const std::string& device,
                                    const P4RuntimeOptions& options) {
  auto entries = sw::ConfigToP4Entries(config);
  if (!entries.ok()) return entries.status();
  auto entities = p4rt::EntriesToEntities(*entries, info, "switch " + config.name);
  if (!entities.ok()) return entities.status();
  p4rt::SwitchTarget target;
  target.name = config.name;
  target.address = address;
  if (const size_t slash = address.rfind('/'); slash != std::string::npos) {
    target.address = address.substr(0, slash);
    if (!absl::SimpleAtoi(address.substr(slash + 1), &target.device_id)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--switch=p4runtime: %s for switch %s: DEVICE after / must be a number",
                          address, config.name));
    }
  }
  target.election_id = options.election_id;
  target.timeout = options.timeout;
  auto sw = p4rt::P4RuntimeSwitch::Connect(target);
  if (!sw.ok()) return sw.status();
  if (absl::Status s = (*sw)->SetPipeline(info, device); !s.ok()) return s;
  if (absl::Status s = (*sw)->Write(p4rt::InstallUpdates(*entities), info); !s.ok()) return s;
  auto held = (*sw)->ReadAll(info);
  if (!held.ok()) return held.status();
  const std::string who = absl::StrFormat("switch %s at %s", config.name, target.address);
  if (absl::Status s = p4rt::VerifyReadBack(*entities, *held, info, who); !s.ok()) return s;
  return absl::StrFormat(
      "%s: %d entries, %d default actions, %d multicast groups written and "
      "read back",
      who, entities->entries.size(), entities->defaults.size(), entities->groups.size());
}

}  // namespace

const bool kHaveP4Runtime = true;

absl::StatusOr<std::vector<std::string>> LoadP4Runtime(
    const std::map<topology::NodeId, sw::SwitchConfig>& switches, const P4RuntimeOptions& options) {
  if (options.addresses.size() != switches.size()) {
    std::vector<std::string> names;
    for (const auto& [node, config] : switches) names.push_back(config.name);
    return absl::InvalidArgumentError(
        absl::StrFormat("--switch=p4runtime: %d addresses for %d switches (%s, in this order)",
                        options.addresses.size(), switches.size(), absl::StrJoin(names, ", ")));
  }
  auto p4info = ReadFile(options.p4info, "--p4info");
  if (!p4info.ok()) return p4info.status();
  auto info = p4rt::P4InfoIndex::FromText(*p4info, options.p4info);
  if (!info.ok()) return info.status();
  auto device = ReadFile(options.device_config, "--p4-json");
  if (!device.ok()) return device.status();
  std::vector<std::string> done, lines;
  size_t i = 0;
  for (const auto& [node, config] : switches) {
    auto line = LoadOne(config, options.addresses[i++], *info, *device, options);
    if (!line.ok()) {
      const std::string held = done.empty()
                                   ? "no switch holds the job yet"
                                   : absl::StrFormat("%s hold the job", absl::StrJoin(done, ", "));
      return absl::Status(line.status().code(),
                          absl::StrFormat("%s (%s; the switches after %s are untouched)",
                                          line.status().message(), held, config.name));
    }
    done.push_back(config.name);
    lines.push_back(*std::move(line));
  }
  return lines;
}

}  // namespace grid::tools
