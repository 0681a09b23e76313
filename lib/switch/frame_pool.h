// Internal: frames as pooled byte buffers, for a switch runtime
// (switch/runtime.h) whose ports are not DPDK's: grid-switch's kernel UDP
// ports, the tests, a simulator. A buffer keeps its capacity when it comes
// back, so a switch in steady state allocates nothing per frame.
#ifndef GRID_LIB_SWITCH_FRAME_POOL_H_
#define GRID_LIB_SWITCH_FRAME_POOL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace grid::sw {

class FramePool {
 public:
  using Buffer = std::vector<uint8_t>;
  explicit FramePool(size_t buffers) : all_(buffers) {
    free_.reserve(buffers);
    for (Buffer& b : all_) free_.push_back(&b);
  }
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  Buffer* Alloc() {
    if (free_.empty()) return nullptr;
    Buffer* b = free_.back();
    free_.pop_back();
    return b;
  }
  void Free(Buffer* b) { free_.push_back(b); }
  size_t available() const { return free_.size(); }
  size_t size() const { return all_.size(); }

 private:
  std::vector<Buffer> all_;
  std::vector<Buffer*> free_;
};

// The runtime's Ops over a FramePool (switch/runtime.h).
struct PoolOps {
  using Frame = FramePool::Buffer*;
  FramePool* pool;

  std::optional<absl::Span<uint8_t>> Data(Frame f) { return absl::MakeSpan(*f); }
  size_t Length(const Frame& f) const { return f->size(); }
  void Trim(Frame f, size_t length) {
    if (length < f->size()) f->resize(length);
  }
  std::optional<Frame> Share(Frame f) { return Make(*f); }
  std::optional<Frame> Make(absl::Span<const uint8_t> bytes) {
    Frame f = pool->Alloc();
    if (f == nullptr) return std::nullopt;
    f->assign(bytes.begin(), bytes.end());
    return f;
  }
  std::optional<Frame> Copy(const Frame& f) { return Make(*f); }
  void Free(Frame f) { pool->Free(f); }
};

}  // namespace grid::sw

#endif  // GRID_LIB_SWITCH_FRAME_POOL_H_
