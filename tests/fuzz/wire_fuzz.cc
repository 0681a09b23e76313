// Feeds arbitrary bytes to the frame and datagram decoders. Whatever decodes
// must re-encode to the same bytes (the codec is a bijection on valid input),
// and the fast and the Status paths must agree.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "grid/wire.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grid::wire;
  const absl::Span<const uint8_t> input(data, size);

  FrameView view;
  uint64_t bad = 0;
  const WireError e = ParseFrame(input, &view, &bad);
  const auto decoded = DecodeFrame(input);
  Check(decoded.ok() == (e == WireError::kOk));
  if (e == WireError::kOk) {
    Check(view.frame_bytes <= size);
    Check(view.payload == data + kPayloadOffset);
    std::vector<uint8_t> again(view.frame_bytes);
    const auto written =
        EncodeFrame(view.address, view.header,
                    absl::MakeConstSpan(view.payload, view.header.num_elements * kElementBytes),
                    absl::MakeSpan(again));
    Check(written.ok() && *written == view.frame_bytes);
    // Compared byte ranges skip what FrameView does not carry (IPv4
    // identification and flags, hence the IPv4 checksum) and the UDP checksum,
    // which is ignored on input and written as zero.
    auto same = [&](size_t from, size_t to) {
      Check(std::memcmp(again.data() + from, data + from, to - from) == 0);
    };
    same(0, kIpv4Offset + 4);                 // Ethernet; IPv4 version..total_length
    same(kIpv4Offset + 8, kIpv4Offset + 10);  // ttl, protocol
    same(kIpv4Offset + 12, kUdpOffset + 6);   // addresses; UDP ports and length
    same(kGridOffset, view.frame_bytes);      // GRID header and payload
  } else {
    Check(WireErrorName(e) != nullptr);
    Check(!WireErrorToStatus(e, bad).message().empty());
  }

  DatagramView dv;
  if (ParseDatagram(input, &dv) == WireError::kOk) {
    std::vector<uint8_t> header(kHeaderBytes);
    Check(EncodeHeader(dv.header, absl::MakeSpan(header)).ok());
    Check(std::memcmp(header.data(), data, kHeaderBytes) == 0);
    Check(size == kHeaderBytes + dv.header.num_elements * kElementBytes);
  }
  return 0;
}
