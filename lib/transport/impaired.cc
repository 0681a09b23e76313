#include "transport/impaired.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace grid::transport {

size_t ImpairedTransport::Send(absl::Span<const absl::Span<const uint8_t>> frames) {
  // Each copy that goes out is tagged with the frame it is a copy of (-1:
  // one held back before this call), so that when the inner transport takes
  // only part of them the link can be put back as it was at the first frame
  // the caller must send again.
  constexpr ptrdiff_t kNone = -2;
  out_.clear();
  origins_.clear();
  ends_.clear();
  held_before_.clear();
  ptrdiff_t held = faults_.holding() ? -1 : kNone;  // the origin of the frame held now
  ptrdiff_t current = 0;
  auto copy = [](const Bytes& b) { return std::optional<Bytes>(b); };
  auto drop = [](Bytes&&) {};
  auto emit = [&](Bytes&& b) {
    // A frame that goes out while one was held and none is held any more
    // is that held one, released behind the frame before it.
    const bool released = held != kNone && !faults_.holding();
    origins_.push_back(released ? held : current);
    if (released) held = kNone;
    out_.push_back(std::move(b));
  };
  for (size_t i = 0; i < frames.size(); ++i) {
    current = static_cast<ptrdiff_t>(i);
    held_before_.push_back(held);
    const uint64_t holds = faults_.injector().reordered();
    faults_.Apply(Bytes(frames[i].begin(), frames[i].end()), copy, drop, emit);
    if (faults_.injector().reordered() != holds && faults_.holding()) held = current;
    ends_.push_back(out_.size());
  }
  spans_.assign(out_.begin(), out_.end());
  const size_t taken = spans_.empty() ? 0 : inner_->Send(spans_);
  // The caller's frames whose every copy went out (or that were lost).
  const size_t accepted =
      static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), taken) - ends_.begin());
  if (accepted == frames.size()) return accepted;
  // Frame x = accepted is the first with a copy that did not go out. The
  // link must hold again what it held before x (released behind x or a
  // later frame, unsent), and none of the frames the caller sends again.
  const auto x = static_cast<ptrdiff_t>(accepted);
  const size_t from = accepted == 0 ? 0 : ends_[accepted - 1];
  const ptrdiff_t keep = held_before_[accepted];
  size_t keep_at = SIZE_MAX;
  bool own_sent = true;  // every copy of x that went out went on the wire
  for (size_t p = from; p < out_.size(); ++p) {
    if (origins_[p] == keep && keep != kNone && keep_at == SIZE_MAX) keep_at = p;
    if (origins_[p] == x && p >= taken) own_sent = false;
  }
  const bool restore = keep_at != SIZE_MAX && keep_at >= taken;
  // When only the frame released behind x was refused, x itself went out:
  // the caller must not send it again (or it would go out once per try
  // while the held one never does), and the link holds the released one
  // again. A second copy of x held meanwhile gives way to it: x went out.
  const ptrdiff_t first_resent = own_sent ? x + 1 : x;
  if (held != kNone && (held >= first_resent || (restore && held == x))) (void)faults_.TakeHeld();
  if (restore) faults_.Restore(std::move(out_[keep_at]));
  return static_cast<size_t>(first_resent);
}

void ImpairedTransport::ReleaseHeld() {
  faults_.Release([&](Bytes&& held) {
    const absl::Span<const uint8_t> one[] = {held};
    if (inner_->Send(one) == 0) faults_.Restore(std::move(held));  // later, then
  });
}

std::string ImpairedTransport::Describe() const {
  return absl::StrFormat("%s (%s)", inner_->Describe(), faults_.faults().Describe());
}

}  // namespace grid::transport
