// Internal: fault injection (transport/faults.h) wrapped around any
// transport: frames sent are dropped, sent twice, or held back behind the
// next one, each with its probability (docs/worker.md, "Transports").
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

 private:
  std::unique_ptr<Transport> inner_;
  FaultInjector faults_;
  std::vector<std::vector<uint8_t>> out_;
  std::vector<uint8_t> held_;
};

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_IMPAIRED_H_
