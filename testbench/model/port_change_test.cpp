// A PAOS write that changes the port's operational state posts a PORT_CHANGE EQE on every EQ that
// subscribed to it (mlx5e's async EQ), which is how the driver learns to re-read its carrier.
#include <gtest/gtest.h>

#include "testbench/model/resource_fixture.h"

namespace hcaemu::model {
namespace {

std::vector<uint8_t> paos_write(uint8_t admin_status) {
  std::vector<uint8_t> in(0x10 + 0x10, 0);
  store_be16(&in[0x0a], 0x5006);                         // register_id PAOS
  store_be32(&in[0x10], (1u << 16) | (uint32_t(admin_status) << 8));  // local_port 1, admin_status
  store_be32(&in[0x14], 0x80000000u);                    // ase: admin_status is valid
  return in;
}

TEST(PortChange, PaosDownAndUpPostEventsToTheAsyncEq) {
  test::TestFunction t;
  const uint64_t ring = t.page();
  const uint32_t uar = t.alloc(0x802);
  const uint32_t eqn = t.create_eq(6, uar, 0, 1ull << 0x09, {ring});
  ASSERT_NE(eqn, 0u);
  ASSERT_EQ(t.run(0x805, paos_write(2), 0x20, 0), 0) << "PAOS admin down";
  auto eqe = t.read(ring, 64);
  EXPECT_EQ(eqe[0x01], 0x09) << "PORT_CHANGE";
  EXPECT_EQ(eqe[0x03], 1) << "sub_type DOWN";
  EXPECT_EQ(eqe[0x28], 0x10) << "port 1 in data byte 8, bits 7:4";
  ASSERT_EQ(t.run(0x805, paos_write(1), 0x20, 0), 0) << "PAOS admin up";
  eqe = t.read(ring + 64, 64);
  EXPECT_EQ(eqe[0x01], 0x09);
  EXPECT_EQ(eqe[0x03], 4) << "sub_type ACTIVE";
  ASSERT_EQ(t.run(0x805, paos_write(1), 0x20, 0), 0) << "no change, no event";
  eqe = t.read(ring + 128, 64);
  EXPECT_NE(eqe[0x01], 0x09);
}

// Issue 15: the physical link (the uplink's carrier) takes the port down and up whatever PAOS
// asks; the driver hears each change on its async EQ and reads the vport state from it, and a
// function reset keeps the link as it is (a cable does not plug itself back in).
TEST(PortChange, ThePhysicalLinkTakesThePortDownAndUp) {
  test::TestFunction t;
  const uint64_t ring = t.page();
  const uint32_t uar = t.alloc(0x802);
  ASSERT_NE(t.create_eq(6, uar, 0, 1ull << 0x09, {ring}), 0u);
  t.f.hca_initialized = true;
  auto vport_up = [&] {
    EXPECT_EQ(t.run(0x750, std::vector<uint8_t>(0x10, 0), 0x10), 0) << "QUERY_VPORT_STATE";
    return (t.out32(0x0c) & 0xf) == 1;
  };
  ASSERT_TRUE(vport_up());
  ASSERT_TRUE(t.f.port.set_link(false));
  post_port_change(t.f);
  auto eqe = t.read(ring, 64);
  EXPECT_EQ(eqe[0x01], 0x09);
  EXPECT_EQ(eqe[0x03], 1) << "DOWN";
  EXPECT_FALSE(vport_up());
  ASSERT_EQ(t.run(0x805, paos_write(1), 0x20, 0), 0) << "PAOS admin up while the link is down";
  EXPECT_FALSE(t.f.port.state().up());
  EXPECT_NE(t.read(ring + 64, 64)[0x01], 0x09) << "no change, no event";
  t.f.port.reset();
  EXPECT_FALSE(t.f.port.state().up()) << "a reset keeps the link down";
  EXPECT_FALSE(t.f.port.set_link(false));
  ASSERT_TRUE(t.f.port.set_link(true));
  post_port_change(t.f);
  eqe = t.read(ring + 64, 64);
  EXPECT_EQ(eqe[0x03], 4) << "ACTIVE";
  EXPECT_TRUE(vport_up());
}

}  // namespace
}  // namespace hcaemu::model

namespace hcaemu::model {
namespace {

TEST(QCounters, AllocQueryDeallocAndForeignIds) {
  test::TestFunction a, b;
  ASSERT_EQ(a.run(0x771), 0);
  const uint32_t id = a.out32(0x08) & 0xff;
  EXPECT_NE(id, 0u);
  std::vector<uint8_t> query(0x20, 0);
  store_be32(&query[0x1c], id);
  EXPECT_EQ(a.run(0x773, query, 0x100), 0);
  EXPECT_EQ(b.run(0x773, query, 0x100), uint8_t(CommandStatus::kBadResource)) << "another function's set";
  std::vector<uint8_t> dealloc(0x10, 0);
  store_be32(&dealloc[0x08], id);
  EXPECT_EQ(a.run(0x772, dealloc), 0);
  EXPECT_EQ(a.run(0x772, dealloc), uint8_t(CommandStatus::kBadResource)) << "twice";
  std::vector<uint8_t> with_uid(0x10, 0);
  store_be16(&with_uid[2], 5);
  EXPECT_EQ(a.run(0x771, with_uid), uint8_t(CommandStatus::kBadParameter)) << "uid != 0 (no DEVX)";
  EXPECT_EQ(a.run(0x773, query, 0x20), uint8_t(CommandStatus::kBadOutputLength));
}

}  // namespace
}  // namespace hcaemu::model

namespace hcaemu::model {
namespace {

TEST(MadIfc, EveryMadGetsAnUnsupportedGetResp) {
  test::TestFunction t;
  std::vector<uint8_t> in(0x110, 0);
  in[0x10 + 1] = 0x01;  // LID-routed SM class
  in[0x10 + 3] = 0x01;  // Get
  store_be16(&in[0x10 + 0x10], 0x0015);  // PortInfo
  ASSERT_EQ(t.run(0x50d, in, 0x110, 3), 0);
  EXPECT_EQ(t.out[0x10 + 3], 0x81) << "GetResp";
  EXPECT_EQ(load_be16(&t.out[0x10 + 4]), 0x000c) << "unsupported method/attribute";
  EXPECT_EQ(load_be16(&t.out[0x10 + 0x10]), 0x0015) << "attribute echoed";
  EXPECT_EQ(t.run(0x50d, std::vector<uint8_t>(0x20, 0), 0x110, 3), uint8_t(CommandStatus::kBadInputLength));
}

}  // namespace
}  // namespace hcaemu::model
