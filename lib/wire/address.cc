// Addresses as text (grid/wire.h).
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/wire.h"

namespace grid::wire {

std::string IpToString(uint32_t ip) {
  return absl::StrFormat("%d.%d.%d.%d", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

absl::StatusOr<uint32_t> ParseIp(std::string_view text) {
  const std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), '.');
  uint32_t ip = 0;
  bool ok = parts.size() == 4;
  for (size_t i = 0; ok && i < parts.size(); ++i) {
    uint32_t byte = 0;
    ok = !parts[i].empty() && parts[i].size() <= 3 && absl::SimpleAtoi(parts[i], &byte) &&
         byte <= 255;
    ip = (ip << 8) | byte;
  }
  if (!ok)
    return absl::InvalidArgumentError(
        absl::StrFormat("\"%s\" is not an IPv4 address", std::string(text)));
  return ip;
}

std::string MacToString(const MacAddress& mac) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
                         mac[5]);
}

absl::StatusOr<MacAddress> ParseMac(std::string_view text) {
  const std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ':');
  MacAddress mac{};
  bool ok = parts.size() == 6;
  for (size_t i = 0; ok && i < parts.size(); ++i) {
    uint32_t byte = 0;
    ok = parts[i].size() == 2 && absl::SimpleHexAtoi(parts[i], &byte) && byte <= 255;
    mac[i] = static_cast<uint8_t>(byte);
  }
  if (!ok)
    return absl::InvalidArgumentError(
        absl::StrFormat("\"%s\" is not a MAC address", std::string(text)));
  return mac;
}

}  // namespace grid::wire
