// TransportRegistry: transports by scheme, and the built-in ones.
#include <algorithm>
#include <cctype>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grid/transport.h"
#include "transport/dpdk.h"
#include "transport/udp.h"
#include "transport/verbs.h"

namespace grid {
namespace {

absl::StatusOr<std::unique_ptr<Transport>> OpenUdpSpec(std::string_view spec) {
  auto parsed = transport::ParseUdpSpec(spec);
  if (!parsed.ok()) return parsed.status();
  return transport::OpenUdp(*parsed);
}

}  // namespace

TransportRegistry TransportRegistry::WithBuiltins() {
  TransportRegistry r;
  // Registering fixed, distinct schemes cannot fail.
  (void)r.Register("udp", OpenUdpSpec);
  (void)r.Register("udp-link", OpenUdpSpec);
  (void)r.Register("dpdk", transport::OpenDpdk);
  (void)r.Register("verbs", transport::OpenVerbs);
  return r;
}

absl::Status TransportRegistry::Register(std::string scheme, TransportFactory factory) {
  const bool well_formed =
      !scheme.empty() && std::all_of(scheme.begin(), scheme.end(), [](unsigned char c) {
        return std::isalnum(c) != 0 || c == '-';
      });
  if (!well_formed) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "transport scheme \"%s\": letters, digits and '-' only, not empty", scheme));
  }
  if (!factory) {
    return absl::InvalidArgumentError(
        absl::StrFormat("transport scheme \"%s\": no factory", scheme));
  }
  if (factories_.count(scheme) > 0) {
    return absl::AlreadyExistsError(
        absl::StrFormat("transport scheme \"%s\" is already registered", scheme));
  }
  factories_.emplace(std::move(scheme), std::move(factory));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Transport>> TransportRegistry::Open(std::string_view spec) const {
  const size_t colon = spec.find(':');
  const std::string_view scheme = spec.substr(0, colon);
  auto it = colon == std::string_view::npos ? factories_.end() : factories_.find(scheme);
  if (it == factories_.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("transport \"%s\": unknown kind \"%s\" (known: %s)", spec, scheme,
                        absl::StrJoin(Schemes(), ", ")));
  }
  auto t = it->second(spec);
  if (t.ok() && *t == nullptr) {
    return absl::InternalError(
        absl::StrFormat("transport \"%s\": the \"%s\" factory returned nothing", spec, scheme));
  }
  return t;
}

std::vector<std::string> TransportRegistry::Schemes() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

absl::StatusOr<std::unique_ptr<Transport>> OpenTransport(std::string_view spec) {
  return TransportRegistry::WithBuiltins().Open(spec);
}

}  // namespace grid
