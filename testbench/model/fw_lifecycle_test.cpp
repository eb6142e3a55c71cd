// Lifecycle commands through the firmware's dispatch, including hostile inputs.
#include <gtest/gtest.h>

#include "common/endian.h"
#include "model/firmware/firmware.h"

namespace hcaemu::model {
namespace {

class LifecycleTest : public ::testing::Test {
 protected:
  FunctionContext function;
  Firmware fw{function};
  std::vector<uint8_t> out;

  uint8_t run(uint16_t opcode, uint16_t op_mod, std::vector<uint8_t> input = {}, uint32_t outlen = 16) {
    input.resize(std::max<size_t>(input.size(), 16), 0);
    store_be16(&input[0], opcode);
    store_be16(&input[6], op_mod);
    CommandRequest r{opcode, op_mod, input, outlen};
    fw.execute(r, out);
    return out[0];
  }
};

TEST_F(LifecycleTest, ProbeSequenceSucceeds) {
  EXPECT_EQ(run(0x104, 0), 0);
  EXPECT_TRUE(function.hca_enabled);
  EXPECT_EQ(run(0x10a, 0, {}, 0x70), 0);
  EXPECT_EQ(load_be32(&out[0x6c]) & 0x2, 0x2u) << "ISSI 1 supported";
  std::vector<uint8_t> set_issi(16);
  store_be16(&set_issi[0x0a], 1);
  EXPECT_EQ(run(0x10b, 0, set_issi), 0);
  EXPECT_EQ(function.issi, 1);
  EXPECT_EQ(run(0x107, 1), 0);
  EXPECT_EQ(load_be32(&out[0x0c]), 0u) << "no boot pages needed";
  EXPECT_EQ(run(0x108, 1), 0) << "GIVE with zero entries";
}

TEST_F(LifecycleTest, GivenPagesComeBackOnTake) {
  std::vector<uint8_t> give(16 + 16);
  store_be32(&give[0x0c], 2);
  store_be64(&give[0x10], 0x10000);
  store_be64(&give[0x18], 0x20000);
  ASSERT_EQ(run(0x108, 1, give), 0);
  std::vector<uint8_t> take(16);
  store_be32(&take[0x0c], 5);
  ASSERT_EQ(run(0x108, 2, take, 16 + 5 * 8), 0);
  EXPECT_EQ(load_be32(&out[0x08]), 2u);
  EXPECT_EQ(load_be64(&out[0x10]) + load_be64(&out[0x18]), 0x30000u);
  EXPECT_TRUE(function.pages.empty());
}

TEST_F(LifecycleTest, HostileInputsGetStatusesNotCrashes) {
  std::vector<uint8_t> other(16);
  store_be16(&other[0x0a], 3);  // function_id of someone else
  EXPECT_EQ(run(0x104, 0, other), uint8_t(CommandStatus::kBadParameter));
  EXPECT_FALSE(function.hca_enabled);
  std::vector<uint8_t> issi(16);
  store_be16(&issi[0x0a], 7);
  EXPECT_EQ(run(0x10b, 0, issi), uint8_t(CommandStatus::kBadParameter));
  EXPECT_EQ(run(0x107, 9), uint8_t(CommandStatus::kBadParameter));
  std::vector<uint8_t> lying(16);
  store_be32(&lying[0x0c], 1000);  // claims 1000 pages, carries none
  EXPECT_EQ(run(0x108, 1, lying), uint8_t(CommandStatus::kBadInputLength));
  std::vector<uint8_t> unaligned(24);
  store_be32(&unaligned[0x0c], 1);
  store_be64(&unaligned[0x10], 0x10010);
  EXPECT_EQ(run(0x108, 1, unaligned), uint8_t(CommandStatus::kBadParameter));
  EXPECT_TRUE(function.pages.empty());
  EXPECT_EQ(run(0x10a, 0, {}, 16), uint8_t(CommandStatus::kBadOutputLength)) << "QUERY_ISSI output too short";
  EXPECT_EQ(run(0x108, 7), uint8_t(CommandStatus::kBadParameter));
}

TEST_F(LifecycleTest, DisableHcaReleasesEverything) {
  run(0x104, 0);
  std::vector<uint8_t> give(24);
  store_be32(&give[0x0c], 1);
  store_be64(&give[0x10], 0x5000);
  run(0x108, 1, give);
  EXPECT_EQ(run(0x105, 0), 0);
  EXPECT_FALSE(function.hca_enabled);
  EXPECT_TRUE(function.pages.empty());
}

}  // namespace
}  // namespace hcaemu::model
