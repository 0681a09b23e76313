#include "transport/impaired.h"

#include "absl/strings/str_format.h"

namespace grid::transport {

size_t ImpairedTransport::Send(absl::Span<const absl::Span<const uint8_t>> frames) {
  out_.clear();
  std::vector<uint8_t> held;
  held.swap(held_);
  for (absl::Span<const uint8_t> f : frames) {
    if (rng_.Uniform() < faults_.loss) continue;
    const int copies = rng_.Uniform() < faults_.duplicate ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      if (held_.empty() && rng_.Uniform() < faults_.reorder) {
        held_.assign(f.begin(), f.end());  // goes out behind the next frame
        continue;
      }
      out_.emplace_back(f.begin(), f.end());
    }
  }
  // The frame held before goes out behind this batch.
  if (!held.empty()) out_.push_back(std::move(held));
  std::vector<absl::Span<const uint8_t>> spans(out_.begin(), out_.end());
  inner_->Send(spans);
  return frames.size();
}

void ImpairedTransport::ReleaseHeld() {
  if (held_.empty()) return;
  const absl::Span<const uint8_t> one[] = {held_};
  inner_->Send(one);
  held_.clear();
}

std::string ImpairedTransport::Describe() const {
  return absl::StrFormat("%s (loss %g, dup %g, reorder %g)", inner_->Describe(), faults_.loss,
                         faults_.duplicate, faults_.reorder);
}

}  // namespace grid::transport
