// The hostile wire (hostile_wire.h) driven by a seeded generator for 3,000 rounds: every frame
// answered properly, B's memory intact, and B working normally afterwards.
#include <systemc>

#include <random>

#include "testbench/model/hostile_wire.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

struct WireFuzz : ::testing::Test {
  std::mt19937_64 generator{0x4057113};
  HostileWire w{[this] { return generator(); }};
};

TEST_F(WireFuzz, HostileFramesFromTheWire) {
  uint64_t good = 0, errors = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    SCOPED_TRACE(iteration);
    ASSERT_EQ(w.step(good, errors), "");
  }
  EXPECT_GT(good, 100u);
  EXPECT_GT(errors, 50u);
  EXPECT_GT(w.b.engine.counters().rx_packets, 3000u);
  EXPECT_GT(w.b.engine.counters().dc_connections_accepted, 10u) << "the DCT was reached";
  EXPECT_GT(w.b.engine.counters().dc_key_violations, 10u);
  EXPECT_EQ(w.memory_intact(), "");
  // And B still works: a clean SEND from A lands byte for byte.
  RdmaNode& a = w.a;
  RdmaNode& b = w.b;
  w.p.reconnect(w.rc, {});
  b.drain(*w.rc.b->rcq);
  const auto data = pattern(3000, 9);
  a.put(w.a_region, 0, data);
  const uint16_t index = b.post_recv(*w.rc.b, {{w.region.va(100), 4000, w.region.key}});
  a.post_send(*w.rc.a, {.sges = {{w.a_region.va(0), 3000, w.a_region.key}}});
  w.p.pump();
  const auto recv = b.drain(*w.rc.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].opcode, 0x2);
  EXPECT_EQ(recv[0].wqe_counter, index);
  EXPECT_EQ(b.get(w.region, 100, 3000), data);
  // And the DCT too: a clean DC SEND lands in its SRQ.
  b.drain(w.b_dc_cq);
  a.drain(w.a_dc_cq);
  a.to_reset(w.dci);
  a.bring_up_dci(w.dci, {}, 0x1234);
  Wr dc{.sges = {{w.a_region.va(0), 3000, w.a_region.key}}};
  dc.av = a.dc_address_vector(b, w.dctn, kDcKey);
  w.keep_receives_posted();
  a.post_send(w.dci, dc);
  w.p.pump();
  const auto dc_recv = b.drain(w.b_dc_cq);
  ASSERT_EQ(dc_recv.size(), 1u);
  EXPECT_EQ(dc_recv[0].opcode, 0x2);
  EXPECT_EQ(dc_recv[0].byte_cnt, 3000u);
  EXPECT_EQ(b.get(w.region, 0, 3000), data);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
