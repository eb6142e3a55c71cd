// MSI-X table and PBA as a memory region, and fire() semantics.
#include "pcie/msix.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "pcie/function_config.h"

using namespace hcaemu::pcie;

namespace {

class MsixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t.set_deliver([this](uint16_t, uint64_t a, uint32_t d) { sent.emplace_back(a, d); });
  }
  void program(uint16_t v, uint64_t addr, uint32_t data, bool masked) {
    const uint64_t e = kMsixTableOffset + v * MsixTable::kEntrySize;
    ASSERT_TRUE(t.write(e + MsixTable::kAddrLo, 8, addr));  // one qword covers lo + hi
    ASSERT_TRUE(t.write(e + MsixTable::kData, 4, data));
    ASSERT_TRUE(t.write(e + MsixTable::kVectorCtrl, 4, masked ? 1 : 0));
  }
  MsixTable t{64, kMsixTableOffset, kMsixPbaOffset};
  std::vector<std::pair<uint64_t, uint32_t>> sent;
};

TEST_F(MsixTest, ResetStateIsMasked) {
  uint64_t v = 0;
  ASSERT_TRUE(t.read(3 * 16 + MsixTable::kVectorCtrl, 4, v));
  EXPECT_EQ(v, 1u);
  EXPECT_TRUE(t.masked(3));
}

TEST_F(MsixTest, EntryReadBack) {
  program(5, 0x00000001FEE01000ull, 0x4021, false);
  uint64_t v = 0;
  ASSERT_TRUE(t.read(5 * 16, 8, v));
  EXPECT_EQ(v, 0x00000001FEE01000ull);
  ASSERT_TRUE(t.read(5 * 16 + 8, 4, v));
  EXPECT_EQ(v, 0x4021u);
  EXPECT_EQ(t.address(5), 0x00000001FEE01000ull);
}

TEST_F(MsixTest, AccessSizeChecks) {
  uint64_t v = 0;
  EXPECT_FALSE(t.read(2, 4, v)) << "misaligned";
  EXPECT_EQ(v, 0xFFFFFFFFu);
  EXPECT_FALSE(t.read(0, 2, v)) << "2-byte access";
  EXPECT_FALSE(t.write(4, 8, 0)) << "qword not qword aligned";
  EXPECT_FALSE(t.read(64 * 16, 4, v)) << "past the table, before the PBA";
  EXPECT_FALSE(t.read(kMsixPbaOffset + 8, 4, v)) << "past the PBA (64 vectors = 8 bytes)";
  EXPECT_EQ(t.bad_accesses(), 5u);
}

TEST_F(MsixTest, DisabledDropsEnabledSends) {
  program(1, 0xFEE00000, 0x31, false);
  EXPECT_EQ(t.fire(1), MsixTable::FireResult::kDisabled);
  EXPECT_TRUE(sent.empty());
  EXPECT_FALSE(t.pending(1));
  t.set_control(true, false);
  EXPECT_EQ(t.fire(1), MsixTable::FireResult::kSent);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, 0xFEE00000u);
  EXPECT_EQ(sent[0].second, 0x31u);
  EXPECT_EQ(t.fire(64), MsixTable::FireResult::kBadVector);
}

TEST_F(MsixTest, MaskedVectorLatchesPendingAndSendsOnUnmask) {
  t.set_control(true, false);
  program(7, 0xFEE00000, 0x77, true);
  EXPECT_EQ(t.fire(7), MsixTable::FireResult::kPending);
  EXPECT_TRUE(t.pending(7));
  uint64_t pba = 0;
  ASSERT_TRUE(t.read(kMsixPbaOffset, 8, pba));
  EXPECT_EQ(pba, 1ull << 7);
  EXPECT_TRUE(t.write(kMsixPbaOffset, 8, 0));  // PBA is RO
  ASSERT_TRUE(t.read(kMsixPbaOffset, 4, pba));
  EXPECT_EQ(pba, 1ull << 7);
  EXPECT_TRUE(sent.empty());
  ASSERT_TRUE(t.write(7 * 16 + MsixTable::kVectorCtrl, 4, 0));  // unmask
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].second, 0x77u);
  EXPECT_FALSE(t.pending(7));
}

TEST_F(MsixTest, FunctionMaskHoldsEveryVector) {
  program(0, 0xFEE00000, 0x10, false);
  program(2, 0xFEE00000, 0x12, false);
  t.set_control(true, true);
  EXPECT_EQ(t.fire(0), MsixTable::FireResult::kPending);
  EXPECT_EQ(t.fire(2), MsixTable::FireResult::kPending);
  EXPECT_TRUE(sent.empty());
  t.set_control(true, false);
  EXPECT_EQ(sent.size(), 2u);
  EXPECT_FALSE(t.pending(0));
}

TEST_F(MsixTest, ResetClearsEverything) {
  t.set_control(true, true);
  program(4, 0xFEE00000, 0x44, false);
  t.fire(4);
  t.reset();
  EXPECT_FALSE(t.pending(4));
  EXPECT_TRUE(t.masked(4));
  EXPECT_EQ(t.data(4), 0u);
  EXPECT_FALSE(t.enabled());
}

TEST(MsixLayout, RejectsOverlapAndMisalignment) {
  EXPECT_THROW(MsixTable(64, 0, 0x100), std::invalid_argument);
  EXPECT_THROW(MsixTable(4, 0, 0x44), std::invalid_argument);
  EXPECT_THROW(MsixTable(0, 0, 0x2000), std::invalid_argument);
}

}  // namespace
