#include "model/firmware/command_queue.h"

#include <gtest/gtest.h>

#include "common/endian.h"
#include "model/firmware/firmware.h"
#include "testbench/host/sim_host_memory.h"

namespace hcaemu::model {
namespace {

constexpr uint64_t kRamBase = 0x100000;
constexpr uint64_t kQueue = 0x100000;     // entries
constexpr uint64_t kInBox = 0x101000;     // input mailbox chain (1 KiB aligned blocks)
constexpr uint64_t kOutBox = 0x102000;

class CommandQueueTest : public ::testing::Test {
 protected:
  testbench::SimHostMemory ram{kRamBase, 0x10000};
  std::vector<CommandRequest> seen;
  CommandQueue queue{[this](const CommandRequest& r, std::vector<uint8_t>& out) {
    seen.push_back(r);
    out.assign(r.output_length, 0);
    for (size_t i = 16; i < out.size(); ++i) out[i] = uint8_t(i);  // a recognisable pattern
    store_be32(&out[4], 0x1234);
  }};

  uint8_t* entry(uint32_t slot) { return ram.at(kQueue + slot * 64); }

  void post(uint32_t slot, uint16_t opcode, uint32_t inlen, uint32_t outlen, uint8_t token = 0x5a) {
    uint8_t* e = entry(slot);
    std::memset(e, 0, 64);
    e[0] = 7;
    store_be32(e + 0x04, inlen);
    store_be64(e + 0x08, inlen > 16 ? kInBox : 0);
    store_be16(e + 0x10, opcode);
    store_be16(e + 0x16, 0x3);  // op_mod
    store_be64(e + 0x30, outlen > 16 ? kOutBox : 0);
    store_be32(e + 0x38, outlen);
    e[0x3c] = token;
    e[0x3f] = 1;  // hardware owns it
  }

  void chain(uint64_t base, int blocks, uint8_t token = 0x5a) {
    for (int i = 0; i < blocks; ++i) {
      uint8_t* b = ram.at(base + i * 0x400);
      std::memset(b, 0, 576);
      for (int k = 0; k < 512; ++k) b[k] = uint8_t(i * 7 + k);
      store_be64(b + 0x230, i + 1 < blocks ? base + (i + 1) * 0x400 : 0);
      store_be32(b + 0x238, i);
      b[0x23d] = token;
    }
  }
};

TEST_F(CommandQueueTest, InlineCommandCompletesAndHandsBackOwnership) {
  post(2, 0x104, 16, 16);
  ASSERT_TRUE(queue.execute(ram, kQueue, 2));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].opcode, 0x104);
  EXPECT_EQ(seen[0].op_mod, 0x3);
  EXPECT_EQ(entry(2)[0x3f], 0) << "ownership back to the driver, delivery OK";
  EXPECT_EQ(load_be32(entry(2) + 0x24), 0x1234u) << "syndrome in out[4..7]";
}

TEST_F(CommandQueueTest, MailboxChainsCarryLongInputAndOutput) {
  post(0, 0x100, 16 + 512 + 100, 16 + 4096);
  chain(kInBox, 2);
  chain(kOutBox, 8);
  ASSERT_TRUE(queue.execute(ram, kQueue, 0));
  ASSERT_EQ(seen.size(), 1u);
  ASSERT_EQ(seen[0].input.size(), 16u + 512 + 100);
  EXPECT_EQ(seen[0].input[16], 0);          // block 0 byte 0
  EXPECT_EQ(seen[0].input[16 + 512], 7);    // block 1 byte 0
  EXPECT_EQ(seen[0].input[16 + 512 + 99], uint8_t(7 + 99));
  EXPECT_EQ(*ram.at(kOutBox + 5), 21) << "output byte 21 lands at block 0 offset 5";
  EXPECT_EQ(*ram.at(kOutBox + 7 * 0x400 + 511), uint8_t(16 + 7 * 512 + 511));
  EXPECT_EQ(load_be32(ram.at(kOutBox + 0x400 + 0x238)), 1u) << "chain links untouched";
}

TEST_F(CommandQueueTest, BadTypeGivesDeliveryStatusWithoutRunningTheCommand) {
  post(1, 0x104, 16, 16);
  entry(1)[0] = 3;
  ASSERT_TRUE(queue.execute(ram, kQueue, 1));
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(entry(1)[0x3f], uint8_t(0x10 << 1));
}

TEST_F(CommandQueueTest, BrokenChainsAreDeliveryErrors) {
  post(0, 0x100, 16 + 600, 16);
  chain(kInBox, 2);
  store_be32(ram.at(kInBox + 0x400 + 0x238), 5);  // wrong block number
  queue.execute(ram, kQueue, 0);
  EXPECT_EQ(entry(0)[0x3f], uint8_t(0x3 << 1));

  post(0, 0x100, 16 + 600, 16);
  chain(kInBox, 2, 0x11);  // token mismatch
  queue.execute(ram, kQueue, 0);
  EXPECT_EQ(entry(0)[0x3f], uint8_t(0x2 << 1));

  post(0, 0x100, 16 + 600, 16);
  chain(kInBox, 1);  // chain too short: next pointer 0
  queue.execute(ram, kQueue, 0);
  EXPECT_EQ(entry(0)[0x3f], uint8_t(0x5 << 1));
  EXPECT_TRUE(seen.empty());
}

TEST_F(CommandQueueTest, MailboxOutsideMemoryIsRefusedWithoutTouchingIt) {
  post(0, 0x100, 16 + 100, 16);
  store_be64(entry(0) + 0x08, 0xdead0000);  // not host RAM
  queue.execute(ram, kQueue, 0);
  EXPECT_EQ(entry(0)[0x3f], uint8_t(0x5 << 1));
  EXPECT_GE(ram.refused(), 1u);
  EXPECT_EQ(queue.counters().dma_faults, 1u);
}

TEST_F(CommandQueueTest, AbsurdLengthsAreRejected) {
  post(0, 0x100, 0x7fffffff, 16);
  queue.execute(ram, kQueue, 0);
  EXPECT_EQ(entry(0)[0x3f], uint8_t(0x7 << 1));
  post(0, 0x100, 16, 2);
  queue.execute(ram, kQueue, 0);
  EXPECT_EQ(entry(0)[0x3f], uint8_t(0x8 << 1));
  EXPECT_TRUE(seen.empty());
}

TEST_F(CommandQueueTest, EntryNotOwnedByHardwareIsLeftAlone) {
  post(0, 0x104, 16, 16);
  entry(0)[0x3f] = 0;
  EXPECT_FALSE(queue.execute(ram, kQueue, 0));
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(queue.counters().not_owned, 1u);
}

TEST_F(CommandQueueTest, QueueOutsideMemoryFailsCleanly) {
  EXPECT_FALSE(queue.execute(ram, 0xfff00000, 0));
  EXPECT_EQ(queue.counters().dma_faults, 1u);
}

TEST(Firmware, UnknownCommandsGetBadOpcodeAndNamedSyndrome) {
  FunctionContext function;
  Firmware fw(function);
  CommandRequest r;
  r.opcode = 0x7ff;
  r.input.assign(16, 0);
  r.output_length = 16;
  std::vector<uint8_t> out;
  fw.execute(r, out);
  ASSERT_GE(out.size(), 8u);
  EXPECT_EQ(out[0], uint8_t(CommandStatus::kBadOpcode));
  EXPECT_EQ(load_be32(&out[4]), Firmware::unsupported_syndrome(0x7ff));
  EXPECT_EQ(fw.unsupported_commands(), 1u);
  EXPECT_EQ(Firmware::command_name(0x104), "ENABLE_HCA");
  EXPECT_EQ(Firmware::command_name(0x801), "DEALLOC_PD");
  EXPECT_EQ(Firmware::command_name(0xfff), "UNKNOWN");
}

}  // namespace
}  // namespace hcaemu::model
