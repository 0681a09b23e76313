// The udp: and udp-link: transport specs (docs/worker.md, "Transports").
#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/wire.h"
#include "transport/udp.h"

namespace grid::transport {
namespace {

absl::StatusOr<sockaddr_in> ParseHostPort(std::string_view text) {
  const size_t colon = text.rfind(':');
  uint32_t port = 0;
  if (colon == std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(text.data() + colon + 1, text.size() - colon - 1),
                        &port) ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat("\"%s\" is not HOST:PORT", text));
  }
  auto ip = wire::ParseIp(text.substr(0, colon));
  if (!ip.ok()) return ip.status();
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(*ip);
  return a;
}

}  // namespace

absl::StatusOr<UdpSpec> ParseUdpSpec(std::string_view spec) {
  UdpSpec out;
  std::string_view rest;
  if (spec.substr(0, 9) == "udp-link:") {
    out.link = true;
    rest = spec.substr(9);
  } else if (spec.substr(0, 4) == "udp:") {
    rest = spec.substr(4);
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("transport \"%s\": expected udp:... or udp-link:...", spec));
  }
  bool have_bind = false, have_peer = false;
  for (absl::string_view kv :
       absl::StrSplit(absl::string_view(rest.data(), rest.size()), ',', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    const std::string key(kv.substr(0, eq));
    const std::string value(eq == absl::string_view::npos ? "" : kv.substr(eq + 1));
    auto bad = [&](const absl::Status& s) {
      return absl::InvalidArgumentError(
          absl::StrFormat("transport \"%s\": %s: %s", spec, key, s.message()));
    };
    if (key == "bind" || key == "peer") {
      auto a = ParseHostPort(value);
      if (!a.ok()) return bad(a.status());
      (key == "bind" ? out.bind : out.peer) = *a;
      (key == "bind" ? have_bind : have_peer) = true;
    } else if (auto fault = ParseFault(key, value, out.faults); !fault.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("transport \"%s\": %s", spec, fault.status().message()));
    } else if (*fault) {
      // loss=, dup=, reorder=, seed=
    } else if (key == "route" && !out.link) {
      const size_t at = value.find('@');
      auto ip = wire::ParseIp(value.substr(0, at == std::string::npos ? value.size() : at));
      if (at == std::string::npos || !ip.ok()) {
        return bad(absl::InvalidArgumentError("expected IP@HOST:PORT"));
      }
      auto a = ParseHostPort(value.substr(at + 1));
      if (!a.ok()) return bad(a.status());
      out.routes[*ip] = *a;
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("transport \"%s\": unknown key \"%s\"", spec, key));
    }
  }
  if (!have_bind) {
    return absl::InvalidArgumentError(absl::StrFormat("transport \"%s\": bind is required", spec));
  }
  if (out.link && !have_peer) {
    return absl::InvalidArgumentError(
        absl::StrFormat("transport \"%s\": udp-link needs peer", spec));
  }
  return out;
}

}  // namespace grid::transport
