#include "switch/runtime.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "util/random.h"

namespace grid::sw {

absl::StatusOr<std::pair<uint16_t, PortShaping>> ParsePortShaping(std::string_view text) {
  const absl::string_view t(text.data(), text.size());
  const size_t colon = t.find(':');
  int port = -1;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(t.substr(0, colon), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("\"%s\": expected PORT:key=value,... (a port from 0 to 65535)", t));
  }
  PortShaping shaping;
  for (absl::string_view kv : absl::StrSplit(t.substr(colon + 1), ',', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    const absl::string_view key = kv.substr(0, eq);
    const absl::string_view value = eq == absl::string_view::npos ? "" : kv.substr(eq + 1);
    if (key == "gbps") {
      if (!absl::SimpleAtod(value, &shaping.gbps) || !(shaping.gbps >= 0)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("\"%s\": gbps: expected a rate >= 0, not \"%s\"", t, value));
      }
      continue;
    }
    auto known = transport::ParseFault(std::string_view(key.data(), key.size()),
                                       std::string_view(value.data(), value.size()),
                                       shaping.faults);
    if (!known.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("\"%s\": %s", t, known.status().message()));
    }
    if (!*known) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "\"%s\": unknown key \"%s\" (loss, dup, reorder, seed, gbps)", t, key));
    }
  }
  return std::make_pair(static_cast<uint16_t>(port), shaping);
}

double CapacityShare(double table_gbps, double override_gbps, double scale, unsigned shares) {
  const double gbps = override_gbps >= 0 ? override_gbps : table_gbps;
  return gbps * scale / std::max(1u, shares);
}

uint64_t PortSeed(uint64_t seed, uint64_t faults_seed, uint16_t port) {
  return util::Mix(seed ^ faults_seed, port);
}

uint32_t OwnerLane(absl::Span<const uint8_t> frame, uint32_t lanes) {
  if (lanes <= 1 || frame.size() < wire::kPayloadOffset) return 0;
  uint16_t dst_port;
  std::memcpy(&dst_port, frame.data() + wire::kUdpOffset + offsetof(wire::UdpHeader, dst_port),
              sizeof(dst_port));
  dst_port = wire::NetToHost16(dst_port);
  if (dst_port < wire::kUdpPortBase || dst_port >= wire::kUdpPortBase + wire::kUdpPortCount) {
    return 0;
  }
  const int slot = wire::PeekSlot(frame);
  return slot < 0 ? 0 : static_cast<uint32_t>(slot) % lanes;
}

std::string RuntimeReportJson(const std::string& name, unsigned lanes, const PortDrops& drops,
                              double capacity_gbps, const Counters& counters,
                              std::optional<uint64_t> foreign) {
  const std::string foreign_field =
      foreign.has_value()
          ? absl::StrFormat("\"foreign_drops\":%d,", static_cast<unsigned long long>(*foreign))
          : "";
  return absl::StrFormat(
      "{\"switch\":\"%s\",\"lcores\":%d,\"impaired_drops\":%d,\"queue_drops\":%d,"
      "\"capacity_gbps\":%g,%s\"counters\":%s}",
      name, lanes, static_cast<unsigned long long>(drops.impaired),
      static_cast<unsigned long long>(drops.queue), capacity_gbps, foreign_field,
      CountersToJson(counters));
}

}  // namespace grid::sw
