#include "model/queues/sq_doorbells.h"

#include <array>

#include <gtest/gtest.h>

#include "common/endian.h"

namespace hcaemu::model {
namespace {

std::array<uint8_t, 8> ctrl(uint16_t wqe_index, uint32_t qpn, uint8_t ds) {
  std::array<uint8_t, 8> bytes{};
  store_be32(&bytes[0], (uint32_t(wqe_index) << 8) | 0x0a);
  store_be32(&bytes[4], (qpn << 8) | ds);
  return bytes;
}

TEST(SqDoorbellsTest, TheCtrlSegmentAnnouncesTheProducerBehindItsWqe) {
  EXPECT_EQ(SqDoorbells::announced_producer(ctrl(5, 0x100, 1)), 6);
  EXPECT_EQ(SqDoorbells::announced_producer(ctrl(5, 0x100, 4)), 6);
  EXPECT_EQ(SqDoorbells::announced_producer(ctrl(5, 0x100, 5)), 7) << "ds 5 takes two WQEBBs";
  EXPECT_EQ(SqDoorbells::announced_producer(ctrl(0xffff, 0x100, 8)), 1) << "the 16-bit counter wraps";
  EXPECT_FALSE(SqDoorbells::announced_producer(ctrl(5, 0x100, 0))) << "no segments: nothing announced";
  EXPECT_FALSE(SqDoorbells::announced_producer(std::array<uint8_t, 4>{})) << "too short";
}

TEST(SqDoorbellsTest, TheDeviceStopsAtTheLastRungProducerTheRecordCovers) {
  SqDoorbells rung;
  EXPECT_EQ(rung.producer(0, 7), 7u) << "nothing rung yet: the record";
  rung.rang(2, 1000);
  EXPECT_EQ(rung.producer(0, 7), 2u) << "posted 7, rung for 2: the device takes 2";
  EXPECT_EQ(rung.producer(0, 1), 1u) << "a record behind the doorbell bounds it";
  rung.rang(7, 2000);
  EXPECT_EQ(rung.producer(2, 7), 7u);
}

TEST(SqDoorbellsTest, EachWqeKeepsTheTimeOfTheDoorbellThatAnnouncedIt) {
  SqDoorbells rung;
  rung.rang(2, 1000);
  rung.rang(2, 1500);  // the same producer again: still the first ring
  rung.rang(3, 2000);
  EXPECT_EQ(rung.time_of(0), 1000u);
  EXPECT_EQ(rung.time_of(1), 1000u);
  EXPECT_EQ(rung.time_of(2), 2000u);
  EXPECT_EQ(rung.time_of(3), 0u) << "past every doorbell: none known";
  rung.rang(0xfffe, 3000);  // wraps around the 16-bit counter
  rung.rang(1, 4000);
  EXPECT_EQ(rung.time_of(0xfffd), 3000u);
  EXPECT_EQ(rung.time_of(0xffff), 4000u);
  EXPECT_EQ(rung.time_of(0), 4000u);
}

TEST(SqDoorbellsTest, AGuestRingingWithoutEndKeepsItBounded) {
  SqDoorbells rung;
  for (uint32_t i = 1; i <= 10000; ++i) rung.rang(uint16_t(i), i);
  EXPECT_EQ(rung.time_of(0), 1u);
  EXPECT_EQ(rung.time_of(62), 63u);
  EXPECT_EQ(rung.time_of(63), 64u) << "the last entry took the later producers with its time";
  EXPECT_EQ(rung.time_of(99), 64u);
  EXPECT_EQ(rung.producer(63, 10000), 10000u);
}

}  // namespace
}  // namespace hcaemu::model
