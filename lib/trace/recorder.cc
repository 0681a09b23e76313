#include "trace/recorder.h"

#include <algorithm>

namespace grid::trace {

Recorder::Recorder(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {}

Event Recorder::Make(absl::Time t, Phase phase, const char* name, const char* category, uint64_t id,
                     std::initializer_list<Arg> args) {
  Event e;
  e.ts_ns = absl::ToUnixNanos(t);
  e.phase = phase;
  e.name = name;
  e.category = category;
  e.id = id;
  int i = 0;
  for (const Arg& a : args) {
    if (i == Event::kMaxArgs) break;
    e.args[i++] = a;
  }
  return e;
}

std::vector<Event> Recorder::Events() const {
  std::vector<Event> out;
  out.reserve(size_);
  const size_t first = size_ < ring_.size() ? 0 : next_;
  for (size_t i = 0; i < size_; ++i) out.push_back(ring_[(first + i) % ring_.size()]);
  return out;
}

}  // namespace grid::trace
