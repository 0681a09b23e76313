// Internal: one allreduce as the API and the engine share it. The API thread
// creates it and waits on it; the progress thread runs it and finishes it.
#ifndef GRID_LIB_WORKER_OP_STATE_H_
#define GRID_LIB_WORKER_OP_STATE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grid/types.h"

namespace grid::internal {

struct OpState {
  uint64_t id = 0;  // 1, 2, ... per communicator, in submission order
  DataType type = DataType::kFloat32;
  bool average = false;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  absl::Time submitted;
  absl::Time deadline;

  // Pieces of wire operations still running; the lane that takes it to 0
  // finalizes the operation.
  std::atomic<int> pending{0};

  // Shared; under mu.
  mutable std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  absl::Status status;
  absl::Duration elapsed;
  absl::Status error;  // the first error of a wire operation, before it is done

  void Fail(const absl::Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    if (error.ok()) error = s;
  }
  absl::Status first_error() const {
    std::lock_guard<std::mutex> lock(mu);
    return error;
  }

  void Finish(absl::Status s, absl::Time now) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done) return;
      done = true;
      status = std::move(s);
      elapsed = now - submitted;
    }
    cv.notify_all();
  }
};

}  // namespace grid::internal

#endif  // GRID_LIB_WORKER_OP_STATE_H_
