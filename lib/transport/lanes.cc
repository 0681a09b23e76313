#include "transport/lanes.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"

namespace grid::transport {
namespace {

// What the lanes of one transport share.
struct Shared {
  struct Inbox {
    Inbox() : event(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
    ~Inbox() {
      if (event >= 0) ::close(event);
    }
    std::mutex mu;
    std::deque<std::vector<uint8_t>> frames;
    std::vector<std::vector<uint8_t>> spare;  // buffers to reuse
    // Readable once another lane put frames here (-1 if the kernel refused
    // one: the lane then finds them when its waits time out).
    const int event;
  };
  explicit Shared(std::unique_ptr<Transport> t, uint32_t n)
      : transport(std::move(t)),
        poll_fd(transport->PollFd()),
        datagrams(transport->datagrams()),
        describe(transport->Describe()),
        inboxes(n) {}

  std::unique_ptr<Transport> transport;
  // Every call into `transport` holds it: a transport need not be
  // thread-safe, and any call may send (a fault injector releases a held
  // frame when it is received from or waited on).
  std::mutex io_mu;
  const int poll_fd;  // waited on without io_mu when there is one
  // What the lanes answer without a call into the transport: they are asked
  // while frames are handed out, under io_mu.
  const bool datagrams;
  const std::string describe;
  std::atomic<uint64_t> foreign{0};  // the transport's count after each receive
  std::vector<Inbox> inboxes;        // by lane
};

// Without a descriptor to poll, lanes take turns waiting inside the
// transport, each holding io_mu this long at most, so the others' sends are
// not held up for longer.
constexpr absl::Duration kMaxLockedWait = absl::Microseconds(100);

class LaneTransport final : public Transport {
 public:
  LaneTransport(std::shared_ptr<Shared> shared, uint32_t index)
      : shared_(std::move(shared)), index_(index) {}

  // SendBuilt is the default (built here, then Send): building in the
  // shared transport's buffers would quantize under io_mu, one lane at a
  // time.
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    std::lock_guard<std::mutex> lock(shared_->io_mu);
    return shared_->transport->Send(frames);
  }

  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    size_t got = TakeInbox(max, on_frame);
    const size_t taken = got;
    if (got < max && shared_->io_mu.try_lock()) {
      const auto lanes = static_cast<uint32_t>(shared_->inboxes.size());
      uint64_t woken = 0;  // lanes with new frames, as bits
      const size_t n = shared_->transport->Receive(max - got, [&](absl::Span<const uint8_t> frame) {
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
      shared_->foreign.store(shared_->transport->foreign_frames(), std::memory_order_relaxed);
      shared_->io_mu.unlock();
      for (uint32_t k = 0; k < lanes; ++k) {
        const int event = shared_->inboxes[k].event;
        if ((woken & (uint64_t{1} << k)) && event >= 0) {
          const uint64_t one = 1;
          (void)!::write(event, &one, sizeof(one));
        }
      }
      // The batch was full: more may wait inside the transport (a
      // coalesced datagram's rest) where polling its descriptor cannot see.
      more_ = n == max - taken;
    }
    return got;
  }

  void WaitReadable(absl::Duration timeout) override {
    Shared::Inbox& box = shared_->inboxes[index_];
    if (more_) {
      more_ = false;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(box.mu);
      if (!box.frames.empty()) return;
    }
    // Every lane polls the transport's descriptor, if it has one, and its
    // inbox's event: whichever lane wakes first receives and hands the
    // others their frames. Without a descriptor, lanes wait inside the
    // transport in turn (briefly: each holds io_mu), since its wait may do
    // what a sender owes before sleeping (DPDK's doorbell: a ring the peer
    // waits for) and only the transport knows it.
    if (shared_->poll_fd < 0) {
      std::lock_guard<std::mutex> io(shared_->io_mu);
      {
        std::lock_guard<std::mutex> lock(box.mu);
        if (!box.frames.empty()) return;
      }
      shared_->transport->WaitReadable(std::min(timeout, kMaxLockedWait));
      return;
    }
    pollfd p[2] = {{box.event, POLLIN, 0}, {shared_->poll_fd, POLLIN, 0}};
    // To the microsecond: poll()'s milliseconds would hold a lane whose
    // inbox another lane fills late for a whole one.
    const timespec ts = absl::ToTimespec(timeout);
    ::ppoll(p, 2, &ts, nullptr);
    if (box.event >= 0 && (p[0].revents & POLLIN)) {
      uint64_t count;
      (void)!::read(box.event, &count, sizeof(count));
    }
  }

  std::string Describe() const override {
    return absl::StrFormat("%s (lane %d of %d)", shared_->describe, index_,
                           shared_->inboxes.size());
  }
  bool datagrams() const override { return shared_->datagrams; }
  // Counted once, on lane 0.
  uint64_t foreign_frames() const override {
    return index_ == 0 ? shared_->foreign.load(std::memory_order_relaxed) : 0;
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
  bool more_ = false;                        // the last receive filled its batch
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

absl::StatusOr<std::vector<std::unique_ptr<Transport>>> LanesOf(
    std::unique_ptr<Transport> transport, uint32_t lanes) {
  if (lanes <= 1) return SplitIntoLanes(std::move(transport), 1);
  auto own = transport->OpenLanes(lanes);
  if (own.ok()) {
    if (own->size() != lanes) {
      return absl::InternalError(
          absl::StrFormat("%s gave %d lanes for %d", transport->Describe(), own->size(), lanes));
    }
    return own;
  }
  if (!absl::IsUnimplemented(own.status())) return own.status();
  return SplitIntoLanes(std::move(transport), lanes);
}

}  // namespace grid::transport
