// What grid::Transport does for a kind that does not do better itself.
#include "grid/transport.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"

namespace grid {

size_t Transport::SendBuilt(size_t count, size_t bytes,
                            absl::FunctionRef<void(size_t, absl::Span<uint8_t>)> build) {
  // One buffer per thread, kept: a progress thread flushes a batch per
  // poll, and build writes every byte. A call from inside Send (a
  // program's wrapper that forwards through an inner transport's
  // SendBuilt) gets a buffer of its own, not the one being sent.
  thread_local std::vector<uint8_t> kept;
  thread_local bool in_use = false;
  std::vector<uint8_t> own;
  std::vector<uint8_t>& buffer = in_use ? own : kept;
  if (buffer.size() < count * bytes) buffer.resize(count * bytes);
  const bool outer = !in_use;
  in_use = true;
  constexpr size_t kAtOnce = 64;
  absl::Span<const uint8_t> frames[kAtOnce];
  size_t done = 0;
  while (done < count) {
    const size_t n = std::min(kAtOnce, count - done);
    for (size_t i = 0; i < n; ++i) {
      const absl::Span<uint8_t> frame(buffer.data() + (done + i) * bytes, bytes);
      build(done + i, frame);
      frames[i] = frame;
    }
    const size_t taken = Send(absl::MakeConstSpan(frames, n));
    done += taken;
    if (taken < n) break;
  }
  if (outer) in_use = false;
  return done;
}

absl::StatusOr<std::vector<std::unique_ptr<Transport>>> Transport::OpenLanes(uint32_t lanes) {
  return absl::UnimplementedError(
      absl::StrFormat("%s has no queue per lane (%d asked for)", Describe(), lanes));
}

}  // namespace grid
