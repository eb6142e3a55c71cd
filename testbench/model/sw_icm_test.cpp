// Steering ICM (objects/sw_icm.h, firmware/sw_icm.cpp): the ranges the driver places with SW_ICM
// general objects, keys of access mode SW_ICM over them, and the data path writing and reading the
// ICM as mlx5 DR does (RDMA WRITE of its STEs through such a key, RDMA READ back). Checked on the
// ICM itself. Offered only with FunctionIdentity::sw_icm; without it the type and the mode are refused.
#include <systemc>

#include "model/firmware/hca_caps.h"
#include "model/objects/sw_icm.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kCreateGeneralObject = 0xa00, kQueryGeneralObject = 0xa02, kDestroyGeneralObject = 0xa03,
                   kCreateMkey = 0x200, kQueryHcaCap = 0x100, kSwIcmType = 0x8;
constexpr uint8_t kStatusBadParameter = 0x3, kStatusBadResource = 0x5;

uint8_t create_icm(RdmaNode& n, uint64_t start, uint32_t log_size, uint32_t& id) {
  auto in = HostFunction::input(0x50);
  in[0x18 + 3] = uint8_t(log_size);
  store_be64(&in[0x20], start);
  const uint8_t status = n.run(kCreateGeneralObject, in, 0x10, kSwIcmType);
  id = load_be32(&n.out[0x08]);
  return status;
}

uint8_t destroy_icm(RdmaNode& n, uint32_t id) {
  auto in = HostFunction::input(0x10);
  store_be32(&in[0x08], id);
  return n.run(kDestroyGeneralObject, in, 0x10, kSwIcmType);
}

// CREATE_MKEY as mlx5_ib_get_dm_mr builds it for a steering ICM DM: access mode SW_ICM (4).
uint8_t reg_icm_mr(RdmaNode& n, uint64_t icm_address, uint64_t length, uint32_t& key) {
  auto in = HostFunction::input(0x110);
  const uint8_t variant = 0x3c;
  store_be32(&in[0x10], (1u << 26) | access_bits::kAll | access_bits::kLocalRead);  // 4 = 0b1'00
  store_be32(&in[0x14], 0xffffff00u | variant);
  store_be32(&in[0x1c], n.pd);
  store_be64(&in[0x20], icm_address);
  store_be64(&in[0x28], length);
  const uint8_t status = n.run(kCreateMkey, in, 0x10);
  key = (load_be32(&n.out[0x08]) << 8) | variant;
  return status;
}

std::vector<uint8_t> icm_bytes(RdmaNode& n, uint64_t address, size_t size) {
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(n.f.sw_icm.read(address, out));
  return out;
}

TEST(SwIcm, PlacesAlignedRangesInsideTheRegionsAndZeroesWhatGoes) {
  SwIcm icm;
  const uint64_t base = kSteeringIcm.start;
  EXPECT_TRUE(icm.place(base, 16));
  EXPECT_FALSE(icm.place(base + 0x8000, 15)) << "overlaps the first";
  EXPECT_FALSE(icm.place(base + 0x11000, 13)) << "not aligned to its size";
  EXPECT_FALSE(icm.place(base + 0x10000, 11)) << "smaller than a block";
  EXPECT_FALSE(icm.place(base - 0x10000, 16)) << "below the region";
  EXPECT_FALSE(icm.place(base + (uint64_t(1) << kSteeringIcm.log_size), 16)) << "past it";
  EXPECT_TRUE(icm.place(kHeaderModifyIcm.start, 12)) << "the header-modify region";
  EXPECT_TRUE(icm.place(kHeaderModifyPatternIcm.start, 16)) << "the pattern region";
  const std::vector<uint8_t> ste(64, 0xab);
  EXPECT_TRUE(icm.write(base + 0xffe0, ste) == false) << "across the end of the range";
  ASSERT_TRUE(icm.write(base + 0xfc0, ste));
  EXPECT_EQ(icm.pages_written(), 1u);
  std::vector<uint8_t> back(128);
  ASSERT_TRUE(icm.read(base + 0xf80, back));
  EXPECT_EQ(std::count(back.begin(), back.end(), 0xab), 64) << "unwritten bytes read as zero";
  EXPECT_TRUE(icm.remove(base));
  EXPECT_FALSE(icm.read(base + 0xfc0, back)) << "no longer placed";
  ASSERT_TRUE(icm.place(base, 16));
  ASSERT_TRUE(icm.read(base + 0xfc0, back));
  EXPECT_EQ(std::count(back.begin(), back.end(), 0), 128) << "what went is gone";
  EXPECT_EQ(icm.pages_written(), 0u);
}

struct SwIcmTest : ConnectedPairTest<> {
  SwIcmTest() { b.f.identity.sw_icm = true; }
};

TEST_F(SwIcmTest, CapsAnnounceTheRegionsOnlyWhenOffered) {
  auto in = HostFunction::input(0x10);
  ASSERT_EQ(b.run(kQueryHcaCap, in, 0x1010, uint16_t(CapType::kGeneral) << 1 | 1), 0);
  EXPECT_EQ((load_be32(&b.out[0x10 + 0x84]) >> kSwIcmType) & 1, 1) << "general_obj_types.sw_icm";
  ASSERT_EQ(b.run(kQueryHcaCap, in, 0x1010, uint16_t(CapType::kDeviceMemory) << 1 | 1), 0);
  const uint8_t* cap = &b.out[0x10];
  EXPECT_EQ(load_be64(cap + 0x18), kSteeringIcm.start);
  EXPECT_EQ(cap[0x23], kSteeringIcm.log_size);
  EXPECT_EQ(cap[0x21], kHeaderModifyIcm.log_size);
  EXPECT_EQ(cap[0x22] & 0x3f, kLogSwIcmBlock);
  EXPECT_EQ(load_be64(cap + 0x28), kHeaderModifyIcm.start);
  EXPECT_EQ(cap[0x27], kHeaderModifyPatternIcm.log_size) << "DR wants it even without argument objects";
  EXPECT_EQ(load_be64(cap + 0x38), kHeaderModifyPatternIcm.start);
  ASSERT_EQ(a.run(kQueryHcaCap, in, 0x1010, uint16_t(CapType::kGeneral) << 1 | 1), 0);
  EXPECT_EQ((load_be32(&a.out[0x10 + 0x84]) >> kSwIcmType) & 1, 0) << "not offered on A";
  uint32_t id = 0;
  EXPECT_EQ(create_icm(a, kSteeringIcm.start, 16, id), kStatusBadParameter) << "a type A lacks";
}

TEST_F(SwIcmTest, ObjectsPlaceQueryAndFreeRanges) {
  uint32_t id = 0, other = 0;
  ASSERT_EQ(create_icm(b, kSteeringIcm.start, 20, id), 0);
  EXPECT_EQ(create_icm(b, kSteeringIcm.start + 0x1000, 12, other), kStatusBadParameter) << "inside the first";
  auto query = HostFunction::input(0x10);
  store_be32(&query[0x08], id);
  ASSERT_EQ(b.run(kQueryGeneralObject, query, 0x50, kSwIcmType), 0);
  EXPECT_EQ(b.out[0x18 + 3], 20);
  EXPECT_EQ(load_be64(&b.out[0x20]), kSteeringIcm.start);
  EXPECT_EQ(destroy_icm(b, id), 0);
  EXPECT_EQ(destroy_icm(b, id), kStatusBadResource) << "twice";
  EXPECT_EQ(create_icm(b, kSteeringIcm.start + 0x1000, 12, other), 0) << "the range is free again";
  EXPECT_EQ(b.f.sw_icm.ranges(), 1u);
}

// DR's send ring writes an STE into the ICM with RDMA WRITE through the ICM key (zero-based: the
// address is an offset into the MR) and reads it back.
TEST_F(SwIcmTest, RdmaWritesAndReadsTheIcmThroughASwIcmKey) {
  uint32_t id = 0, key = 0;
  const uint64_t base = kSteeringIcm.start + 0x40000;
  ASSERT_EQ(create_icm(b, base, 16, id), 0);
  ASSERT_EQ(reg_icm_mr(b, base, 0x10000, key), 0);
  a.put(src, 0, pattern(256, 7));
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 256, src.key}}, .remote_va = 0x100,
                     .rkey = key});
  p.pump();
  ASSERT_EQ(a.drain(*c.a->scq).size(), 1u);
  EXPECT_EQ(icm_bytes(b, base + 0x100, 256), pattern(256, 7));
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(1024), 256, src.key}}, .remote_va = 0x100,
                     .rkey = key});
  p.pump();
  const auto read = a.drain(*c.a->scq);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].opcode, 0u);
  EXPECT_EQ(a.get(src, 1024, 256), pattern(256, 7));
}

TEST_F(SwIcmTest, KeysOutsidePlacedIcmAreRefused) {
  uint32_t id = 0, key = 0;
  ASSERT_EQ(create_icm(b, kSteeringIcm.start, 12, id), 0);
  EXPECT_EQ(reg_icm_mr(b, kSteeringIcm.start, 0x2000, key), kStatusBadParameter) << "past the range";
  EXPECT_EQ(reg_icm_mr(b, kHeaderModifyIcm.start, 0x40, key), kStatusBadParameter) << "nothing placed there";
  EXPECT_EQ(reg_icm_mr(a, kSteeringIcm.start, 0x40, key), kStatusBadParameter) << "A has no ICM";
  ASSERT_EQ(reg_icm_mr(b, kSteeringIcm.start, 0x1000, key), 0);
  ASSERT_EQ(destroy_icm(b, id), 0);
  // The range went under the key: an access through it fails (a remote access error), never lands anywhere.
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}},
                     .remote_va = 0, .rkey = key});
  p.pump();
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_NE(sent[0].opcode, 0u);
  EXPECT_EQ(b.f.sw_icm.pages_written(), 0u);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
