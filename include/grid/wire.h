// GRID wire protocol v1: the packet every component speaks (workers, software
// switch, P4 switch, root). docs/wire-protocol.md is the normative description;
// this header is its executable form.
//
// A GRID packet is Ethernet / IPv4 (no options) / UDP / GRID header / payload.
// All multi-byte fields, including the int32 payload elements, are in network
// byte order, because a Tofino pipeline adds the elements as big-endian PHV
// fields.
#ifndef GRID_WIRE_H_
#define GRID_WIRE_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grid/export.h"

GRID_API_BEGIN

namespace grid::wire {

inline constexpr uint8_t kVersion = 1;

// GRID packets use UDP destination ports [kUdpPortBase, kUdpPortBase +
// kUdpPortCount). Senders may spread slots over the range so NIC RSS spreads
// them over queues; switches match the whole range.
inline constexpr uint16_t kUdpPortBase = 48640;  // 0xBE00
inline constexpr uint16_t kUdpPortCount = 64;

// Elements per packet: 64 is what one Tofino pipeline pass sums; the software
// switch and jumbo frames go up to kMaxElements.
inline constexpr uint16_t kDefaultElements = 64;
inline constexpr uint16_t kMaxElements = 1024;
inline constexpr size_t kElementBytes = 4;

enum class MessageType : uint8_t {
  kData = 1,     // worker -> aggregation node: one chunk of a worker's tensor
  kPartial = 2,  // switch -> root: the sum of a switch's members for a chunk
  kResult = 3,   // root -> switches -> workers: the completed sum
  kSignal = 4,   // switch -> worker: a slot collision (no payload)
};
inline constexpr uint8_t kMinMessageType = 1;
inline constexpr uint8_t kMaxMessageType = 4;

// Header flag bits.
namespace flags {
inline constexpr uint8_t kRetransmit = 1u << 0;  // sent again by loss recovery
inline constexpr uint8_t kCongestion = 1u << 1;  // a queue on the path passed its threshold
inline constexpr uint8_t kOverflow = 1u << 2;    // an int32 sum saturated
inline constexpr uint8_t kCopy = 1u << 3;        // shadow copy of the slot: (chunk / pool) % 2
inline constexpr uint8_t kCollision = 1u << 4;   // the slot was busy with another chunk
// DATA a best-effort aggregation point passed on unaggregated, toward the
// root, which completes the sum (docs/switch.md, "Best effort").
inline constexpr uint8_t kPassed = 1u << 5;
inline constexpr uint8_t kAll = 0x3f;
}  // namespace flags

// rank value of a RESULT meant for every member (multicast) rather than the
// one rank that retransmitted.
inline constexpr uint16_t kAllRanks = 0xffff;

// The GRID header in host byte order: what encoders take and decoders return.
struct Header {
  MessageType type = MessageType::kData;
  uint8_t flags = 0;
  uint16_t job_id = 0;
  uint32_t job_token = 0;  // per-job secret; switches and the root drop mismatches
  uint16_t rank = 0;       // DATA: sender; PARTIAL/RESULT: rank that asked, or kAllRanks
  uint16_t agg_node = 0;   // node that aggregates this chunk (a switch id or the root id)
  uint16_t path = 0;       // path label of the current leg
  uint16_t next_path = 0;  // path label of the leg after aggregation (toward the root)
  uint16_t fan_in = 1;     // contributions the aggregation node expects
  uint16_t slot = 0;       // slot index in the job's pool
  uint32_t op_seq = 0;     // operation sequence number within the job
  uint32_t chunk = 0;      // chunk index within the operation
  uint8_t exponent = 0;    // biased block exponent the payload was quantized with
  // Biased exponent proposal for a block later in the stream; 255 marks a
  // block that is not finite (numerics::kNotFiniteExponent).
  uint8_t next_exponent = 0;
  uint16_t num_elements = 0;  // int32 payload elements; 0 on SIGNALs and exponent probes

  bool operator==(const Header&) const = default;
};

// A job's pool holds at most this many slots: slot indices are 16 bits.
inline constexpr uint32_t kMaxSlots = uint32_t{1} << (8 * sizeof(Header::slot));

// The header as it sits on the wire (fields in network byte order). The P4
// programs must declare the same fields, with the same names, widths and order.
#pragma pack(push, 1)
struct WireHeader {
  uint8_t version;
  uint8_t type;
  uint8_t flags;
  uint8_t reserved;  // must be zero in v1
  uint16_t job_id;
  uint32_t job_token;
  uint16_t rank;
  uint16_t agg_node;
  uint16_t path;
  uint16_t next_path;
  uint16_t fan_in;
  uint16_t slot;
  uint32_t op_seq;
  uint32_t chunk;
  uint8_t exponent;
  uint8_t next_exponent;
  uint16_t num_elements;
};
struct EthernetHeader {
  std::array<uint8_t, 6> dst;
  std::array<uint8_t, 6> src;
  uint16_t ether_type;
};
struct Ipv4Header {
  uint8_t version_ihl;
  uint8_t tos;
  uint16_t total_length;
  uint16_t identification;
  uint16_t flags_fragment;
  uint8_t ttl;
  uint8_t protocol;
  uint16_t checksum;
  uint32_t src;
  uint32_t dst;
};
struct UdpHeader {
  uint16_t src_port;
  uint16_t dst_port;
  uint16_t length;
  uint16_t checksum;
};
#pragma pack(pop)

// 34 bytes: 42 bytes of Ethernet/IPv4/UDP before it put the payload at frame
// offset 76, a multiple of 4, so int32 elements are aligned in the frame.
static_assert(sizeof(WireHeader) == 34);
static_assert(offsetof(WireHeader, job_id) == 4);
static_assert(offsetof(WireHeader, job_token) == 6);
static_assert(offsetof(WireHeader, rank) == 10);
static_assert(offsetof(WireHeader, agg_node) == 12);
static_assert(offsetof(WireHeader, path) == 14);
static_assert(offsetof(WireHeader, next_path) == 16);
static_assert(offsetof(WireHeader, fan_in) == 18);
static_assert(offsetof(WireHeader, slot) == 20);
static_assert(offsetof(WireHeader, op_seq) == 22);
static_assert(offsetof(WireHeader, chunk) == 26);
static_assert(offsetof(WireHeader, exponent) == 30);
static_assert(offsetof(WireHeader, next_exponent) == 31);
static_assert(offsetof(WireHeader, num_elements) == 32);
static_assert(sizeof(EthernetHeader) == 14);
static_assert(sizeof(Ipv4Header) == 20);
static_assert(sizeof(UdpHeader) == 8);

inline constexpr size_t kHeaderBytes = sizeof(WireHeader);
inline constexpr size_t kEthernetOffset = 0;
inline constexpr size_t kIpv4Offset = sizeof(EthernetHeader);
inline constexpr size_t kUdpOffset = kIpv4Offset + sizeof(Ipv4Header);
inline constexpr size_t kGridOffset = kUdpOffset + sizeof(UdpHeader);
inline constexpr size_t kPayloadOffset = kGridOffset + kHeaderBytes;
static_assert(kPayloadOffset == 76 && kPayloadOffset % 4 == 0);

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint8_t kIpProtocolUdp = 17;

constexpr size_t FrameBytes(uint16_t num_elements) {
  return kPayloadOffset + size_t{num_elements} * kElementBytes;
}
inline constexpr size_t kMaxFrameBytes = FrameBytes(kMaxElements);

// The most elements a frame carries in an IP packet of at most `ip_mtu`
// bytes (an interface's MTU, which leaves out the Ethernet header), up to
// kMaxElements; 0 if not one fits.
constexpr uint16_t MaxElementsForMtu(size_t ip_mtu) {
  const size_t frame = ip_mtu + sizeof(EthernetHeader);
  if (frame < FrameBytes(1)) return 0;
  const size_t elements = (frame - kPayloadOffset) / kElementBytes;
  return static_cast<uint16_t>(elements < kMaxElements ? elements : kMaxElements);
}
static_assert(MaxElementsForMtu(1500) == 359 && FrameBytes(359) - sizeof(EthernetHeader) <= 1500);
static_assert(MaxElementsForMtu(9000) == kMaxElements && MaxElementsForMtu(60) == 0);

using MacAddress = std::array<uint8_t, 6>;

// Addresses as text, for configs and logs: "10.0.0.1" (host-order uint32_t)
// and "02:00:00:00:00:01". Parse errors quote the text.
std::string IpToString(uint32_t ip);
absl::StatusOr<uint32_t> ParseIp(std::string_view text);
std::string MacToString(const MacAddress& mac);
absl::StatusOr<MacAddress> ParseMac(std::string_view text);

// Layer-2..4 addressing of a frame, host byte order.
struct FrameAddress {
  MacAddress src_mac{};
  MacAddress dst_mac{};
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = kUdpPortBase;
  uint16_t dst_port = kUdpPortBase;
  uint8_t ttl = 64;
  uint8_t tos = 0;  // DSCP and ECN bits

  bool operator==(const FrameAddress&) const = default;
};

// Why a frame or header was rejected. Each value names the field at fault.
enum class WireError : uint8_t {
  kOk = 0,
  kTruncated,          // shorter than its headers or than IPv4 total_length says
  kEtherType,          // not IPv4
  kIpVersion,          // IPv4 version is not 4
  kIpHeaderLength,     // IPv4 options are not accepted
  kIpTotalLength,      // inconsistent with the frame or the UDP length
  kIpFragment,         // fragments are not accepted
  kIpProtocol,         // not UDP
  kIpChecksum,         // IPv4 header checksum does not verify
  kUdpPort,            // destination port outside the GRID range
  kUdpLength,          // UDP length inconsistent with the GRID payload
  kGridVersion,        // GRID version is not kVersion
  kGridType,           // unknown message type
  kGridFlags,          // unknown flag bits set
  kGridReserved,       // reserved byte is not zero
  kGridNumElements,    // element count > kMaxElements
  kGridFanIn,          // fan-in is zero
  kGridPayloadLength,  // payload bytes != num_elements * 4
};
inline constexpr int kNumWireErrors = static_cast<int>(WireError::kGridPayloadLength) + 1;

// Stable short name of the field a WireError is about, e.g. "ipv4.checksum".
const char* WireErrorName(WireError error);

// A successfully parsed frame. `payload` points into the parsed buffer.
struct FrameView {
  FrameAddress address;
  Header header;
  const uint8_t* payload = nullptr;
  size_t frame_bytes = 0;  // bytes that belong to the frame (trailing padding excluded)
};

// Fast path, for per-packet use: no allocation, no formatting. On error
// returns the reason and, if `bad_value` is non-null, the offending value.
WireError ParseFrame(absl::Span<const uint8_t> frame, FrameView* out,
                     uint64_t* bad_value = nullptr);

// Same checks, with an absl::Status whose message names the field and value.
absl::StatusOr<FrameView> DecodeFrame(absl::Span<const uint8_t> frame);

// A GRID header and its payload without Ethernet/IPv4/UDP: what a kernel UDP
// socket delivers.
struct DatagramView {
  Header header;
  const uint8_t* payload = nullptr;
};
WireError ParseDatagram(absl::Span<const uint8_t> datagram, DatagramView* out,
                        uint64_t* bad_value = nullptr);
absl::StatusOr<DatagramView> DecodeDatagram(absl::Span<const uint8_t> datagram);

// Writes the kHeaderBytes-byte GRID header.
absl::Status EncodeHeader(const Header& header, absl::Span<uint8_t> out);

// The error a WireError becomes outside the fast path: InvalidArgument, naming
// the field and the value at fault.
absl::Status WireErrorToStatus(WireError error, uint64_t bad_value);

// Checks what an encoder must not put on the wire.
absl::Status ValidateHeader(const Header& header);

// Writes the Ethernet, IPv4, UDP and GRID headers for a frame carrying
// header.num_elements elements, and returns the frame size. The caller writes
// the payload at out.data() + kPayloadOffset (e.g. with
// numerics::QuantizeToWire), so the payload is never copied.
absl::StatusOr<size_t> WriteFrameHeaders(const FrameAddress& address, const Header& header,
                                         absl::Span<uint8_t> out);

// WriteFrameHeaders plus a copy of `payload` (already in network order).
absl::StatusOr<size_t> EncodeFrame(const FrameAddress& address, const Header& header,
                                   absl::Span<const uint8_t> payload, absl::Span<uint8_t> out);

// The order of two chunk identities, as every aggregation node compares
// them: op_seq in serial-number order (RFC 1982), then chunk. 1 if a is
// newer, -1 if older, 0 if the same chunk.
constexpr int CompareChunk(uint32_t op_a, uint32_t chunk_a, uint32_t op_b, uint32_t chunk_b) {
  if (op_a != op_b) return static_cast<int32_t>(op_a - op_b) > 0 ? 1 : -1;
  if (chunk_a != chunk_b) return chunk_a > chunk_b ? 1 : -1;
  return 0;
}

// RFC 1071 checksum of an IPv4 header without options.
uint16_t Ipv4Checksum(const Ipv4Header& header);

// Host <-> network byte order.
constexpr uint16_t NetToHost16(uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(v);
  return v;
}
constexpr uint32_t NetToHost32(uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap32(v);
  return v;
}
constexpr uint16_t HostToNet16(uint16_t v) { return NetToHost16(v); }
constexpr uint32_t HostToNet32(uint32_t v) { return NetToHost32(v); }

// Payload element access (network order, any alignment: after the 42-byte
// Ethernet/IPv4/UDP headers a buffer is often only 2-byte aligned).
inline int32_t LoadElement(const uint8_t* payload, size_t index) {
  uint32_t v;
  std::memcpy(&v, payload + index * kElementBytes, sizeof(v));
  return static_cast<int32_t>(NetToHost32(v));
}
inline void StoreElement(uint8_t* payload, size_t index, int32_t value) {
  const uint32_t v = HostToNet32(static_cast<uint32_t>(value));
  std::memcpy(payload + index * kElementBytes, &v, sizeof(v));
}

// The slot field of a frame, read where it sits without parsing the rest:
// what a transport steers a rank's lanes by (docs/worker.md, "Threads").
// -1 when the frame is too short to hold a GRID header.
inline int PeekSlot(absl::Span<const uint8_t> frame) {
  constexpr size_t kAt = kGridOffset + offsetof(WireHeader, slot);
  if (frame.size() < kGridOffset + kHeaderBytes) return -1;
  uint16_t v;
  std::memcpy(&v, frame.data() + kAt, sizeof(v));
  return NetToHost16(v);
}

}  // namespace grid::wire

GRID_API_END

#endif  // GRID_WIRE_H_
