// The frame width and pool a job gets by default (control::ChooseFrames,
// docs/worker.md "Frame width and pool").
#include "grid/control.h"
#include "gtest/gtest.h"

namespace grid::control {
namespace {

// The IP packet a frame of `elements` takes, what an MTU bounds.
size_t IpBytes(uint16_t elements) {
  return wire::FrameBytes(elements) - sizeof(wire::EthernetHeader);
}

TEST(ChooseFrames, AnEthernetMtuOnGridSwitchGives352Elements) {
  auto c = ChooseFrames(1500, wire::kMaxElements);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->elements, 352);
  EXPECT_LE(IpBytes(c->elements), 1500u);
  EXPECT_EQ(c->slots, 128u);
}

TEST(ChooseFrames, TheP4ProgramsKeepTheirWidthAndTodaysPool) {
  for (size_t mtu : {size_t{1500}, size_t{9000}, size_t{65535}}) {
    auto c = ChooseFrames(mtu, wire::kDefaultElements);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->elements, wire::kDefaultElements) << mtu;
    EXPECT_EQ(c->slots, 256u) << mtu;
  }
}

TEST(ChooseFrames, LoopbackAndJumboFramesTakeTheWidestFrame) {
  for (size_t mtu : {size_t{9000}, size_t{65536}}) {
    auto c = ChooseFrames(mtu, wire::kMaxElements);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->elements, wire::kMaxElements) << mtu;
    EXPECT_EQ(c->slots, 128u) << mtu;
  }
}

TEST(ChooseFrames, AnMtuTooSmallForOneElementIsNamed) {
  auto c = ChooseFrames(60, wire::kMaxElements);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("MTU 60"), std::string::npos) << c.status();
  EXPECT_TRUE(ChooseFrames(IpBytes(1), wire::kMaxElements).ok());
}

// Every MTU: the frame fits it and the switch, is as wide as a multiple of
// 32 allows, and the pool has 128 slots or more, keeping at least 64 KiB of
// payload, up to 256 slots.
TEST(ChooseFrames, EveryMtuGetsAFrameThatFitsAndAPoolInRange) {
  for (uint16_t widest : {uint16_t{64}, uint16_t{1024}}) {
    for (size_t mtu = IpBytes(1); mtu <= 10000; ++mtu) {
      auto c = ChooseFrames(mtu, widest);
      ASSERT_TRUE(c.ok()) << mtu << ": " << c.status();
      ASSERT_GT(c->elements, 0) << mtu;
      ASSERT_LE(c->elements, widest) << mtu;
      ASSERT_LE(IpBytes(c->elements), mtu) << mtu;
      if (c->elements >= 32) {
        ASSERT_EQ(c->elements % 32, 0) << mtu;
        ASSERT_TRUE(c->elements == widest || IpBytes(c->elements + 32) > mtu) << mtu;
      } else {
        ASSERT_GT(IpBytes(c->elements + 1), mtu) << mtu;
      }
      ASSERT_GE(c->slots, 128u) << mtu;
      ASSERT_LE(c->slots, 256u) << mtu;
      ASSERT_TRUE(c->slots == 256 || c->slots * c->elements * 4 >= 64u * 1024) << mtu;
    }
  }
}

}  // namespace
}  // namespace grid::control
