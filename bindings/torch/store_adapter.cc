#include "store_adapter.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace grid::torch_backend {

absl::Status C10dStore::Set(std::string_view key, std::string_view value) {
  try {
    store_->set(std::string(key), std::vector<uint8_t>(value.begin(), value.end()));
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrFormat("c10d store: set %s: %s", key, e.what()));
  }
}

absl::StatusOr<std::string> C10dStore::Get(std::string_view key, absl::Duration timeout) {
  const std::string k(key);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Milliseconds(1);
  try {
    for (;;) {
      if (store_->check({k})) {
        const std::vector<uint8_t> v = store_->get(k);
        return std::string(v.begin(), v.end());
      }
      const absl::Time now = absl::Now();
      if (now >= deadline) break;
      std::this_thread::sleep_for(absl::ToChronoNanoseconds(std::min(pause, deadline - now)));
      pause = std::min(2 * pause, absl::Milliseconds(50));
    }
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrFormat("c10d store: get %s: %s", key, e.what()));
  }
  return absl::DeadlineExceededError(
      absl::StrFormat("c10d store: key %s not set within %s", key, absl::FormatDuration(timeout)));
}

absl::StatusOr<std::string> OverlayStore::Get(std::string_view key, absl::Duration timeout) {
  auto own = ranks_->Get(key, absl::ZeroDuration());
  if (own.ok() || !absl::IsDeadlineExceeded(own.status())) return own;
  return fabric_->Get(key, timeout);
}

}  // namespace grid::torch_backend
