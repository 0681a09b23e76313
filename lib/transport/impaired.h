// Internal: fault injection (transport/faults.h) wrapped around any
// transport: frames sent are dropped, sent twice, or held back behind the
// next one, each with its probability (docs/worker.md, "Transports").
// Back-pressure passes through: a frame the inner transport did not take is
// not counted as sent, so the caller keeps it and sends it again, as the
// Transport contract says.
#ifndef GRID_LIB_TRANSPORT_IMPAIRED_H_
#define GRID_LIB_TRANSPORT_IMPAIRED_H_

#include <memory>
#include <vector>

#include "grid/transport.h"
#include "transport/faults.h"

namespace grid::transport {

class ImpairedTransport final : public Transport {
 public:
  ImpairedTransport(std::unique_ptr<Transport> inner, LinkFaults faults)
      : inner_(std::move(inner)), faults_(faults) {}

  // Returns how many of `frames` the link took, in order: a frame lost to
  // the faults was taken (the link lost it), one whose copies the inner
  // transport refused was not.
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override;
  // A frame held back to be reordered goes out at the next Send, or at the
  // next Receive or wait if no Send comes first, so a pause never strands it.
  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    ReleaseHeld();
    return inner_->Receive(max, on_frame);
  }
  void WaitReadable(absl::Duration timeout) override {
    ReleaseHeld();
    inner_->WaitReadable(timeout);
  }
  std::string Describe() const override;
  void ReleaseHeld();
  int PollFd() const override { return inner_->PollFd(); }
  bool datagrams() const override { return inner_->datagrams(); }
  uint64_t foreign_frames() const override { return inner_->foreign_frames(); }
  const FaultInjector& injector() const { return faults_.injector(); }

 private:
  using Bytes = std::vector<uint8_t>;
  std::unique_ptr<Transport> inner_;
  FaultApplier<Bytes> faults_;
  // Per Send: the copies going out and the frame each is of; per frame,
  // out_.size() after it and the frame the link held before it.
  std::vector<Bytes> out_;
  std::vector<ptrdiff_t> origins_;
  std::vector<size_t> ends_;
  std::vector<ptrdiff_t> held_before_;
  std::vector<absl::Span<const uint8_t>> spans_;
};

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_IMPAIRED_H_
