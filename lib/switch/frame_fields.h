// Internal: the frame fields the switch pipeline reads and rewrites in
// place, by offset, and the accessors it uses on them (network order, any
// alignment).
#ifndef GRID_LIB_SWITCH_FRAME_FIELDS_H_
#define GRID_LIB_SWITCH_FRAME_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "grid/wire.h"

namespace grid::sw::frame_fields {

inline constexpr size_t kEtherTypeOffset = offsetof(wire::EthernetHeader, ether_type);
inline constexpr size_t kVersionIhlOffset =
    wire::kIpv4Offset + offsetof(wire::Ipv4Header, version_ihl);
inline constexpr size_t kProtocolOffset = wire::kIpv4Offset + offsetof(wire::Ipv4Header, protocol);
inline constexpr size_t kTtlOffset = wire::kIpv4Offset + offsetof(wire::Ipv4Header, ttl);
inline constexpr size_t kDstIpOffset = wire::kIpv4Offset + offsetof(wire::Ipv4Header, dst);
inline constexpr size_t kUdpDstPortOffset = wire::kUdpOffset + offsetof(wire::UdpHeader, dst_port);
inline constexpr size_t kUdpChecksumOffset = wire::kUdpOffset + offsetof(wire::UdpHeader, checksum);
inline constexpr size_t kFlagsOffset = wire::kGridOffset + offsetof(wire::WireHeader, flags);
inline constexpr size_t kRankOffset = wire::kGridOffset + offsetof(wire::WireHeader, rank);
inline constexpr size_t kPathOffset = wire::kGridOffset + offsetof(wire::WireHeader, path);

// The TTL of the packets a switch makes (partials, replicas, signals).
inline constexpr uint8_t kFreshTtl = wire::FrameAddress{}.ttl;
// An IPv4 header without options: version 4, ihl 5.
inline constexpr uint8_t kVersionIhl = 0x45;

inline uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return wire::NetToHost16(v);
}

inline void Store16(uint8_t* p, uint16_t v) {
  v = wire::HostToNet16(v);
  std::memcpy(p, &v, 2);
}

inline wire::Ipv4Header LoadIpv4(const uint8_t* frame) {
  wire::Ipv4Header ip;
  std::memcpy(&ip, frame + wire::kIpv4Offset, sizeof(ip));
  return ip;
}

// Writes `ip` back with its checksum recomputed, as every router does after
// rewriting a field (and as the P4 programs' deparsers do).
inline void StoreIpv4(uint8_t* frame, wire::Ipv4Header ip) {
  ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(frame + wire::kIpv4Offset, &ip, sizeof(ip));
}

inline void RewriteMacs(uint8_t* frame, const wire::MacAddress& dst, const wire::MacAddress& src) {
  std::memcpy(frame + offsetof(wire::EthernetHeader, dst), dst.data(), dst.size());
  std::memcpy(frame + offsetof(wire::EthernetHeader, src), src.data(), src.size());
}

}  // namespace grid::sw::frame_fields

#endif  // GRID_LIB_SWITCH_FRAME_FIELDS_H_
