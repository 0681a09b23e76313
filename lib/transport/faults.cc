#include "transport/faults.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace grid::transport {

std::string LinkFaults::Describe() const {
  return absl::StrFormat("loss %g, dup %g, reorder %g", loss, duplicate, reorder);
}

absl::StatusOr<bool> ParseFault(std::string_view key, std::string_view value, LinkFaults& faults) {
  const absl::string_view v(value.data(), value.size());
  if (key == "seed") {
    if (!absl::SimpleAtoi(v, &faults.seed)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("seed: expected a whole number in [0, 2^64), not \"%s\"", v));
    }
    return true;
  }
  double* target = key == "loss"      ? &faults.loss
                   : key == "dup"     ? &faults.duplicate
                   : key == "reorder" ? &faults.reorder
                                      : nullptr;
  if (target == nullptr) return false;
  double p = 0;
  if (!absl::SimpleAtod(v, &p) || !(p >= 0 && p <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected a probability in [0, 1], not \"%s\"", std::string(key), v));
  }
  *target = p;
  return true;
}

absl::StatusOr<LinkFaults> ParseLinkFaults(std::string_view spec, bool allow_seed) {
  LinkFaults faults;
  for (absl::string_view kv :
       absl::StrSplit(absl::string_view(spec.data(), spec.size()), ',', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    const absl::string_view key = kv.substr(0, eq);
    const absl::string_view value = eq == absl::string_view::npos ? "" : kv.substr(eq + 1);
    auto known = eq == absl::string_view::npos || (!allow_seed && key == "seed")
                     ? absl::StatusOr<bool>(false)
                     : ParseFault(std::string_view(key.data(), key.size()),
                                  std::string_view(value.data(), value.size()), faults);
    if (!known.ok()) return known.status();
    if (!*known) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "\"%s\": expected loss=P, dup=P or reorder=P%s", kv, allow_seed ? " or seed=N" : ""));
    }
  }
  return faults;
}

}  // namespace grid::transport
