#include "grid/wire.h"

#include <cstring>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace grid::wire {
namespace {

using ::testing::HasSubstr;

Header SampleHeader() {
  Header h;
  h.type = MessageType::kPartial;
  h.flags = flags::kRetransmit | flags::kCopy;
  h.job_id = 0x1234;
  h.job_token = 0xdeadbeef;
  h.rank = 0x0102;
  h.agg_node = 0x0304;
  h.path = 0x0506;
  h.next_path = 0x0708;
  h.fan_in = 0x090a;
  h.slot = 0x0b0c;
  h.op_seq = 0x10203040;
  h.chunk = 0x50607080;
  h.exponent = 0x91;
  h.next_exponent = 0x92;
  h.num_elements = 3;
  return h;
}

FrameAddress SampleAddress() {
  FrameAddress a;
  a.src_mac = {0x02, 0, 0, 0, 0, 1};
  a.dst_mac = {0x02, 0, 0, 0, 0, 2};
  a.src_ip = 0x0a000001;
  a.dst_ip = 0x0a000002;
  a.src_port = 50000;
  a.dst_port = kUdpPortBase + 7;
  a.ttl = 33;
  a.tos = 0x02;
  return a;
}

std::vector<uint8_t> SampleFrame(const Header& h = SampleHeader()) {
  std::vector<uint8_t> payload(size_t{h.num_elements} * 4);
  for (size_t i = 0; i < h.num_elements; ++i) StoreElement(payload.data(), i, int32_t(i) - 1);
  std::vector<uint8_t> frame(FrameBytes(h.num_elements));
  auto size = EncodeFrame(SampleAddress(), h, payload, absl::MakeSpan(frame));
  EXPECT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, frame.size());
  return frame;
}

// Recomputes the IPv4 checksum after a test edits the IPv4 header, so the
// edit itself, not the checksum, is what the parser sees.
void FixChecksum(std::vector<uint8_t>& frame) {
  Ipv4Header ip;
  std::memcpy(&ip, frame.data() + kIpv4Offset, sizeof(ip));
  ip.checksum = HostToNet16(Ipv4Checksum(ip));
  std::memcpy(frame.data() + kIpv4Offset, &ip, sizeof(ip));
}

void Put16(std::vector<uint8_t>& f, size_t offset, uint16_t v) {
  v = HostToNet16(v);
  std::memcpy(f.data() + offset, &v, 2);
}

// The byte layout is the contract with the P4 programs: pin it down byte by byte.
TEST(WireHeader, GoldenBytes) {
  uint8_t out[kHeaderBytes];
  ASSERT_TRUE(EncodeHeader(SampleHeader(), out).ok());
  const uint8_t expected[kHeaderBytes] = {
      0x01, 0x02, 0x09, 0x00,  // version, type=PARTIAL, flags, reserved
      0x12, 0x34,              // job_id
      0xde, 0xad, 0xbe, 0xef,  // job_token
      0x01, 0x02, 0x03, 0x04,  // rank, agg_node
      0x05, 0x06, 0x07, 0x08,  // path, next_path
      0x09, 0x0a, 0x0b, 0x0c,  // fan_in, slot
      0x10, 0x20, 0x30, 0x40,  // op_seq
      0x50, 0x60, 0x70, 0x80,  // chunk
      0x91, 0x92, 0x00, 0x03,  // exponent, next_exponent, num_elements
  };
  EXPECT_EQ(0, std::memcmp(out, expected, kHeaderBytes));
}

TEST(WireHeader, RoundTripEveryType) {
  for (uint8_t t = kMinMessageType; t <= kMaxMessageType; ++t) {
    Header h = SampleHeader();
    h.type = static_cast<MessageType>(t);
    std::vector<uint8_t> dgram(kHeaderBytes + h.num_elements * 4, 0);
    ASSERT_TRUE(EncodeHeader(h, absl::MakeSpan(dgram)).ok());
    auto view = DecodeDatagram(dgram);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->header, h);
    EXPECT_EQ(view->payload, dgram.data() + kHeaderBytes);
  }
}

// A SIGNAL has no elements; a DATA, PARTIAL or RESULT without them is an
// exponent probe's (docs/worker.md).
TEST(WireHeader, EveryTypeMayBeHeaderOnly) {
  for (MessageType t :
       {MessageType::kSignal, MessageType::kData, MessageType::kPartial, MessageType::kResult}) {
    Header h = SampleHeader();
    h.type = t;
    h.num_elements = 0;
    if (t == MessageType::kSignal) h.fan_in = 0;
    uint8_t dgram[kHeaderBytes];
    ASSERT_TRUE(EncodeHeader(h, dgram).ok());
    auto view = DecodeDatagram(dgram);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->header, h);
  }
}

TEST(WireHeader, EncoderRejectsBadFields) {
  uint8_t out[kHeaderBytes];
  Header h = SampleHeader();
  h.type = static_cast<MessageType>(9);
  EXPECT_THAT(EncodeHeader(h, out).message(), HasSubstr("grid.type"));
  h = SampleHeader();
  h.flags = 0x80;
  EXPECT_THAT(EncodeHeader(h, out).message(), HasSubstr("grid.flags"));
  h = SampleHeader();
  h.num_elements = kMaxElements + 1;
  EXPECT_THAT(EncodeHeader(h, out).message(), HasSubstr("grid.num_elements"));
  h = SampleHeader();
  h.fan_in = 0;
  EXPECT_THAT(EncodeHeader(h, out).message(), HasSubstr("grid.fan_in"));
  uint8_t small[kHeaderBytes - 1];
  EXPECT_THAT(EncodeHeader(SampleHeader(), small).message(), HasSubstr("needs 34"));
}

TEST(WireHeader, DatagramRejections) {
  uint8_t dgram[kHeaderBytes + 12];
  ASSERT_TRUE(EncodeHeader(SampleHeader(), dgram).ok());
  EXPECT_TRUE(DecodeDatagram(dgram).ok());

  EXPECT_THAT(DecodeDatagram(absl::MakeSpan(dgram, kHeaderBytes - 1)).status().message(),
              HasSubstr("frame.length"));
  EXPECT_THAT(DecodeDatagram(absl::MakeSpan(dgram, kHeaderBytes + 8)).status().message(),
              HasSubstr("grid.payload"));

  struct Case {
    size_t offset;
    uint8_t value;
    const char* field;
  };
  for (const Case& c :
       {Case{0, 2, "grid.version"}, Case{0, 0, "grid.version"}, Case{1, 0, "grid.type"},
        Case{1, 6, "grid.type"}, Case{2, 0x40, "grid.flags"}, Case{3, 1, "grid.reserved"},
        Case{18, 0, "grid.fan_in"}, Case{33, 0, "grid.payload"}}) {
    uint8_t bad[sizeof(dgram)];
    std::memcpy(bad, dgram, sizeof(dgram));
    bad[c.offset] = c.value;
    if (c.offset == 18) bad[19] = 0;  // fan_in is 16 bits
    auto status = DecodeDatagram(bad).status();
    EXPECT_THAT(status.message(), HasSubstr(c.field)) << "offset " << c.offset;
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  }
  uint8_t big[kHeaderBytes];
  ASSERT_TRUE(EncodeHeader(SampleHeader(), big).ok());
  const uint16_t too_many = HostToNet16(kMaxElements + 1);
  std::memcpy(big + 32, &too_many, 2);
  EXPECT_THAT(DecodeDatagram(big).status().message(), HasSubstr("grid.num_elements"));
}

TEST(WireFrame, RoundTrip) {
  const std::vector<uint8_t> frame = SampleFrame();
  ASSERT_EQ(frame.size(), kPayloadOffset + 12);
  auto view = DecodeFrame(frame);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->header, SampleHeader());
  EXPECT_EQ(view->address, SampleAddress());
  EXPECT_EQ(view->frame_bytes, frame.size());
  ASSERT_EQ(view->payload, frame.data() + kPayloadOffset);
  EXPECT_EQ(LoadElement(view->payload, 0), -1);
  EXPECT_EQ(LoadElement(view->payload, 2), 1);
}

TEST(WireFrame, HeadersAreStandard) {
  const std::vector<uint8_t> f = SampleFrame();
  EXPECT_EQ(f[12], 0x08);
  EXPECT_EQ(f[13], 0x00);
  EXPECT_EQ(f[kIpv4Offset], 0x45);
  Ipv4Header ip;
  std::memcpy(&ip, f.data() + kIpv4Offset, sizeof(ip));
  EXPECT_EQ(NetToHost16(ip.checksum), Ipv4Checksum(ip));
  EXPECT_EQ(NetToHost16(ip.total_length), f.size() - kIpv4Offset);
  UdpHeader udp;
  std::memcpy(&udp, f.data() + kUdpOffset, sizeof(udp));
  EXPECT_EQ(NetToHost16(udp.length), f.size() - kUdpOffset);
  EXPECT_EQ(NetToHost16(udp.dst_port), kUdpPortBase + 7);
}

// WriteFrameHeaders sums the IPv4 fields it writes instead of reading the
// header back (frame.cc says why): for any address and size, the frame's
// checksum is Ipv4Checksum's, the rule ParseFrame checks. Large addresses
// make the sum carry more than once.
TEST(WireFrame, WrittenChecksumIsIpv4ChecksumForAnyAddress) {
  std::mt19937 rng(7);
  std::vector<uint8_t> f(kMaxFrameBytes);
  for (int trial = 0; trial < 2000; ++trial) {
    FrameAddress a = SampleAddress();
    a.src_ip = trial < 2 ? 0xffffffffu * trial : static_cast<uint32_t>(rng());
    a.dst_ip = trial < 2 ? 0xffffffffu * trial : static_cast<uint32_t>(rng());
    a.tos = static_cast<uint8_t>(rng());
    a.ttl = static_cast<uint8_t>(rng());
    Header h = SampleHeader();
    h.num_elements = static_cast<uint16_t>(rng() % (kMaxElements + 1));
    ASSERT_TRUE(WriteFrameHeaders(a, h, absl::MakeSpan(f)).ok());
    Ipv4Header ip;
    std::memcpy(&ip, f.data() + kIpv4Offset, sizeof(ip));
    ASSERT_EQ(NetToHost16(ip.checksum), Ipv4Checksum(ip))
        << "tos " << int{a.tos} << " ttl " << int{a.ttl} << " src " << a.src_ip << " dst "
        << a.dst_ip << " elements " << h.num_elements;
  }
}

// A known IPv4 header with a published checksum (RFC 1071 worked example
// style: Wikipedia's "IPv4 header checksum" example, 0xb861).
TEST(WireFrame, Ipv4ChecksumKnownValue) {
  const uint8_t bytes[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                             0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  Ipv4Header ip;
  std::memcpy(&ip, bytes, sizeof(ip));
  EXPECT_EQ(Ipv4Checksum(ip), 0xb861);
}

TEST(WireFrame, TrailingPaddingIsIgnored) {
  std::vector<uint8_t> f = SampleFrame();
  const size_t size = f.size();
  f.resize(size + 10, 0xee);
  auto view = DecodeFrame(f);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->frame_bytes, size);
}

struct FrameCase {
  const char* name;
  void (*mutate)(std::vector<uint8_t>&);
  WireError expected;
};

class FrameRejection : public ::testing::TestWithParam<FrameCase> {};

TEST_P(FrameRejection, NamesTheField) {
  std::vector<uint8_t> f = SampleFrame();
  GetParam().mutate(f);
  FrameView view;
  uint64_t bad = 0;
  EXPECT_EQ(ParseFrame(f, &view, &bad), GetParam().expected);
  auto status = DecodeFrame(f).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(WireErrorName(GetParam().expected)));
}

const FrameCase kFrameCases[] = {
    {"Empty", [](auto& f) { f.clear(); }, WireError::kTruncated},
    {"ShortOfHeaders", [](auto& f) { f.resize(kPayloadOffset - 1); }, WireError::kTruncated},
    {"ShortOfIpLength", [](auto& f) { f.resize(f.size() - 4); }, WireError::kTruncated},
    {"Vlan", [](auto& f) { Put16(f, 12, 0x8100); }, WireError::kEtherType},
    {"Ipv6", [](auto& f) { Put16(f, 12, 0x86dd); }, WireError::kEtherType},
    {"IpVersion6",
     [](auto& f) {
       f[kIpv4Offset] = 0x65;
       FixChecksum(f);
     },
     WireError::kIpVersion},
    {"IpOptions",
     [](auto& f) {
       f[kIpv4Offset] = 0x46;
       FixChecksum(f);
     },
     WireError::kIpHeaderLength},
    {"IpLengthTooSmall",
     [](auto& f) {
       Put16(f, kIpv4Offset + 2, 20 + 8 + 33);
       FixChecksum(f);
     },
     WireError::kIpTotalLength},
    {"MoreFragments",
     [](auto& f) {
       Put16(f, kIpv4Offset + 6, 0x2000);
       FixChecksum(f);
     },
     WireError::kIpFragment},
    {"FragmentOffset",
     [](auto& f) {
       Put16(f, kIpv4Offset + 6, 0x0010);
       FixChecksum(f);
     },
     WireError::kIpFragment},
    {"Tcp",
     [](auto& f) {
       f[kIpv4Offset + 9] = 6;
       FixChecksum(f);
     },
     WireError::kIpProtocol},
    {"BadChecksum", [](auto& f) { f[kIpv4Offset + 10] ^= 0x01; }, WireError::kIpChecksum},
    {"CorruptedAddress", [](auto& f) { f[kIpv4Offset + 15] ^= 0x40; }, WireError::kIpChecksum},
    {"PortBelowRange", [](auto& f) { Put16(f, kUdpOffset + 2, kUdpPortBase - 1); },
     WireError::kUdpPort},
    {"PortAboveRange", [](auto& f) { Put16(f, kUdpOffset + 2, kUdpPortBase + kUdpPortCount); },
     WireError::kUdpPort},
    {"UdpLength", [](auto& f) { Put16(f, kUdpOffset + 4, 8 + 34); }, WireError::kUdpLength},
    {"GridVersion", [](auto& f) { f[kGridOffset] = 2; }, WireError::kGridVersion},
    {"GridType", [](auto& f) { f[kGridOffset + 1] = 0x7f; }, WireError::kGridType},
    {"GridFlags", [](auto& f) { f[kGridOffset + 2] = 0xff; }, WireError::kGridFlags},
    {"GridReserved", [](auto& f) { f[kGridOffset + 3] = 0x10; }, WireError::kGridReserved},
    {"GridZeroElementsWithAPayload", [](auto& f) { Put16(f, kGridOffset + 32, 0); },
     WireError::kGridPayloadLength},
    {"GridTooManyElements", [](auto& f) { Put16(f, kGridOffset + 32, kMaxElements + 1); },
     WireError::kGridNumElements},
    {"GridZeroFanIn", [](auto& f) { Put16(f, kGridOffset + 18, 0); }, WireError::kGridFanIn},
    {"PayloadShorterThanCount", [](auto& f) { Put16(f, kGridOffset + 32, 4); },
     WireError::kGridPayloadLength},
    {"PayloadLongerThanCount",
     [](auto& f) {
       // Consistent IPv4 and UDP lengths that cover 2 extra bytes.
       f.resize(f.size() + 2, 0);
       Put16(f, kIpv4Offset + 2, static_cast<uint16_t>(f.size() - kIpv4Offset));
       Put16(f, kUdpOffset + 4, static_cast<uint16_t>(f.size() - kUdpOffset));
       FixChecksum(f);
     },
     WireError::kGridPayloadLength},
};

INSTANTIATE_TEST_SUITE_P(Malformed, FrameRejection, ::testing::ValuesIn(kFrameCases),
                         [](const ::testing::TestParamInfo<FrameCase>& p) {
                           return std::string(p.param.name);
                         });

TEST(WireFrame, EveryErrorHasAName) {
  for (int i = 1; i < kNumWireErrors; ++i) {
    const std::string name = WireErrorName(static_cast<WireError>(i));
    EXPECT_NE(name, "unknown");
    EXPECT_NE(name, "none");
  }
  EXPECT_STREQ(WireErrorName(static_cast<WireError>(200)), "unknown");
  EXPECT_TRUE(WireErrorToStatus(WireError::kOk, 0).ok());
}

TEST(WireFrame, EncoderRejections) {
  Header h = SampleHeader();
  std::vector<uint8_t> out(kMaxFrameBytes);
  std::vector<uint8_t> payload(12);
  FrameAddress a = SampleAddress();
  a.dst_port = 80;
  EXPECT_THAT(EncodeFrame(a, h, payload, absl::MakeSpan(out)).status().message(),
              HasSubstr("udp.dst_port"));
  EXPECT_THAT(
      EncodeFrame(SampleAddress(), h, absl::MakeSpan(payload.data(), 8), absl::MakeSpan(out))
          .status()
          .message(),
      HasSubstr("num_elements=3"));
  EXPECT_THAT(
      EncodeFrame(SampleAddress(), h, payload, absl::MakeSpan(out.data(), 80)).status().message(),
      HasSubstr("needs 88"));
  h.flags = 0xe0;
  EXPECT_THAT(EncodeFrame(SampleAddress(), h, payload, absl::MakeSpan(out)).status().message(),
              HasSubstr("grid.flags"));
}

TEST(WireFrame, MaxSizeFrame) {
  Header h = SampleHeader();
  h.num_elements = kMaxElements;
  const std::vector<uint8_t> f = SampleFrame(h);
  EXPECT_EQ(f.size(), kMaxFrameBytes);
  auto view = DecodeFrame(f);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(LoadElement(view->payload, kMaxElements - 1), kMaxElements - 2);
}

TEST(WireElements, UnalignedLoadStore) {
  uint8_t buf[11] = {};
  StoreElement(buf + 1, 1, -2);
  EXPECT_EQ(buf[5], 0xff);
  EXPECT_EQ(buf[8], 0xfe);
  EXPECT_EQ(LoadElement(buf + 1, 1), -2);
}

}  // namespace
}  // namespace grid::wire
