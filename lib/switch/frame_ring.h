// Internal: a fixed ring of frame handles (a port's queue): no allocation
// per frame, and room to put back at the front what a port did not take.
#ifndef GRID_LIB_SWITCH_FRAME_RING_H_
#define GRID_LIB_SWITCH_FRAME_RING_H_

#include <array>
#include <cstddef>
#include <utility>

namespace grid::sw {

template <typename Frame, size_t N>
class FrameRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // False when full: the caller still owns `f`.
  bool push_back(Frame& f) {
    if (size_ == N) return false;
    ring_[(head_ + size_++) % N] = std::move(f);
    return true;
  }
  // Only after a pop_front, so there is room: puts back what was taken.
  void push_front(Frame f) {
    head_ = (head_ + N - 1) % N;
    ring_[head_] = std::move(f);
    ++size_;
  }
  const Frame& front() const { return ring_[head_]; }
  Frame pop_front() {
    Frame f = std::move(ring_[head_]);
    head_ = (head_ + 1) % N;
    --size_;
    return f;
  }

 private:
  std::array<Frame, N> ring_{};
  size_t head_ = 0, size_ = 0;
};

}  // namespace grid::sw

#endif  // GRID_LIB_SWITCH_FRAME_RING_H_
