#include "model/firmware/init_segment.h"

#include <gtest/gtest.h>

#include <array>

#include "common/endian.h"

namespace hcaemu::model {
namespace {

uint32_t read32(InitSegment& seg, uint32_t offset, uint64_t ticks = 0) {
  std::array<uint8_t, 4> b{};
  seg.read(offset, b, ticks);
  return load_be32(b.data());
}

void write32(InitSegment& seg, uint32_t offset, uint32_t value) {
  std::array<uint8_t, 4> b{};
  store_be32(b.data(), value);
  seg.write(offset, b);
}

TEST(InitSegment, ReportsFirmwareVersionAndCommandInterfaceRevision) {
  InitSegment seg(FirmwareVersion{22, 35, 1012});
  uint32_t fw = read32(seg, init_seg::kFwRev);
  EXPECT_EQ(fw & 0xffff, 22u);  // the driver's fw_rev_maj
  EXPECT_EQ(fw >> 16, 35u);     // fw_rev_min
  uint32_t rev = read32(seg, init_seg::kCmdifRevFwSub);
  EXPECT_EQ(rev >> 16, 5u);
  EXPECT_EQ(rev & 0xffff, 1012u);
}

TEST(InitSegment, QueueSizeFieldsAndNotInitializing) {
  InitSegment seg;
  uint32_t v = read32(seg, init_seg::kCmdqAddrLowSize);
  EXPECT_EQ((v >> 4) & 0xf, 5u);
  EXPECT_EQ(v & 0xf, 6u);
  EXPECT_EQ((v >> 8) & 0x7, 0u) << "nic_interface must read FULL (0)";
  EXPECT_EQ(read32(seg, init_seg::kInitializing) >> 31, 0u);
  EXPECT_EQ(read32(seg, init_seg::kCmdQInitTimeout), 0u);
  EXPECT_NE(read32(seg, init_seg::kHealthFwVer), 0xffffffffu);
}

TEST(InitSegment, CommandQueueAddressIsLatchedFromBothHalves) {
  InitSegment seg;
  write32(seg, init_seg::kCmdqAddrHigh, 0x1);
  write32(seg, init_seg::kCmdqAddrLowSize, 0x2345f000 | 0xff);  // size bits are read-only
  EXPECT_EQ(seg.command_queue_address(), 0x12345f000ull);
  uint32_t v = read32(seg, init_seg::kCmdqAddrLowSize);
  EXPECT_EQ(v & 0xfffff000u, 0x2345f000u);
  EXPECT_EQ(v & 0xff, 0x56u);
  EXPECT_EQ(read32(seg, init_seg::kCmdqAddrHigh), 1u);
}

TEST(InitSegment, ReadOnlyRegistersIgnoreWrites) {
  InitSegment seg;
  uint32_t before = read32(seg, init_seg::kFwRev);
  write32(seg, init_seg::kFwRev, 0xdeadbeef);
  write32(seg, init_seg::kCmdifRevFwSub, 0);
  EXPECT_EQ(read32(seg, init_seg::kFwRev), before);
  EXPECT_EQ(read32(seg, init_seg::kCmdifRevFwSub) >> 16, 5u);
}

TEST(InitSegment, DoorbellWriteReportsSlots) {
  InitSegment seg;
  std::array<uint8_t, 4> b{};
  store_be32(b.data(), 0x5);
  EXPECT_EQ(seg.write(init_seg::kCmdDoorbell, b).doorbell_bits, 0x5u);
  EXPECT_EQ(seg.write(init_seg::kFwRev, b).doorbell_bits, 0u);
}

TEST(InitSegment, HealthCounterAdvancesBetweenPolls) {
  InitSegment seg;
  uint32_t a = read32(seg, init_seg::kHealthCounter);
  uint32_t b = read32(seg, init_seg::kHealthCounter);
  EXPECT_NE(a, b);
}

TEST(InitSegment, InternalTimerFollowsModelTime) {
  InitSegment seg;
  EXPECT_EQ(read32(seg, init_seg::kInternalTimerLow, 0x100000002ull), 2u);
  EXPECT_EQ(read32(seg, init_seg::kInternalTimerHigh, 0x100000002ull), 1u);
}

TEST(InitSegment, OutOfRangeReadsAllOnesAndWritesNothing) {
  InitSegment seg;
  std::array<uint8_t, 4> b{};
  seg.read(init_seg::kSize - 2, b, 0);
  EXPECT_EQ(load_be32(b.data()), 0xffffffffu);
  EXPECT_EQ(seg.write(init_seg::kSize, b).doorbell_bits, 0u);
}

TEST(InitSegment, ResetForgetsQueueAddress) {
  InitSegment seg;
  write32(seg, init_seg::kCmdqAddrLowSize, 0x1000);
  ASSERT_TRUE(seg.command_queue_configured());
  seg.reset();
  EXPECT_FALSE(seg.command_queue_configured());
}

TEST(InitSegment, ByteAccessesSeeBigEndianLayout) {
  InitSegment seg(FirmwareVersion{0x1234, 0x5678, 1});
  std::array<uint8_t, 1> b{};
  seg.read(init_seg::kFwRev + 3, b, 0);  // least significant byte of the major
  EXPECT_EQ(b[0], 0x34);
}

}  // namespace
}  // namespace hcaemu::model
