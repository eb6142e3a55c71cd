// General objects (firmware/general_objects.cpp): blocks of reserved QP numbers, the IDs they hold
// back from the QP table (objects/object_table.h hold_block), and the caps that offer them.
#include "common/endian.h"
#include "model/firmware/hca_caps.h"
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kCreateUctx = 0xa04, kDestroyUctx = 0xa06, kQueryHcaCap = 0x100;
constexpr uint16_t kCreate = 0xa00, kModify = 0xa01, kQuery = 0xa02, kDestroy = 0xa03;

// general_obj_in_cmd_hdr: uid, obj_type, obj_id, log_obj_range.
std::vector<uint8_t> header(uint16_t uid, uint16_t obj_type, uint32_t obj_id = 0, uint32_t log_range = 0) {
  auto in = TestFunction::input(16);
  store_be16(&in[2], uid);
  store_be16(&in[6], obj_type);
  store_be32(&in[8], obj_id);
  store_be32(&in[12], log_range << 24);
  return in;
}

struct ReservedQpns : ::testing::Test {
  TestFunction t;
  uint16_t uid = 0;

  void SetUp() override {
    t.f.resources.limits.log_max_uctx = 4;
    ASSERT_EQ(t.run(kCreateUctx, TestFunction::input(0x20)), kOk);
    uid = uint16_t(t.out32(0x08));
  }
  // Runs a general-object command; the header's op_mod field is the obj_type, so it is not
  // passed again as an op_mod.
  uint8_t run(uint16_t opcode, std::vector<uint8_t> in) {
    const uint16_t obj_type = load_be16(&in[6]);
    return t.run(opcode, std::move(in), 16, obj_type);
  }
  uint32_t reserve(uint32_t log_range, uint16_t owner) {
    EXPECT_EQ(run(kCreate, header(owner, kObjTypeReservedQpn, 0, log_range)), kOk);
    return t.out32(0x08);
  }
};

TEST_F(ReservedQpns, ABlockIsAlignedAndNoQpGetsItsNumbers) {
  auto& qps = t.f.resources.qps;
  const uint32_t before = qps.insert({});  // a QP at the start of the range
  const uint32_t first = reserve(kLogReservedQpnGranularity, uid);
  const uint32_t count = 1u << kLogReservedQpnGranularity;
  ASSERT_NE(first, 0u);
  EXPECT_EQ(first % count, 0u) << "aligned to its size";
  EXPECT_FALSE(first <= before && before < first + count) << "not over a live QP";
  for (int i = 0; i < 64; ++i) {
    const uint32_t qpn = qps.insert({});
    EXPECT_FALSE(qpn >= first && qpn < first + count) << "QPN " << qpn << " is reserved";
  }
  const uint32_t second = reserve(kLogReservedQpnMaxAlloc, uid);
  EXPECT_EQ(second % (1u << kLogReservedQpnMaxAlloc), 0u);
  EXPECT_TRUE(second >= first + count || second + (1u << kLogReservedQpnMaxAlloc) <= first) << "blocks never overlap";
}

TEST_F(ReservedQpns, DestroyedOnceByItsOwnerOrTheKernel) {
  const uint32_t first = reserve(kLogReservedQpnGranularity, uid);
  ASSERT_EQ(t.run(kCreateUctx, TestFunction::input(0x20)), kOk);
  const uint16_t other = uint16_t(t.out32(0x08));
  EXPECT_EQ(run(kDestroy, header(other, kObjTypeReservedQpn, first)), kBadResource) << "another process's";
  EXPECT_EQ(run(kQuery, header(uid, kObjTypeReservedQpn, first)), kOk);
  EXPECT_EQ(t.out32(0x08), first);
  EXPECT_EQ(run(kModify, header(uid, kObjTypeReservedQpn, first)), kBadParameter) << "nothing to modify";
  EXPECT_EQ(run(kDestroy, header(uid, kObjTypeReservedQpn, first + 1)), kBadResource) << "not a block's first";
  EXPECT_EQ(run(kDestroy, header(uid, kObjTypeReservedQpn, first)), kOk);
  EXPECT_EQ(run(kDestroy, header(uid, kObjTypeReservedQpn, first)), kBadResource) << "twice";
  const uint32_t kernels = reserve(kLogReservedQpnGranularity, 0);
  EXPECT_EQ(run(kDestroy, header(0, kObjTypeReservedQpn, kernels)), kOk);
  EXPECT_FALSE(t.f.resources.qps.held(first)) << "the numbers are free again";
}

TEST_F(ReservedQpns, SizesOutsideTheCapsAndOtherTypesAreRefused) {
  if (kLogReservedQpnGranularity > 0) {
    EXPECT_EQ(run(kCreate, header(uid, kObjTypeReservedQpn, 0, kLogReservedQpnGranularity - 1)), kBadParameter);
  }
  EXPECT_EQ(run(kCreate, header(uid, kObjTypeReservedQpn, 0, kLogReservedQpnMaxAlloc + 1)), kBadParameter);
  for (uint16_t type : {uint16_t(0x000a), uint16_t(0x000d), uint16_t(0xffff)})  // SW ICM, virtio net queue, ...
    EXPECT_EQ(run(kCreate, header(uid, type, 0, kLogReservedQpnGranularity)), kBadParameter) << type;
  EXPECT_EQ(run(kCreate, header(uint16_t(uid + 1), kObjTypeReservedQpn, 0, kLogReservedQpnGranularity)),
            kBadParameter)
      << "an unknown uid";
}

TEST_F(ReservedQpns, AtMostTheCapOfNumbersAtOnce) {
  const uint32_t blocks = 1u << (kLogMaxNumReservedQpn - kLogReservedQpnMaxAlloc);
  std::vector<uint32_t> firsts;
  for (uint32_t i = 0; i < blocks; ++i) firsts.push_back(reserve(kLogReservedQpnMaxAlloc, uid));
  EXPECT_EQ(run(kCreate, header(uid, kObjTypeReservedQpn, 0, kLogReservedQpnGranularity)), kExceedLimit);
  EXPECT_EQ(run(kDestroy, header(uid, kObjTypeReservedQpn, firsts.back())), kOk);
  EXPECT_NE(reserve(kLogReservedQpnGranularity, uid), 0u) << "room again";
}

TEST_F(ReservedQpns, TheContextIsDestroyedOnlyAfterItsBlocks) {
  const uint32_t first = reserve(kLogReservedQpnGranularity, uid);
  auto destroy_uctx = TestFunction::input(16);
  store_be32(&destroy_uctx[8], uid);
  EXPECT_EQ(t.run(kDestroyUctx, destroy_uctx), kBadResourceState);
  ASSERT_EQ(run(kDestroy, header(uid, kObjTypeReservedQpn, first)), kOk);
  EXPECT_EQ(t.run(kDestroyUctx, destroy_uctx), kOk);
}

TEST_F(ReservedQpns, TheCapsOfferThemAndSchedulingElements) {
  ASSERT_EQ(t.run(kQueryHcaCap, TestFunction::input(16), 0x1010, 1), kOk);  // general, current
  EXPECT_EQ(t.out32(0x10 + 0x04) >> 31, 1u) << "hca_cap_2";
  EXPECT_EQ(t.out32(0x10 + 0x80), 1u << (kObjTypeReservedQpn - 32) | 1u << (kObjTypeSchedulingElement - 32))
      << "general_obj_types 63..32";
  EXPECT_EQ(t.out32(0x10 + 0x84), 1u << kObjTypeVirtioNetQueue) << "general_obj_types 31..0: VARs only (var_window_test)";
  ASSERT_EQ(t.run(kQueryHcaCap, TestFunction::input(16), 0x1010, (0x20 << 1) | 1), kOk);  // cmd_hca_cap_2
  const uint32_t dword = t.out32(0x10 + 0x10);
  EXPECT_EQ((dword >> 16) & 0x1f, kLogMaxNumReservedQpn);
  EXPECT_EQ((dword >> 8) & 0x1f, kLogReservedQpnGranularity);
  EXPECT_EQ(dword & 0x1f, kLogReservedQpnMaxAlloc);
  EXPECT_EQ(t.out32(0x10) >> 31, 0u) << "not migratable";
}

TEST(ObjectTableBlocks, HeldIdsAreSkippedAndCountedAsTheOwners) {
  ObjectTable<int> table{1, 64, 64};
  EXPECT_EQ(table.insert(0), 1u);
  const uint32_t block = table.hold_block(3, 7);
  EXPECT_EQ(block, 8u) << "the first aligned block clear of ID 1";
  EXPECT_EQ(table.owned_by(7), 1u);
  for (int i = 0; i < 55; ++i) {
    const uint32_t id = table.insert(i);
    ASSERT_NE(id, 0u);
    EXPECT_FALSE(id >= 8 && id < 16) << id;
  }
  EXPECT_EQ(table.insert(99), 0u) << "full: 56 objects and 8 held IDs";
  EXPECT_EQ(table.hold_block(3, 7), 0u) << "no free block left";
  EXPECT_TRUE(table.release_block(block));
  EXPECT_FALSE(table.release_block(block));
  EXPECT_NE(table.insert(100), 0u);
  table.clear();
  EXPECT_EQ(table.held_ids(), 0u);
}

}  // namespace
}  // namespace hcaemu::model::test
