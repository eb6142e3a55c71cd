// Virtio access regions (issue 16: rdma-core's test_mlx5_var, mlx5dv_alloc_var): where the VARs sit
// in BAR0, the caps that tell mlx5_ib (and offer no virtio queue), UAR pages that stay out of them,
// and stores to a VAR counted and dropped.
#include "common/endian.h"
#include "model/firmware/hca_caps.h"
#include "model/queues/doorbell_unit.h"
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kQueryHcaCap = 0x100, kAllocUar = 0x802, kCreateGeneralObject = 0xa00;

TEST(VarWindow, SixteenPagesJustBelowWhereTheUarsWouldEnd) {
  constexpr VarWindow w = var_window(32 << 20);
  EXPECT_EQ(w.bytes, 16u * 4096);
  EXPECT_EQ(w.bar_offset, (32u << 20) - 16 * 4096);
  EXPECT_TRUE(w.contains(w.bar_offset + w.bytes - 1));
  EXPECT_FALSE(w.contains(w.bar_offset + w.bytes));
  EXPECT_EQ(var_window(64 << 10).bytes, 0u) << "too small a BAR has none";
  FunctionIdentity id;
  id.lay_out_bar0(32 << 20);
  EXPECT_EQ(id.var.bar_offset + id.var.bytes, id.memic.ops_offset) << "right below the device memory's mirrors";
  EXPECT_EQ(id.uar_end(32 << 20), id.var.bar_offset);
}

TEST(VarWindow, CapsTellWhereTheVarsAreAndOfferNoVirtioQueue) {
  TestFunction t;
  const VarWindow& var = t.f.identity.var;
  ASSERT_NE(var.bytes, 0u);
  ASSERT_EQ(t.run(kQueryHcaCap, TestFunction::input(0x10), 0x1010, uint16_t(CapType::kGeneral) << 1 | 1), kOk);
  EXPECT_EQ(load_be32(&t.out[0x10 + 0x84]) >> kObjTypeVirtioNetQueue & 1, 1u) << "general_obj_types: virtio net queue";
  ASSERT_EQ(t.run(kQueryHcaCap, TestFunction::input(0x10), 0x1010, uint16_t(CapType::kVirtioEmulation) << 1 | 1), kOk);
  const uint8_t* cap = &t.out[0x10];
  EXPECT_EQ(cap[0x02], 0) << "event_mode: none, so mlx5_core adds no vDPA device";
  EXPECT_EQ(cap[0x03], 0) << "virtio_queue_type: none";
  EXPECT_EQ(cap[0x06] & 0x1f, kLogVarStride) << "log_doorbell_stride";
  EXPECT_EQ(4096u << (cap[0x07] & 0x1f), var.bytes) << "log_doorbell_bar_size";
  EXPECT_EQ(load_be64(cap + 0x08), var.bar_offset) << "doorbell_bar_offset";
  // A virtio queue cannot be created: the type is refused as an unknown one.
  auto in = TestFunction::input(0x80);
  store_be16(&in[6], kObjTypeVirtioNetQueue);
  EXPECT_EQ(t.run(kCreateGeneralObject, in, 16, kObjTypeVirtioNetQueue), kBadParameter);
}

TEST(VarWindow, UarPagesStayOutAndStoresToAVarAreDropped) {
  TestFunction t;
  const VarWindow& var = t.f.identity.var;
  ASSERT_NE(t.alloc(kAllocUar), 0u);
  EXPECT_TRUE(t.f.resources.uars.in_range(uint32_t(var.bar_offset / 4096 - 1)));
  EXPECT_FALSE(t.f.resources.uars.in_range(uint32_t(var.bar_offset / 4096))) << "no UAR page in the VARs";
  DoorbellUnit unit;
  const std::vector<uint8_t> store(8, 0xab);
  unit.write(t.f, var.bar_offset + 5 * 4096, store);
  unit.write(t.f, var.bar_offset + var.bytes - 8, store);
  EXPECT_EQ(unit.counters().var_writes, 2u);
  EXPECT_EQ(unit.counters().unallocated_uar + unit.counters().malformed + unit.counters().sq_doorbells, 0u);
}

}  // namespace
}  // namespace hcaemu::model::test
