#include <cstring>

#include "absl/strings/str_format.h"
#include "grid/wire.h"
#include "wire/header_codec.h"

namespace grid::wire {
namespace {

struct ErrorInfo {
  const char* field;
  const char* problem;
};

constexpr ErrorInfo kErrorInfo[kNumWireErrors] = {
    {"none", "ok"},
    {"frame.length", "frame is shorter than its headers"},
    {"ethernet.ether_type", "is not IPv4 (0x0800)"},
    {"ipv4.version", "is not 4"},
    {"ipv4.ihl", "IPv4 options are not accepted (ihl must be 5)"},
    {"ipv4.total_length", "is inconsistent with the frame"},
    {"ipv4.flags_fragment", "IPv4 fragments are not accepted"},
    {"ipv4.protocol", "is not UDP (17)"},
    {"ipv4.checksum", "does not verify"},
    {"udp.dst_port", "is outside the GRID port range"},
    {"udp.length", "is inconsistent with the IPv4 length"},
    {"grid.version", "is not the supported protocol version"},
    {"grid.type", "is not a known message type"},
    {"grid.flags", "has unknown bits set"},
    {"grid.reserved", "must be zero"},
    {"grid.num_elements", "is above the maximum"},
    {"grid.fan_in", "must be at least 1"},
    {"grid.payload", "length is not num_elements * 4"},
};

// A chunk's types: they name an aggregation (fan_in). A header-only one
// (num_elements 0) is an exponent probe's (docs/worker.md).
bool IsChunk(MessageType type) {
  return type == MessageType::kData || type == MessageType::kPartial ||
         type == MessageType::kResult;
}

template <typename T>
T LoadNet(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (sizeof(T) == 2) return NetToHost16(v);
  if constexpr (sizeof(T) == 4) return NetToHost32(v);
  return v;
}

template <typename T>
void StoreNet(uint8_t* p, T v) {
  if constexpr (sizeof(T) == 2) v = HostToNet16(v);
  if constexpr (sizeof(T) == 4) v = HostToNet32(v);
  std::memcpy(p, &v, sizeof(v));
}

inline WireError Fail(WireError e, uint64_t value, uint64_t* bad_value) {
  if (bad_value != nullptr) *bad_value = value;
  return e;
}

}  // namespace

const char* WireErrorName(WireError error) {
  const int i = static_cast<int>(error);
  return i >= 0 && i < kNumWireErrors ? kErrorInfo[i].field : "unknown";
}

absl::Status WireErrorToStatus(WireError error, uint64_t bad_value) {
  if (error == WireError::kOk) return absl::OkStatus();
  const int i = static_cast<int>(error);
  if (i < 0 || i >= kNumWireErrors) {
    return absl::InternalError(absl::StrFormat("unknown wire error %d", i));
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("GRID packet rejected: field '%s' (value %u) %s", kErrorInfo[i].field,
                      bad_value, kErrorInfo[i].problem));
}

namespace internal {

WireError CheckHeader(const Header& h, uint64_t* bad_value) {
  const uint8_t type = static_cast<uint8_t>(h.type);
  if (type < kMinMessageType || type > kMaxMessageType) {
    return Fail(WireError::kGridType, type, bad_value);
  }
  if ((h.flags & ~flags::kAll) != 0) return Fail(WireError::kGridFlags, h.flags, bad_value);
  if (h.num_elements > kMaxElements) {
    return Fail(WireError::kGridNumElements, h.num_elements, bad_value);
  }
  if (h.fan_in == 0 && IsChunk(h.type)) return Fail(WireError::kGridFanIn, h.fan_in, bad_value);
  return WireError::kOk;
}

WireError LoadHeader(const uint8_t* b, size_t payload_bytes, Header* out, uint64_t* bad_value) {
  const uint8_t version = b[offsetof(WireHeader, version)];
  if (version != kVersion) return Fail(WireError::kGridVersion, version, bad_value);
  const uint8_t reserved = b[offsetof(WireHeader, reserved)];
  if (reserved != 0) return Fail(WireError::kGridReserved, reserved, bad_value);
  Header h;
  h.type = static_cast<MessageType>(b[offsetof(WireHeader, type)]);
  h.flags = b[offsetof(WireHeader, flags)];
  h.job_id = LoadNet<uint16_t>(b + offsetof(WireHeader, job_id));
  h.job_token = LoadNet<uint32_t>(b + offsetof(WireHeader, job_token));
  h.rank = LoadNet<uint16_t>(b + offsetof(WireHeader, rank));
  h.agg_node = LoadNet<uint16_t>(b + offsetof(WireHeader, agg_node));
  h.path = LoadNet<uint16_t>(b + offsetof(WireHeader, path));
  h.next_path = LoadNet<uint16_t>(b + offsetof(WireHeader, next_path));
  h.fan_in = LoadNet<uint16_t>(b + offsetof(WireHeader, fan_in));
  h.slot = LoadNet<uint16_t>(b + offsetof(WireHeader, slot));
  h.op_seq = LoadNet<uint32_t>(b + offsetof(WireHeader, op_seq));
  h.chunk = LoadNet<uint32_t>(b + offsetof(WireHeader, chunk));
  h.exponent = b[offsetof(WireHeader, exponent)];
  h.next_exponent = b[offsetof(WireHeader, next_exponent)];
  h.num_elements = LoadNet<uint16_t>(b + offsetof(WireHeader, num_elements));
  if (const WireError e = CheckHeader(h, bad_value); e != WireError::kOk) return e;
  if (payload_bytes != size_t{h.num_elements} * kElementBytes) {
    return Fail(WireError::kGridPayloadLength, payload_bytes, bad_value);
  }
  *out = h;
  return WireError::kOk;
}

void StoreHeader(const Header& h, uint8_t* b) {
  b[offsetof(WireHeader, version)] = kVersion;
  b[offsetof(WireHeader, type)] = static_cast<uint8_t>(h.type);
  b[offsetof(WireHeader, flags)] = h.flags;
  b[offsetof(WireHeader, reserved)] = 0;
  StoreNet(b + offsetof(WireHeader, job_id), h.job_id);
  StoreNet(b + offsetof(WireHeader, job_token), h.job_token);
  StoreNet(b + offsetof(WireHeader, rank), h.rank);
  StoreNet(b + offsetof(WireHeader, agg_node), h.agg_node);
  StoreNet(b + offsetof(WireHeader, path), h.path);
  StoreNet(b + offsetof(WireHeader, next_path), h.next_path);
  StoreNet(b + offsetof(WireHeader, fan_in), h.fan_in);
  StoreNet(b + offsetof(WireHeader, slot), h.slot);
  StoreNet(b + offsetof(WireHeader, op_seq), h.op_seq);
  StoreNet(b + offsetof(WireHeader, chunk), h.chunk);
  b[offsetof(WireHeader, exponent)] = h.exponent;
  b[offsetof(WireHeader, next_exponent)] = h.next_exponent;
  StoreNet(b + offsetof(WireHeader, num_elements), h.num_elements);
}

}  // namespace internal

absl::Status ValidateHeader(const Header& header) {
  uint64_t bad = 0;
  return WireErrorToStatus(internal::CheckHeader(header, &bad), bad);
}

absl::Status EncodeHeader(const Header& header, absl::Span<uint8_t> out) {
  if (out.size() < kHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("EncodeHeader: output buffer holds %u bytes, the GRID header needs %u",
                        out.size(), kHeaderBytes));
  }
  if (absl::Status s = ValidateHeader(header); !s.ok()) return s;
  internal::StoreHeader(header, out.data());
  return absl::OkStatus();
}

WireError ParseDatagram(absl::Span<const uint8_t> datagram, DatagramView* out,
                        uint64_t* bad_value) {
  if (datagram.size() < kHeaderBytes)
    return Fail(WireError::kTruncated, datagram.size(), bad_value);
  const WireError e = internal::LoadHeader(datagram.data(), datagram.size() - kHeaderBytes,
                                           &out->header, bad_value);
  if (e != WireError::kOk) return e;
  out->payload = datagram.data() + kHeaderBytes;
  return WireError::kOk;
}

absl::StatusOr<DatagramView> DecodeDatagram(absl::Span<const uint8_t> datagram) {
  DatagramView view;
  uint64_t bad = 0;
  const WireError e = ParseDatagram(datagram, &view, &bad);
  if (e != WireError::kOk) return WireErrorToStatus(e, bad);
  return view;
}

}  // namespace grid::wire
