// General objects (firmware/general_objects.cpp): blocks of reserved QP numbers, the IDs they hold
// back from the QP table (objects/object_table.h hold_block), address-to-QP mappings
// (firmware/av_qp_mappings.cpp), and the caps that offer them.
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

// create_av_qp_mapping_in as libmlx5's mlx5dv_map_ah_to_qp fills it.
std::vector<uint8_t> av_qp_mapping(uint16_t uid, uint32_t qpn, uint8_t sl, uint8_t gid_index) {
  auto in = header(uid, kObjTypeAvQpMapping);
  in.resize(0x50);
  store_be32(&in[0x1c], qpn);
  store_be32(&in[0x2c], uint32_t(sl) << 24);
  store_be32(&in[0x3c], uint32_t(gid_index) << 20);
  for (int i = 0; i < 16; ++i) in[0x40 + i] = uint8_t(0xa0 + i);
  return in;
}

TEST_F(ReservedQpns, AnAddressMapsToAnotherProcesssQpAndIsKeptUntilDestroyed) {
  const uint32_t qpn = t.f.resources.qps.insert({});  // the kernel's, or another process's
  ASSERT_EQ(run(kCreate, av_qp_mapping(uid, qpn, 3, 1)), kOk);
  const uint32_t id = t.out32(0x08);
  ASSERT_NE(id, 0u);
  ASSERT_EQ(t.run(kQuery, header(uid, kObjTypeAvQpMapping, id), 0x50, kObjTypeAvQpMapping), kOk);
  EXPECT_EQ(t.out32(0x08), id);
  EXPECT_EQ(t.out32(0x1c), qpn);
  EXPECT_EQ(t.out32(0x2c) >> 24, 3u) << "sl_or_eth_prio";
  EXPECT_EQ((t.out32(0x3c) >> 20) & 0xff, 1u) << "src_addr_index";
  EXPECT_EQ(t.out32(0x40), 0xa0a1a2a3u) << "rgid";
  t.f.resources.qps.erase(qpn);
  EXPECT_EQ(t.run(kQuery, header(uid, kObjTypeAvQpMapping, id), 0x50, kObjTypeAvQpMapping), kOk)
      << "a QP's destruction leaves it";
  EXPECT_EQ(run(kModify, header(uid, kObjTypeAvQpMapping, id)), kBadParameter) << "nothing to modify";
  auto destroy_uctx = TestFunction::input(16);
  store_be32(&destroy_uctx[8], uid);
  EXPECT_EQ(t.run(kDestroyUctx, destroy_uctx), kBadResourceState) << "the context owns it";
  EXPECT_EQ(run(kDestroy, header(uid, kObjTypeAvQpMapping, id)), kOk);
  EXPECT_EQ(run(kDestroy, header(uid, kObjTypeAvQpMapping, id)), kBadResource) << "twice";
}

TEST_F(ReservedQpns, AMappingToNoQpOrAnUnknownGidIndexIsRefused) {
  const uint32_t qpn = t.f.resources.qps.insert({});
  EXPECT_EQ(run(kCreate, av_qp_mapping(uid, qpn + 1, 0, 0)), kBadResource) << "no such QP";
  EXPECT_EQ(run(kCreate, av_qp_mapping(uid, 0xffffffff, 0, 0)), kBadResource);
  t.f.resources.limits.roce_address_table_size = 4;
  EXPECT_EQ(run(kCreate, av_qp_mapping(uid, qpn, 0, 4)), kBadParameter) << "GID index beyond the table";
  auto short_input = av_qp_mapping(uid, qpn, 0, 0);
  short_input.resize(0x40);
  EXPECT_NE(run(kCreate, short_input), kOk) << "the address cut off";
  EXPECT_EQ(t.f.resources.av_qp_mappings.size(), 0u);
  ASSERT_EQ(t.run(kCreateUctx, TestFunction::input(0x20)), kOk);
  const uint16_t other = uint16_t(t.out32(0x08));
  ASSERT_EQ(run(kCreate, av_qp_mapping(uid, qpn, 0, 0)), kOk);
  const uint32_t id = t.out32(0x08);
  EXPECT_EQ(run(kDestroy, header(other, kObjTypeAvQpMapping, id)), kBadResource) << "another process's mapping";
  EXPECT_EQ(t.run(kQuery, header(other, kObjTypeAvQpMapping, id), 0x50, kObjTypeAvQpMapping), kBadResource);
}

TEST_F(ReservedQpns, TheCapsOfferThemSchedulingElementsAndAvQpMappings) {
  ASSERT_EQ(t.run(kQueryHcaCap, TestFunction::input(16), 0x1010, 1), kOk);  // general, current
  EXPECT_EQ(t.out32(0x10 + 0x04) >> 31, 1u) << "hca_cap_2";
  EXPECT_EQ(t.out32(0x10 + 0x80), 1u << (kObjTypeReservedQpn - 32) | 1u << (kObjTypeSchedulingElement - 32) |
                                      1u << (kObjTypeAvQpMapping - 32))
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
