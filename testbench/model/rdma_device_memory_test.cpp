// Device memory (issue 16: ibv_alloc_dm, ibv_reg_dm_mr): the DEV_MEM caps, ALLOC/DEALLOC_MEMIC as
// mlx5_ib sends them, MEMIC-mode MKEYs (zero-based, inside the BAR0 window), and the data path
// reading and writing the window as it does host memory: a peer's RDMA WRITE, READ and atomics land
// in the responder's device memory, a SEND gathers from it. Checked on the device memory itself.
#include <systemc>

#include "model/firmware/hca_caps.h"
#include "model/objects/device_memory.h"
#include "model/objects/memory_protection.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kAllocMemic = 0x205, kDeallocMemic = 0x206, kModifyMemic = 0x207, kCreateMkey = 0x200,
                   kQueryHcaCap = 0x100;
constexpr uint8_t kStatusBadParameter = 0x3, kStatusNoResources = 0xf;
constexpr uint8_t kCqeReqErr = 0xd, kSynRemoteAccess = 0x13;

// ALLOC_MEMIC as mlx5_cmd_alloc_memic builds it: `size` bytes inside [range_start, + range_size).
uint8_t alloc_memic(RdmaNode& n, uint64_t range_start, uint32_t range_size, uint32_t size, uint32_t log_align,
                    uint64_t& placed) {
  auto in = HostFunction::input(0x20);
  in[0x0f] = uint8_t(log_align);
  store_be64(&in[0x10], range_start);
  store_be32(&in[0x18], range_size);
  store_be32(&in[0x1c], size);
  const uint8_t status = n.run(kAllocMemic, in, 0x10);
  placed = load_be64(&n.out[0x08]);
  return status;
}

uint8_t dealloc_memic(RdmaNode& n, uint64_t start, uint32_t size) {
  auto in = HostFunction::input(0x20);
  store_be64(&in[0x10], start);
  store_be32(&in[0x18], size);
  return n.run(kDeallocMemic, in, 0x10);
}

// MODIFY_MEMIC as mlx5_cmd_alloc_memic_op / mlx5_cmd_dealloc_memic_op build it (op_mod 0: on,
// 1: off); `address` gets the operation address (a BAR0 offset).
uint8_t modify_memic(RdmaNode& n, uint16_t op_mod, uint64_t start, uint8_t operation, uint64_t& address) {
  auto in = HostFunction::input(0x40);
  in[0x0f] = operation;
  store_be64(&in[0x10], start);
  const uint8_t status = n.run(kModifyMemic, in, 0x40, op_mod);
  address = load_be64(&n.out[0x10]);
  return status;
}

// CREATE_MKEY as mlx5_ib_get_dm_mr builds it: access mode MEMIC (5), start_addr a BAR0 offset.
uint8_t reg_dm_mr(RdmaNode& n, uint64_t bar_offset, uint64_t length, uint32_t& key) {
  auto in = HostFunction::input(0x110);
  const uint8_t variant = 0x5d;
  store_be32(&in[0x10], (1u << 26) | access_bits::kAll | access_bits::kLocalRead | (1u << 8));  // 5 = 0b1'01
  store_be32(&in[0x14], 0xffffff00u | variant);
  store_be32(&in[0x1c], n.pd);
  store_be64(&in[0x20], bar_offset);
  store_be64(&in[0x28], length);
  const uint8_t status = n.run(kCreateMkey, in, 0x10);
  key = (load_be32(&n.out[0x08]) << 8) | variant;
  return status;
}

std::vector<uint8_t> device_bytes(RdmaNode& n, uint64_t bar_offset, size_t size) {
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(n.f.device_memory.read(bar_offset - n.f.device_memory.window().bar_offset, out));
  return out;
}

struct DeviceMemoryTest : ConnectedPairTest<> {
  const DeviceMemoryWindow window = b.f.device_memory.window();
  uint64_t dm = 0;   // B's allocation (BAR0 offset)
  uint32_t key = 0;  // B's MEMIC key over it

  DeviceMemoryTest() {
    a.put(src, 0, pattern(4096, 5));
    EXPECT_EQ(alloc_memic(b, window.bar_offset, 4096, 4096, 0, dm), 0);
    EXPECT_EQ(reg_dm_mr(b, dm, 4096, key), 0);
  }
};

TEST(DeviceMemoryWindow, TheLastEighthOfBar0AtMost256KiB) {
  EXPECT_EQ(device_memory_window(32 << 20).bytes, 256u << 10);
  EXPECT_EQ(device_memory_window(32 << 20).bar_offset, (32u << 20) - (256u << 10));
  EXPECT_EQ(device_memory_window(1 << 20).bytes, 128u << 10);
  EXPECT_EQ(device_memory_window(4096).bytes, 0u) << "too small a BAR has none";
}

TEST(DeviceMemory, PlacesAtTheAlignmentAskedAroundAllocationsAndZeroesWhatItGives) {
  DeviceMemory m;
  m.configure({.bar_offset = 0x10000, .bytes = 0x4000});
  uint64_t at = 0;
  ASSERT_EQ(m.allocate(0x10000, 0x1000, 0x40, 0, at), DeviceMemory::AllocError::kNone);
  EXPECT_EQ(at, 0x10000u);
  ASSERT_EQ(m.allocate(0x10000, 0x1000, 0x40, 2, at), DeviceMemory::AllocError::kNone);
  EXPECT_EQ(at, 0x10100u) << "256-byte aligned, past the first";
  const std::array<uint8_t, 4> junk{1, 2, 3, 4};
  ASSERT_TRUE(m.write(0x100, junk));
  EXPECT_TRUE(m.release(0x10100, 0x40));
  ASSERT_EQ(m.allocate(0x10000, 0x1000, 0x80, 0, at), DeviceMemory::AllocError::kNone);
  EXPECT_EQ(at, 0x10040u);
  std::array<uint8_t, 4> back{};
  ASSERT_TRUE(m.read(0x100, back));
  EXPECT_EQ(back, (std::array<uint8_t, 4>{})) << "freed bytes do not show through the next allocation";
  EXPECT_EQ(m.allocate(0x10000, 0x1000, 0x1000, 0, at), DeviceMemory::AllocError::kNoRoom);
  EXPECT_EQ(m.allocate(0x13000, 0x2000, 0x40, 0, at), DeviceMemory::AllocError::kBadParameter) << "past the window";
  EXPECT_EQ(m.allocate(0x10000, 0x1000, 0x30, 0, at), DeviceMemory::AllocError::kBadParameter) << "not 64-byte units";
  EXPECT_EQ(m.allocate(0x10000, 0x1000, 0x40, 7, at), DeviceMemory::AllocError::kBadParameter) << "alignment > max";
  EXPECT_FALSE(m.release(0x10040, 0x40)) << "only a whole allocation goes back";
  EXPECT_FALSE(m.read(0x3ffe, back)) << "a load past the window";
}

TEST_F(DeviceMemoryTest, CapsTellWhereTheWindowIsAndUarsStopBeforeIt) {
  auto in = HostFunction::input(0x10);
  ASSERT_EQ(b.run(kQueryHcaCap, in, 0x1010, uint16_t(CapType::kGeneral) << 1 | 1), 0);
  EXPECT_EQ((b.out[0x10 + 0x35] >> 7) & 1, 1) << "cmd_hca_cap.device_memory";
  ASSERT_EQ(b.run(kQueryHcaCap, in, 0x1010, uint16_t(CapType::kDeviceMemory) << 1 | 1), 0);
  const uint8_t* cap = &b.out[0x10];
  EXPECT_EQ(cap[0] >> 7, 1) << "memic";
  EXPECT_EQ(load_be64(cap + 0x08), window.bar_offset);
  EXPECT_EQ(load_be32(cap + 0x10), window.bytes);
  EXPECT_EQ(load_be32(cap + 0x14), window.bytes);
  EXPECT_EQ(cap[0x07], DeviceMemory::kMaxLogAlignment);
  EXPECT_EQ(load_be32(cap + 0x40), 3u) << "memic_operations: increment and test-and-set";
  EXPECT_EQ(cap[0x04] & cap[0x06] & 1, 1) << "both on one byte";
  EXPECT_EQ(window.ops_offset, window.bar_offset - 2 * window.bytes) << "the operation mirrors sit below the window";
  // The UAR pages end before the VARs (var_window_test), which end where the mirrors begin.
  EXPECT_EQ(b.f.identity.var.bar_offset + b.f.identity.var.bytes, window.ops_offset);
  EXPECT_FALSE(b.f.resources.uars.in_range(uint32_t(window.ops_offset / 4096))) << "no UAR page in the mirrors";
}

// MEMIC atomic operations (rdma-core's test_mlx5_dm_ops): an increment store adds to the byte, a
// test-and-set load returns it and leaves 1; only where MODIFY_MEMIC turned the operation on.
TEST_F(DeviceMemoryTest, AtomicOperationsActOnTheAllocationThatTurnedThemOn) {
  DeviceMemory& m = b.f.device_memory;
  uint64_t increment = 0, test_and_set = 0;
  ASSERT_EQ(modify_memic(b, 0, dm, 0, increment), 0);
  ASSERT_EQ(modify_memic(b, 0, dm, 1, test_and_set), 0);
  EXPECT_EQ(increment, window.ops_offset + (dm - window.bar_offset));
  EXPECT_EQ(test_and_set, window.ops_offset + window.bytes + (dm - window.bar_offset));
  ASSERT_TRUE(m.in_operations(increment + 7, 1));
  EXPECT_FALSE(m.contains(increment, 1)) << "an operation address is no plain device memory";
  uint8_t one = 1;
  EXPECT_TRUE(m.operate(increment + 7, false, std::span(&one, 1)));
  EXPECT_TRUE(m.operate(increment + 7, false, std::span(&one, 1)));
  EXPECT_EQ(device_bytes(b, dm + 7, 1)[0], 2);
  uint8_t got = 0xee;
  EXPECT_TRUE(m.operate(test_and_set + 7, true, std::span(&got, 1)));
  EXPECT_EQ(got, 2) << "the value before";
  EXPECT_TRUE(m.operate(test_and_set + 7, true, std::span(&got, 1)));
  EXPECT_EQ(got, 1) << "test-and-set left 1";
  EXPECT_EQ(device_bytes(b, dm + 6, 3), (std::vector<uint8_t>{0, 1, 0})) << "one byte, no more";
  std::array<uint8_t, 2> two{1, 1};
  EXPECT_FALSE(m.operate(increment, false, two)) << "one byte at a time";
  EXPECT_FALSE(m.operate(increment + 4096, false, std::span(&one, 1))) << "past the allocation";
  EXPECT_FALSE(m.operate(test_and_set, false, std::span(&one, 1))) << "a store to a test-and-set address";
  EXPECT_EQ(device_bytes(b, dm, 1)[0], 0);
  uint64_t unused = 0;
  EXPECT_EQ(modify_memic(b, 1, dm, 0, unused), 0) << "off";
  EXPECT_FALSE(m.operate(increment + 7, false, std::span(&one, 1))) << "turned off";
  EXPECT_EQ(device_bytes(b, dm + 7, 1)[0], 1);
  EXPECT_EQ(modify_memic(b, 1, dm, 0, unused), kStatusBadParameter) << "off twice";
  EXPECT_EQ(modify_memic(b, 0, dm + 64, 0, unused), kStatusBadParameter) << "not an allocation's start";
  EXPECT_EQ(modify_memic(b, 0, dm, 2, unused), kStatusBadParameter) << "no such operation";
  EXPECT_EQ(modify_memic(b, 2, dm, 0, unused), kStatusBadParameter) << "no such op_mod";
  EXPECT_EQ(dealloc_memic(b, dm, 4096), 0);
  EXPECT_FALSE(m.operate(test_and_set + 7, true, std::span(&got, 1))) << "the allocation took its operations along";
  EXPECT_EQ(got, 0);
}

TEST_F(DeviceMemoryTest, AFullRangeAnswersNoResourcesAndBadFreesAreRefused) {
  uint64_t placed = 0;
  EXPECT_EQ(alloc_memic(b, dm, 4096, 64, 0, placed), kStatusNoResources) << "the driver's next page, then";
  EXPECT_EQ(alloc_memic(b, window.bar_offset + window.bytes, 4096, 64, 0, placed), kStatusBadParameter);
  EXPECT_EQ(dealloc_memic(b, dm, 64), kStatusBadParameter);
  uint32_t k = 0;
  EXPECT_EQ(reg_dm_mr(b, window.bar_offset + window.bytes - 64, 128, k), kStatusBadParameter) << "past the window";
  EXPECT_EQ(reg_dm_mr(b, 0x4000, 64, k), kStatusBadParameter) << "a UAR page is no device memory";
  EXPECT_EQ(reg_dm_mr(b, dm, 0, k), 0) << "an empty DM MR (rdma-core's test_create_dm_mr makes one)";
  EXPECT_EQ(dealloc_memic(b, dm, 4096), 0);
}

TEST_F(DeviceMemoryTest, AWriteWithImmediateLandsInTheRespondersDeviceMemory) {
  const uint16_t r = b.post_recv(*c.b, {});
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWriteImm, .sges = {{src.va(0), 3000, src.key}}, .remote_va = 96,
                     .rkey = key, .imm = 0x1234});
  p.pump();
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, 0u);
  const auto got = b.drain(*c.b->rcq);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wqe_counter, r);
  EXPECT_EQ(got[0].byte_cnt, 3000u);
  EXPECT_EQ(got[0].imm, 0x1234u);
  const auto sent_bytes = pattern(4096, 5);
  EXPECT_EQ(device_bytes(b, dm + 96, 3000), std::vector<uint8_t>(sent_bytes.begin(), sent_bytes.begin() + 3000));
  EXPECT_EQ(device_bytes(b, dm, 96), std::vector<uint8_t>(96, 0)) << "va 0 is the key's first byte (zero-based)";
}

TEST_F(DeviceMemoryTest, ReadsSendsAndAtomicsUseTheDeviceMemory) {
  const auto data = pattern(512, 11);
  b.f.device_memory.write(dm - window.bar_offset, data);
  // READ from B's device memory into A's host memory.
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(1024), 512, src.key}}, .remote_va = 0, .rkey = key});
  p.pump();
  ASSERT_EQ(a.drain(*c.a->scq).size(), 1u);
  EXPECT_EQ(a.get(src, 1024, 512), std::vector<uint8_t>(data.begin(), data.end()));
  // A SEND gathered from B's device memory lands in A's receive buffer.
  a.post_recv(*c.a, {{src.va(2048), 512, src.key}});
  b.post_send(*c.b, {.opcode = wqe_op::kSend, .sges = {{128, 256, key}}});
  p.pump();
  ASSERT_EQ(b.drain(*c.b->scq).size(), 1u);
  ASSERT_EQ(a.drain(*c.a->rcq).size(), 1u);
  EXPECT_EQ(a.get(src, 2048, 256), std::vector<uint8_t>(data.begin() + 128, data.begin() + 384));
  // A fetch-and-add on a word of B's device memory.
  std::array<uint8_t, 8> word{};
  store_le64(word.data(), 41);  // a word in the responder's byte order, as RdmaNode::put64
  b.f.device_memory.write(dm - window.bar_offset + 1024, word);
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(64), 8, src.key}}, .remote_va = 1024, .rkey = key,
                     .swap_add = 1});
  p.pump();
  ASSERT_EQ(a.drain(*c.a->scq).size(), 1u);
  EXPECT_EQ(load_le64(device_bytes(b, dm + 1024, 8).data()), 42u);
  EXPECT_EQ(a.get64(src, 64), 41u) << "the original value came back";
}

TEST_F(DeviceMemoryTest, BeyondTheKeysLengthIsARemoteAccessError) {
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = 4096 - 32, .rkey = key});
  p.pump();
  const auto done = a.drain(*c.a->scq);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done[0].opcode, kCqeReqErr);
  EXPECT_EQ(done[0].syndrome, kSynRemoteAccess);
}

TEST(DeviceMemoryProtection, APhysicalAddressKeyCannotReachTheDeviceMemory) {
  Resources r;
  r.pds.insert({});
  Mkey pa;
  pa.pd = 1;
  pa.length64 = true;
  pa.local_write = true;
  const uint32_t index = r.mkeys.insert(std::move(pa));
  std::vector<DmaChunk> out;
  EXPECT_EQ(translate(r, index << 8, 1, kDeviceMemoryAddress, 64, access::kLocalWrite, out),
            ProtectionError::kTranslation);
  EXPECT_EQ(translate(r, index << 8, 1, kDeviceMemoryAddress - 32, 64, access::kLocalWrite, out),
            ProtectionError::kTranslation);
  EXPECT_EQ(translate(r, index << 8, 1, 0x1000, 64, access::kLocalWrite, out), ProtectionError::kNone);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
