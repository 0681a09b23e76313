// Ethernet/IPv4/UDP framing around the GRID header.
#include <cstring>

#include "absl/strings/str_format.h"
#include "grid/wire.h"
#include "wire/header_codec.h"

namespace grid::wire {
namespace {

uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return NetToHost16(v);
}

void Store16(uint8_t* p, uint16_t v) {
  v = HostToNet16(v);
  std::memcpy(p, &v, sizeof(v));
}

void Store32(uint8_t* p, uint32_t v) {
  v = HostToNet32(v);
  std::memcpy(p, &v, sizeof(v));
}

uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return NetToHost32(v);
}

// One's-complement sum of the 20-byte header's 16-bit words, in network
// order. The sum is byte-order independent (RFC 1071), so native words are
// summed and the result swapped once.
uint32_t SumIpv4Words(const uint8_t* ip) {
  uint32_t words[5];
  std::memcpy(words, ip, sizeof(words));
  uint64_t sum = 0;
  for (uint32_t w : words) sum += w;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return NetToHost16(static_cast<uint16_t>(sum));
}

inline WireError Fail(WireError e, uint64_t value, uint64_t* bad_value) {
  if (bad_value != nullptr) *bad_value = value;
  return e;
}

constexpr size_t kIpUdpGridBytes = sizeof(Ipv4Header) + sizeof(UdpHeader) + kHeaderBytes;

}  // namespace

uint16_t Ipv4Checksum(const Ipv4Header& header) {
  Ipv4Header copy = header;
  copy.checksum = 0;
  uint8_t bytes[sizeof(Ipv4Header)];
  std::memcpy(bytes, &copy, sizeof(bytes));
  return static_cast<uint16_t>(~SumIpv4Words(bytes));
}

WireError ParseFrame(absl::Span<const uint8_t> frame, FrameView* out, uint64_t* bad_value) {
  const uint8_t* f = frame.data();
  if (frame.size() < kPayloadOffset) return Fail(WireError::kTruncated, frame.size(), bad_value);

  const uint16_t ether_type = Load16(f + offsetof(EthernetHeader, ether_type));
  if (ether_type != kEtherTypeIpv4) return Fail(WireError::kEtherType, ether_type, bad_value);

  const uint8_t* ip = f + kIpv4Offset;
  const uint8_t version_ihl = ip[offsetof(Ipv4Header, version_ihl)];
  if ((version_ihl >> 4) != 4) return Fail(WireError::kIpVersion, version_ihl >> 4, bad_value);
  if ((version_ihl & 0xf) != 5)
    return Fail(WireError::kIpHeaderLength, version_ihl & 0xf, bad_value);
  const uint16_t total_length = Load16(ip + offsetof(Ipv4Header, total_length));
  if (total_length < kIpUdpGridBytes)
    return Fail(WireError::kIpTotalLength, total_length, bad_value);
  if (kIpv4Offset + total_length > frame.size()) {
    return Fail(WireError::kTruncated, frame.size(), bad_value);
  }
  const uint16_t fragment = Load16(ip + offsetof(Ipv4Header, flags_fragment));
  // MF bit or a non-zero offset; DF is fine.
  if ((fragment & 0x3fff) != 0) return Fail(WireError::kIpFragment, fragment, bad_value);
  const uint8_t protocol = ip[offsetof(Ipv4Header, protocol)];
  if (protocol != kIpProtocolUdp) return Fail(WireError::kIpProtocol, protocol, bad_value);
  if (SumIpv4Words(ip) != 0xffff) {
    return Fail(WireError::kIpChecksum, Load16(ip + offsetof(Ipv4Header, checksum)), bad_value);
  }

  const uint8_t* udp = f + kUdpOffset;
  const uint16_t dst_port = Load16(udp + offsetof(UdpHeader, dst_port));
  if (dst_port < kUdpPortBase || dst_port >= kUdpPortBase + kUdpPortCount) {
    return Fail(WireError::kUdpPort, dst_port, bad_value);
  }
  const uint16_t udp_length = Load16(udp + offsetof(UdpHeader, length));
  if (udp_length != total_length - sizeof(Ipv4Header)) {
    return Fail(WireError::kUdpLength, udp_length, bad_value);
  }

  const WireError e = internal::LoadHeader(f + kGridOffset, total_length - kIpUdpGridBytes,
                                           &out->header, bad_value);
  if (e != WireError::kOk) return e;

  FrameAddress& a = out->address;
  std::memcpy(a.dst_mac.data(), f + offsetof(EthernetHeader, dst), a.dst_mac.size());
  std::memcpy(a.src_mac.data(), f + offsetof(EthernetHeader, src), a.src_mac.size());
  a.src_ip = Load32(ip + offsetof(Ipv4Header, src));
  a.dst_ip = Load32(ip + offsetof(Ipv4Header, dst));
  a.ttl = ip[offsetof(Ipv4Header, ttl)];
  a.tos = ip[offsetof(Ipv4Header, tos)];
  a.src_port = Load16(udp + offsetof(UdpHeader, src_port));
  a.dst_port = dst_port;
  out->payload = f + kPayloadOffset;
  out->frame_bytes = kIpv4Offset + total_length;
  return WireError::kOk;
}

absl::StatusOr<FrameView> DecodeFrame(absl::Span<const uint8_t> frame) {
  FrameView view;
  uint64_t bad = 0;
  const WireError e = ParseFrame(frame, &view, &bad);
  if (e != WireError::kOk) return WireErrorToStatus(e, bad);
  return view;
}

absl::StatusOr<size_t> WriteFrameHeaders(const FrameAddress& address, const Header& header,
                                         absl::Span<uint8_t> out) {
  uint64_t bad = 0;
  if (const WireError e = internal::CheckHeader(header, &bad); e != WireError::kOk) [[unlikely]] {
    return WireErrorToStatus(e, bad);
  }
  if (address.dst_port < kUdpPortBase || address.dst_port >= kUdpPortBase + kUdpPortCount) {
    return absl::InvalidArgumentError(
        absl::StrFormat("frame address: udp.dst_port %u is outside the GRID range [%u, %u)",
                        address.dst_port, kUdpPortBase, kUdpPortBase + kUdpPortCount));
  }
  const size_t frame_bytes = FrameBytes(header.num_elements);
  if (out.size() < frame_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("frame buffer holds %u bytes, a frame of %u elements needs %u", out.size(),
                        header.num_elements, frame_bytes));
  }
  uint8_t* f = out.data();
  std::memcpy(f + offsetof(EthernetHeader, dst), address.dst_mac.data(), address.dst_mac.size());
  std::memcpy(f + offsetof(EthernetHeader, src), address.src_mac.data(), address.src_mac.size());
  Store16(f + offsetof(EthernetHeader, ether_type), kEtherTypeIpv4);

  uint8_t* ip = f + kIpv4Offset;
  const auto ip_length = static_cast<uint16_t>(frame_bytes - kIpv4Offset);
  ip[offsetof(Ipv4Header, version_ihl)] = 0x45;
  ip[offsetof(Ipv4Header, tos)] = address.tos;
  Store16(ip + offsetof(Ipv4Header, total_length), ip_length);
  Store16(ip + offsetof(Ipv4Header, identification), 0);
  Store16(ip + offsetof(Ipv4Header, flags_fragment), 0x4000);  // DF
  ip[offsetof(Ipv4Header, ttl)] = address.ttl;
  ip[offsetof(Ipv4Header, protocol)] = kIpProtocolUdp;
  Store32(ip + offsetof(Ipv4Header, src), address.src_ip);
  Store32(ip + offsetof(Ipv4Header, dst), address.dst_ip);
  // The checksum from the fields, not read back from the frame: the frame
  // is often a buffer another core last touched (a NIC queue, a memif or
  // handoff ring), and a load of stores still waiting for their lines waits
  // for every older store to drain, the last frame's payload included
  // (a third of a rank's CPU in engine_bench). The same RFC 1071 sum as
  // Ipv4Checksum, which ParseFrame checks.
  uint32_t sum = 0x4500u + address.tos + ip_length + 0x4000u +
                 (uint32_t{address.ttl} << 8 | kIpProtocolUdp) + (address.src_ip >> 16) +
                 (address.src_ip & 0xffff) + (address.dst_ip >> 16) + (address.dst_ip & 0xffff);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  Store16(ip + offsetof(Ipv4Header, checksum), static_cast<uint16_t>(~sum));

  uint8_t* udp = f + kUdpOffset;
  Store16(udp + offsetof(UdpHeader, src_port), address.src_port);
  Store16(udp + offsetof(UdpHeader, dst_port), address.dst_port);
  Store16(udp + offsetof(UdpHeader, length), static_cast<uint16_t>(ip_length - sizeof(Ipv4Header)));
  // No UDP checksum: switches rewrite the payload, and IPv4 allows zero.
  Store16(udp + offsetof(UdpHeader, checksum), 0);

  internal::StoreHeader(header, f + kGridOffset);
  return frame_bytes;
}

absl::StatusOr<size_t> EncodeFrame(const FrameAddress& address, const Header& header,
                                   absl::Span<const uint8_t> payload, absl::Span<uint8_t> out) {
  const size_t payload_bytes = size_t{header.num_elements} * kElementBytes;
  if (payload.size() != payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("EncodeFrame: payload has %u bytes, grid.num_elements=%u needs %u",
                        payload.size(), header.num_elements, payload_bytes));
  }
  absl::StatusOr<size_t> size = WriteFrameHeaders(address, header, out);
  if (!size.ok()) return size;
  if (payload_bytes > 0) std::memcpy(out.data() + kPayloadOffset, payload.data(), payload_bytes);
  return size;
}

}  // namespace grid::wire
