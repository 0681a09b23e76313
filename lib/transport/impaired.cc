#include "transport/impaired.h"

#include "absl/strings/str_format.h"

namespace grid::transport {

size_t ImpairedTransport::Send(absl::Span<const absl::Span<const uint8_t>> frames) {
  out_.clear();
  std::vector<uint8_t> held;
  held.swap(held_);
  for (absl::Span<const uint8_t> f : frames) {
    const int copies = faults_.Copies();
    for (int c = 0; c < copies; ++c) {
      if (faults_.Hold(held_.empty())) {
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
  return absl::StrFormat("%s (%s)", inner_->Describe(), faults_.faults().Describe());
}

}  // namespace grid::transport
