#include "handoff_fabric.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "root/engine.h"
#include "transport/lanes.h"

namespace grid::bench {

// Zeroed, so its pages are in before any timing starts.
FrameRing::FrameRing() : slots_(new Slot[kSlots]()) {}

bool FrameRing::Push(absl::Span<const uint8_t> frame) {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail - head_.load(std::memory_order_acquire) == kSlots || frame.size() > wire::kMaxFrameBytes)
    return false;
  Slot& s = slots_[tail % kSlots];
  s.length = static_cast<uint32_t>(frame.size());
  std::memcpy(s.bytes, frame.data(), frame.size());
  tail_.store(tail + 1, std::memory_order_release);
  return true;
}

size_t FrameRing::PushBuilt(size_t count, size_t bytes,
                            absl::FunctionRef<void(size_t, absl::Span<uint8_t>)> build) {
  if (bytes > wire::kMaxFrameBytes) return 0;
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  const uint64_t free = kSlots - (tail - head_.load(std::memory_order_acquire));
  const size_t n = static_cast<size_t>(std::min<uint64_t>(count, free));
  for (size_t i = 0; i < n; ++i) {
    Slot& s = slots_[(tail + i) % kSlots];
    s.length = static_cast<uint32_t>(bytes);
    build(i, {s.bytes, bytes});
  }
  tail_.store(tail + n, std::memory_order_release);
  return n;
}

size_t FrameRing::Pop(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) {
  const uint64_t head = head_.load(std::memory_order_relaxed);
  const uint64_t tail = tail_.load(std::memory_order_acquire);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(tail - head, max));
  for (size_t i = 0; i < n; ++i) {
    const Slot& s = slots_[(head + i) % kSlots];
    on_frame({s.bytes, s.length});
  }
  head_.store(head + n, std::memory_order_release);
  return n;
}

// Dekker-style: the consumer announces it sleeps and looks once more; the
// producer publishes its frames and then looks for a sleeper. One of them
// sees the other.
void FrameRing::Wait(absl::Duration timeout) {
  const uint32_t seen = futex_.load(std::memory_order_acquire);
  sleeping_.store(true, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (Empty()) {
    const timespec ts = absl::ToTimespec(timeout);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&futex_), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr,
            0);
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

void FrameRing::Wake() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!sleeping_.load(std::memory_order_seq_cst)) return;
  futex_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&futex_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
          0);
}

// The rank's end: sends go up to the network thread, results come down.
class HandoffFabric::WorkerPort final : public Transport {
 public:
  WorkerPort(FrameRing* up, FrameRing* down) : up_(up), down_(down) {}
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    size_t n = 0;
    while (n < frames.size() && up_->Push(frames[n])) ++n;
    return n;
  }
  size_t SendBuilt(size_t count, size_t bytes,
                   absl::FunctionRef<void(size_t, absl::Span<uint8_t>)> build) override {
    return up_->PushBuilt(count, bytes, build);
  }
  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    return down_->Pop(max, on_frame);
  }
  void WaitReadable(absl::Duration timeout) override { down_->Wait(timeout); }
  std::string Describe() const override { return "handoff to a network thread"; }

 private:
  FrameRing* up_;
  FrameRing* down_;
};

// The root's end, used only on the network thread: what the root sends
// goes through the switch at once.
class HandoffFabric::RootPort final : public Transport {
 public:
  RootPort(HandoffFabric* fabric, FrameRing* inbox) : fabric_(fabric), inbox_(inbox) {}
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    for (auto f : frames) fabric_->Switch(f, fabric_->root_port_);
    return frames.size();
  }
  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    return inbox_->Pop(max, on_frame);
  }
  void WaitReadable(absl::Duration) override {}
  std::string Describe() const override { return "the root on the network thread"; }

 private:
  HandoffFabric* fabric_;
  FrameRing* inbox_;
};

absl::StatusOr<std::unique_ptr<HandoffFabric>> HandoffFabric::Create(
    const sw::SwitchConfig& config, uint16_t worker_port, uint16_t root_port,
    const host_config::RootConfig& root, uint32_t lanes) {
  auto pipeline = sw::Pipeline::Create(config);
  if (!pipeline.ok()) return pipeline.status();
  std::unique_ptr<HandoffFabric> f(new HandoffFabric);
  f->pipeline_ = std::make_unique<sw::Pipeline>(*std::move(pipeline));
  f->worker_port_ = worker_port;
  f->root_port_ = root_port;
  f->root_transport_ = std::make_unique<RootPort>(f.get(), &f->to_root_);
  for (uint32_t k = 0; k < std::max(lanes, 1u); ++k) {
    f->up_.push_back(std::make_unique<FrameRing>());
    f->down_.push_back(std::make_unique<FrameRing>());
    f->worker_lanes_.push_back(std::make_unique<WorkerPort>(f->up_[k].get(), f->down_[k].get()));
  }
  f->woken_.assign(f->down_.size(), false);
  f->root_ = std::make_unique<root::RootEngine>(root, f->root_transport_.get());
  f->thread_ = std::thread([raw = f.get()] { raw->Run(); });
  return f;
}

HandoffFabric::~HandoffFabric() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::vector<std::unique_ptr<Transport>> HandoffFabric::TakeWorkerLanes() {
  return std::move(worker_lanes_);
}

absl::Duration HandoffFabric::NetworkCpu() const {
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &clock) != 0 ||
      clock_gettime(clock, &ts) != 0) {
    return absl::ZeroDuration();
  }
  return absl::DurationFromTimespec(ts);
}

// The switch, then whatever it emits: toward the rank (down, woken once per
// batch by Run) or the root (its inbox, read by the root engine below).
void HandoffFabric::Switch(absl::Span<const uint8_t> frame, uint16_t in_port) {
  const int64_t now = absl::GetCurrentTimeNanos();
  if (last_ns_ != 0) {
    pipeline_->AddCapacityCredit(static_cast<double>(now - last_ns_) *
                                 pipeline_->config().capacity_gbps);
  }
  last_ns_ = now;
  frame_.assign(frame.begin(), frame.end());
  out_.Clear();
  pipeline_->Process(absl::MakeSpan(frame_), in_port, &out_);
  for (const sw::OutFrame& o : out_.frames) {
    const auto bytes = out_.Bytes(o, frame_);
    // A full ring drops, as a full queue would; the rank resends.
    if (o.port == worker_port_) {
      const uint32_t lane = transport::LaneOf(bytes, static_cast<uint32_t>(down_.size()));
      (void)down_[lane]->Push(bytes);
      woken_[lane] = true;
    } else if (o.port == root_port_) {
      (void)to_root_.Push(bytes);
    }
  }
}

void HandoffFabric::Run() {
  while (!stop_.load(std::memory_order_relaxed)) {
    size_t work = 0;
    for (auto& up : up_) {
      work += up->Pop(64, [&](absl::Span<const uint8_t> f) { Switch(f, worker_port_); });
    }
    while (root_->Poll()) ++work;
    for (size_t k = 0; k < down_.size(); ++k) {
      if (woken_[k]) down_[k]->Wake();
      woken_[k] = false;
    }
    if (work == 0) sched_yield();
  }
}

}  // namespace grid::bench
