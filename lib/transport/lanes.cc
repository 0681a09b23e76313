#include "transport/lanes.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"

namespace grid {

absl::StatusOr<std::vector<std::unique_ptr<Transport>>> Transport::OpenLanes(uint32_t lanes) {
  return absl::UnimplementedError(
      absl::StrFormat("%s has no queue per lane (%d asked for)", Describe(), lanes));
}

}  // namespace grid

namespace grid::transport {
namespace {

// What the lanes of one transport share.
struct Shared {
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<uint8_t>> frames;
    std::vector<std::vector<uint8_t>> spare;  // buffers to reuse
  };
  explicit Shared(std::unique_ptr<Transport> t, uint32_t n) : transport(std::move(t)), inboxes(n) {}

  std::unique_ptr<Transport> transport;
  std::mutex rx_mu;  // one lane receives from (or waits on) the transport at a time
  std::mutex tx_mu;
  std::vector<Inbox> inboxes;  // by lane
};

class LaneTransport final : public Transport {
 public:
  LaneTransport(std::shared_ptr<Shared> shared, uint32_t index)
      : shared_(std::move(shared)), index_(index) {}

  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    std::lock_guard<std::mutex> lock(shared_->tx_mu);
    return shared_->transport->Send(frames);
  }

  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    size_t got = TakeInbox(max, on_frame);
    if (got < max && shared_->rx_mu.try_lock()) {
      const auto lanes = static_cast<uint32_t>(shared_->inboxes.size());
      uint64_t woken = 0;  // lanes with new frames, as bits
      shared_->transport->Receive(max - got, [&](absl::Span<const uint8_t> frame) {
        const uint32_t lane = LaneOf(frame, lanes);
        if (lane == index_) {
          on_frame(frame);
          ++got;
          return;
        }
        Shared::Inbox& box = shared_->inboxes[lane];
        std::lock_guard<std::mutex> lock(box.mu);
        std::vector<uint8_t> copy;
        if (!box.spare.empty()) {
          copy = std::move(box.spare.back());
          box.spare.pop_back();
        }
        copy.assign(frame.begin(), frame.end());
        box.frames.push_back(std::move(copy));
        woken |= uint64_t{1} << lane;
      });
      shared_->rx_mu.unlock();
      for (uint32_t k = 0; k < lanes; ++k) {
        if (woken & (uint64_t{1} << k)) shared_->inboxes[k].cv.notify_one();
      }
    }
    return got;
  }

  void WaitReadable(absl::Duration timeout) override {
    Shared::Inbox& box = shared_->inboxes[index_];
    {
      std::lock_guard<std::mutex> lock(box.mu);
      if (!box.frames.empty()) return;
    }
    // Waits on the transport itself when no other lane does; else on its
    // inbox, which the lane that receives fills.
    if (shared_->rx_mu.try_lock()) {
      shared_->transport->WaitReadable(timeout);
      shared_->rx_mu.unlock();
      return;
    }
    std::unique_lock<std::mutex> lock(box.mu);
    box.cv.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return !box.frames.empty(); });
  }

  std::string Describe() const override {
    return absl::StrFormat("%s (lane %d of %d)", shared_->transport->Describe(), index_,
                           shared_->inboxes.size());
  }
  bool datagrams() const override { return shared_->transport->datagrams(); }
  // Counted once, on lane 0.
  uint64_t foreign_frames() const override {
    return index_ == 0 ? shared_->transport->foreign_frames() : 0;
  }

 private:
  size_t TakeInbox(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) {
    Shared::Inbox& box = shared_->inboxes[index_];
    taken_.clear();
    {
      std::lock_guard<std::mutex> lock(box.mu);
      while (taken_.size() < max && !box.frames.empty()) {
        taken_.push_back(std::move(box.frames.front()));
        box.frames.pop_front();
      }
    }
    for (const auto& f : taken_) on_frame(f);
    if (!taken_.empty()) {
      std::lock_guard<std::mutex> lock(box.mu);
      for (auto& f : taken_) {
        if (box.spare.size() < 256) box.spare.push_back(std::move(f));
      }
    }
    return taken_.size();
  }

  std::shared_ptr<Shared> shared_;
  const uint32_t index_;
  std::vector<std::vector<uint8_t>> taken_;  // reused per call
};

}  // namespace

std::vector<std::unique_ptr<Transport>> SplitIntoLanes(std::unique_ptr<Transport> transport,
                                                       uint32_t lanes) {
  std::vector<std::unique_ptr<Transport>> out;
  if (lanes <= 1) {
    out.push_back(std::move(transport));
    return out;
  }
  lanes = std::min(lanes, kMaxLanes);
  auto shared = std::make_shared<Shared>(std::move(transport), lanes);
  for (uint32_t k = 0; k < lanes; ++k) out.push_back(std::make_unique<LaneTransport>(shared, k));
  return out;
}

}  // namespace grid::transport
