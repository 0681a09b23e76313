// One worker engine driven by hand, for tests of its rules: a transport
// that keeps what the engine sends and hands it what the test queues, and
// the results its aggregation node would send back.
#ifndef GRID_TESTS_SUPPORT_HAND_H_
#define GRID_TESTS_SUPPORT_HAND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grid/control.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "support/cluster.h"
#include "worker/engine.h"

namespace grid::testing {

// worker::PrepareWireOps, then NumberWireOps from `op_seq`: one thread, no
// lock to spare.
inline std::vector<std::shared_ptr<worker::WireOp>> Prepared(
    const std::vector<std::shared_ptr<internal::OpState>>& ops, uint16_t elements, uint32_t slots,
    size_t fusion_bytes, uint32_t& op_seq, int world = 1) {
  auto wire = worker::PrepareWireOps(ops, elements, slots, fusion_bytes, world);
  worker::NumberWireOps(wire, op_seq);
  return wire;
}

class HandTransport final : public Transport {
 public:
  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    for (auto f : frames) sent.emplace_back(f.begin(), f.end());
    return frames.size();
  }
  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    size_t n = 0;
    while (n < max && !inbox.empty()) {
      on_frame(inbox.front());
      inbox.erase(inbox.begin());
      ++n;
    }
    return n;
  }
  void WaitReadable(absl::Duration) override {}
  std::string Describe() const override { return "hand"; }
  std::vector<std::vector<uint8_t>> sent, inbox;
};

// The result for `request` from (src_ip, src_mac), with `next_exponent` and
// the request's flags plus `add_flags`. Its payload is the request's: the
// sum of one contribution.
inline std::vector<uint8_t> Answer(const host_config::WorkerConfig& c,
                                   const std::vector<uint8_t>& request, uint8_t next_exponent,
                                   uint32_t src_ip, wire::MacAddress src_mac,
                                   uint8_t add_flags = 0) {
  wire::FrameView v = *wire::DecodeFrame(request);
  wire::Header h = v.header;
  h.type = wire::MessageType::kResult;
  h.next_exponent = next_exponent;
  h.flags |= add_flags;
  wire::FrameAddress a;
  a.src_ip = src_ip;
  a.dst_ip = c.ip;
  a.src_mac = src_mac;
  a.dst_mac = c.mac;
  std::vector<uint8_t> f(wire::FrameBytes(h.num_elements));
  (void)wire::EncodeFrame(a, h, {v.payload, size_t{h.num_elements} * 4}, absl::MakeSpan(f));
  return f;
}

// The answer from the rank's own aggregation node.
inline std::vector<uint8_t> AnswerFromAggregator(const host_config::WorkerConfig& c,
                                                 const std::vector<uint8_t>& request,
                                                 uint8_t add_flags = 0) {
  return Answer(c, request, 0, c.aggregator_ip, c.next_hop_mac, add_flags);
}

// The config of rank `rank` of a planned job.
inline host_config::WorkerConfig OneRankConfig(const ClusterOptions& options, int rank = 4) {
  Cluster cluster(options);
  return cluster.workers()[rank];
}

}  // namespace grid::testing

#endif  // GRID_TESTS_SUPPORT_HAND_H_
