// The config space engine on its own: access sizes, masks, resets, observers.
#include "pcie/config_space.h"

#include <gtest/gtest.h>

#include <vector>

using namespace hcaemu::pcie;

namespace {

class ConfigSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cs.define(0x40, 4, {.value = 0x12345678});                                  // RO
    cs.define(0x44, 2, {.value = 0x00F0, .rw = 0x0F0F});                        // RW low nibbles
    cs.define(0x46, 2, {.value = 0x0000, .rw1c = 0xFF00});                      // RW1C high byte
    cs.define(0x48, 4, {.value = 0x1, .rw = 0xFF, .sticky = 0xF0, .flr_keep = 0x0C});
  }
  ConfigSpace cs;
};

TEST_F(ConfigSpaceTest, ReadOnlyIgnoresWrites) {
  EXPECT_TRUE(cs.write(0x40, 4, 0xFFFFFFFF));
  EXPECT_EQ(cs.read(0x40, 4), 0x12345678u);
  EXPECT_EQ(cs.read(0x41, 1), 0x56u);
  EXPECT_EQ(cs.read(0x42, 2), 0x1234u);
}

TEST_F(ConfigSpaceTest, RwBitsOnlyAndReservedKeepValue) {
  cs.write(0x44, 2, 0xFFFF);
  EXPECT_EQ(cs.read(0x44, 2), 0x0FFFu);  // 0x00F0 RO bits (RsvdP-like) kept, RW set
  cs.write(0x44, 2, 0x0000);
  EXPECT_EQ(cs.read(0x44, 2), 0x00F0u);
}

TEST_F(ConfigSpaceTest, Rw1cClearsOnlyOnOne) {
  cs.set(0x46, 2, 0x8100);  // hardware sets two status bits
  cs.write(0x46, 2, 0x0000);
  EXPECT_EQ(cs.read(0x46, 2), 0x8100u) << "writing 0 keeps RW1C bits";
  cs.write(0x46, 2, 0x0100);
  EXPECT_EQ(cs.read(0x46, 2), 0x8000u) << "writing 1 clears just that bit";
  cs.write(0x46, 2, 0x0080);  // bit without RW1C: no effect
  EXPECT_EQ(cs.read(0x46, 2), 0x8000u);
}

TEST_F(ConfigSpaceTest, ResetKindsHonourStickyAndFlrKeep) {
  cs.write(0x48, 4, 0xFF);
  cs.reset(ResetKind::kFlr);
  EXPECT_EQ(cs.read(0x48, 4), 0xFDu) << "sticky 0xF0 and FLR-kept 0x0C survive, rest default (0x1)";
  cs.write(0x48, 4, 0xFF);
  cs.reset(ResetKind::kHot);
  EXPECT_EQ(cs.read(0x48, 4), 0xF1u) << "hot reset keeps sticky only";
  cs.reset(ResetKind::kCold);
  EXPECT_EQ(cs.read(0x48, 4), 0x01u);
}

TEST_F(ConfigSpaceTest, AccessSizeAndAlignment) {
  EXPECT_EQ(cs.read(0x41, 2), 0x3456u) << "2 bytes inside a dword is one TLP with byte enables";
  EXPECT_EQ(cs.read(0x42, 4), 0xFFFFFFFFu) << "crossing a dword is rejected";
  EXPECT_EQ(cs.read(0x43, 2), 0xFFFFu);
  EXPECT_EQ(cs.read(0x40, 3), 0xFFFFFFu);
  EXPECT_EQ(cs.read(0x40, 8), 0xFFFFFFFFu);
  const uint64_t before = cs.rejected_accesses();
  EXPECT_FALSE(cs.write(0x46, 4, 0xFFFFFFFF));
  EXPECT_EQ(cs.rejected_accesses(), before + 1);
}

TEST_F(ConfigSpaceTest, OutOfRange) {
  EXPECT_EQ(cs.read(0xFFC, 4), 0u);
  EXPECT_EQ(cs.read(0x1000, 4), 0xFFFFFFFFu);
  EXPECT_EQ(cs.read(0x1000, 1), 0xFFu);
  EXPECT_FALSE(cs.write(0x1000, 4, 0));
  std::vector<uint8_t> buf(8, 0);
  cs.read_block(0xFFC, buf);
  EXPECT_EQ(buf[0], 0xFF) << "a block leaving the space is refused whole";
}

TEST_F(ConfigSpaceTest, BlockAccessMatchesRegisterAccess) {
  std::vector<uint8_t> buf(12);
  cs.read_block(0x40, buf);
  EXPECT_EQ(buf[0], 0x78);
  EXPECT_EQ(buf[3], 0x12);
  EXPECT_EQ(buf[4], 0xF0);
  const std::vector<uint8_t> w = {0xAA, 0x0F, 0x0F};  // unaligned 3-byte write at 0x45..0x47
  cs.set(0x46, 2, 0xFF00);
  EXPECT_TRUE(cs.write_block(0x45, w));
  EXPECT_EQ(cs.read(0x44, 2), 0x0AF0u);
  EXPECT_EQ(cs.read(0x46, 2), 0xF000u);
}

TEST_F(ConfigSpaceTest, ObserverSeesWholeRangeOldAndNew) {
  std::vector<ConfigSpace::WriteEvent> seen;
  cs.add_write_observer(0x44, 2, [&](const ConfigSpace::WriteEvent& e) { seen.push_back(e); });
  cs.write(0x45, 1, 0x0F);  // touches the upper byte only
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].offset, 0x44);
  EXPECT_EQ(seen[0].old_value, 0x00F0u);
  EXPECT_EQ(seen[0].new_value, 0x0FF0u);
  cs.write(0x40, 4, 0);  // other range: no call
  cs.write(0x46, 2, 0);
  EXPECT_EQ(seen.size(), 1u);
  cs.write(0x44, 4, 0);  // dword write overlapping the range
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_THROW(cs.add_write_observer(0x46, 4, [](const auto&) {}), std::invalid_argument);
}

TEST_F(ConfigSpaceTest, ResetObserverRunsAfterReset) {
  uint32_t seen = 0;
  cs.add_reset_observer([&](ResetKind) { seen = cs.read(0x44, 2); });
  cs.write(0x44, 2, 0x0F0F);
  cs.reset(ResetKind::kFlr);
  EXPECT_EQ(seen, 0x00F0u);
}

TEST_F(ConfigSpaceTest, RwMaskCanBeLocked) {
  cs.set_rw_mask(0x44, 2, 0);
  cs.write(0x44, 2, 0x0F0F);
  EXPECT_EQ(cs.read(0x44, 2), 0x00F0u);
}

}  // namespace
