#include "store/wait.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"

namespace grid::store {
namespace {

constexpr char kPlanningKey[] = "grid/planning";

// The directory of a file store, from its Describe(); empty for others.
std::string FileStoreDirectory(const Store& store) {
  const std::string d = store.Describe();
  return absl::StartsWith(d, "file:") ? d.substr(5) : std::string();
}

bool Exists(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec);
}

}  // namespace

absl::StatusOr<std::string> AwaitKey(Store& store, const KeyWait& wait) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + wait.timeout;
  const std::string dir = FileStoreDirectory(store);
  bool told = false;
  while (true) {
    const absl::Duration slice =
        std::clamp(deadline - absl::Now(), absl::ZeroDuration(), wait.slice);
    absl::StatusOr<std::string> value = store.Get(wait.key, slice);
    if (value.ok() || !absl::IsDeadlineExceeded(value.status())) return value;
    if (wait.give_up) {
      if (absl::Status s = wait.give_up(); !s.ok()) return s;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s: waited %s for %s (key \"%s\" in store %s): %s", wait.who,
          absl::FormatDuration(wait.timeout), wait.what, wait.key, store.Describe(),
          value.status().message()));
    }
    if (!dir.empty() && now - start >= wait.missing_directory_grace && !Exists(dir)) {
      return absl::NotFoundError(absl::StrFormat(
          "%s: the store's directory %s does not exist %s into the wait for %s: nothing was "
          "published there. Is it the store the controller writes to (grid-controller "
          "--store, or rank 0's GRID_STORE)? Make the directory first to wait for a controller "
          "that starts later",
          wait.who, dir, absl::FormatDuration(wait.missing_directory_grace), wait.what));
    }
    if (!told && now - start >= wait.notice_after && wait.notice) {
      told = true;
      const bool planning = store.Get(kPlanningKey, absl::ZeroDuration()).ok();
      wait.notice(absl::StrFormat(
          "grid: %s is waiting for %s: key \"%s\" in store %s, %s at most (%s)", wait.who,
          wait.what, wait.key, store.Describe(),
          absl::FormatDuration(absl::Trunc(deadline - now, absl::Seconds(1))),
          planning ? "a controller has started planning there"
                   : "no controller has written there yet"));
    }
  }
}

absl::Status MarkPlanning(Store& store, const std::string& who) {
  return store.Set(kPlanningKey, who);
}

}  // namespace grid::store
