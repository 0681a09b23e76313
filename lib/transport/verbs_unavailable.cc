// The verbs transport where libibverbs was not found at build time.
#include "absl/strings/str_format.h"
#include "transport/verbs.h"

namespace grid::transport {

absl::StatusOr<std::unique_ptr<Transport>> OpenVerbs(std::string_view spec) {
  return absl::UnimplementedError(absl::StrFormat(
      "transport \"%s\": this build has no verbs transport (libibverbs-dev was not found)", spec));
}

}  // namespace grid::transport
