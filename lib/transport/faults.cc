#include "transport/faults.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

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

}  // namespace grid::transport
