// What the transport tests share: a port pair from the pid, a GRID frame
// to carry, and a receive loop with a deadline.
#ifndef GRID_TESTS_TRANSPORT_TEST_FRAMES_H_
#define GRID_TESTS_TRANSPORT_TEST_FRAMES_H_

#include <unistd.h>

#include <cstdint>
#include <vector>

#include "grid/transport.h"
#include "grid/wire.h"
#include "gtest/gtest.h"

namespace grid::testing {

inline int FreePortPair() {
  // Ports from the pid, so parallel test runs rarely collide.
  return 30000 + static_cast<int>(::getpid() % 2000) * 8;
}

inline std::vector<uint8_t> Frame(uint32_t src, uint32_t dst, uint32_t chunk, uint16_t n = 4,
                           uint16_t slot = 0) {
  wire::Header h;
  h.type = wire::MessageType::kData;
  h.job_id = 9;
  h.fan_in = 1;
  h.slot = slot;
  h.chunk = chunk;
  h.num_elements = n;
  wire::FrameAddress a;
  a.src_ip = src;
  a.dst_ip = dst;
  std::vector<uint8_t> payload(n * 4u, 7), frame(wire::FrameBytes(n));
  EXPECT_TRUE(wire::EncodeFrame(a, h, payload, absl::MakeSpan(frame)).ok());
  return frame;
}

inline std::vector<std::vector<uint8_t>> Drain(Transport& t, size_t want) {
  std::vector<std::vector<uint8_t>> got;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (got.size() < want && absl::Now() < deadline) {
    t.Receive(32, [&](absl::Span<const uint8_t> f) { got.emplace_back(f.begin(), f.end()); });
    t.WaitReadable(absl::Milliseconds(5));
  }
  return got;
}

}  // namespace grid::testing

#endif  // GRID_TESTS_TRANSPORT_TEST_FRAMES_H_
