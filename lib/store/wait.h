// Waiting on a store key without waiting in silence: a wait that lasts
// more than a few seconds says once what it waits for, where and for how
// much longer (docs/worker.md, "Bootstrap"); a caller that can tell the wait
// is hopeless (a rank outside the published job) ends it at once; and a
// file store whose directory does not exist a few seconds in is an error,
// not a minute's silence.
#ifndef GRID_LIB_STORE_WAIT_H_
#define GRID_LIB_STORE_WAIT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/store.h"

namespace grid::store {

// After this long a wait says what it waits for (once).
inline constexpr absl::Duration kNoticeAfter = absl::Seconds(3);
// A file store's directory missing this long into a wait: nobody is
// publishing there (controllers make it before they plan: MarkPlanning).
inline constexpr absl::Duration kMissingDirectoryGrace = absl::Seconds(4);
// How often a wait looks at give_up and the directory.
inline constexpr absl::Duration kWaitSlice = absl::Milliseconds(500);

struct KeyWait {
  std::string key;
  std::string who;   // the waiter, for the notice: "rank 5", "grid-root"
  std::string what;  // what the key brings: "its config from the job's controller"
  absl::Duration timeout = absl::Seconds(60);
  // Where the notice goes; empty: nowhere.
  std::function<void(const std::string&)> notice;
  // Asked between slices: a non-OK status ends the wait with it.
  std::function<absl::Status()> give_up;
  absl::Duration notice_after = kNoticeAfter;
  absl::Duration missing_directory_grace = kMissingDirectoryGrace;
  absl::Duration slice = kWaitSlice;
};

absl::StatusOr<std::string> AwaitKey(Store& store, const KeyWait& wait);

// A controller's first write, before it plans: the store exists (its
// directory, for file:), and waiters can say who is expected.
absl::Status MarkPlanning(Store& store, const std::string& who);

}  // namespace grid::store

#endif  // GRID_LIB_STORE_WAIT_H_
