#include "api/root_runner.h"

namespace grid::api {

RootRunner::RootRunner(const control::RootConfig& config, std::unique_ptr<Transport> transport)
    : transport_(std::move(transport)), engine_(config, transport_.get()) {
  thread_ = std::thread([this] {
    while (!stop_.load(std::memory_order_relaxed)) {
      if (!engine_.Poll()) transport_->WaitReadable(kIdleWait);
    }
  });
}

RootRunner::~RootRunner() {
  stop_ = true;
  thread_.join();
}

}  // namespace grid::api
