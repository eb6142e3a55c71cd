// Ethernet object commands (firmware/eth.cpp, firmware/eth_flow.cpp): lifecycle, references, state machines, bad input.
#include "testbench/model/eth_fixture.h"

namespace hcaemu::model::test {
namespace {


std::vector<uint8_t> with_number(uint32_t number, uint32_t size = 16) {
  auto in = TestFunction::input(size);
  store_be32(&in[8], number);
  return in;
}

TEST(EthObjects, TisCreateQueryDestroy) {
  EthFunction t;
  const uint32_t tis = t.create_tis();
  EXPECT_NE(tis, 0u);
  ASSERT_EQ(t.run(0x915, with_number(tis), 0x20 + 0xa0), kOk);
  EXPECT_EQ(t.out32(0x20 + 0x24) & 0xffffff, t.td);
  EXPECT_EQ(t.run(0x914, with_number(tis)), kOk);
  EXPECT_EQ(t.run(0x914, with_number(tis)), kBadResource);
  auto bad_td = TestFunction::input(0xc0);
  store_be32(&bad_td[0x44], 0x777);
  EXPECT_EQ(t.run(0x912, bad_td), kBadResource) << "unknown transport domain";
  EXPECT_EQ(t.run(0x912, TestFunction::input(0x20)), kBadInputLength);
}

TEST(EthObjects, RqStateMachineAndQuery) {
  EthFunction t;
  const uint32_t rqn = t.create_rq(t.page(), t.page());
  EXPECT_GE(rqn, kFirstRqn);
  EXPECT_EQ(t.f.resources.cqs.find(t.cqn)->refs, 1u);
  EXPECT_EQ(t.modify_state(0x909, rqn, 0, 3), kBadResourceState) << "RST -> ERR";
  EXPECT_EQ(t.modify_state(0x909, rqn, 1, 1), kBadResourceState) << "claimed state is not the current one";
  EXPECT_EQ(t.modify_state(0x909, rqn, 0, 2), kBadParameter) << "no state 2";
  EXPECT_EQ(t.modify_state(0x909, rqn, 0, 1), kOk);
  EXPECT_EQ(t.modify_state(0x909, rqn, 1, 3), kOk);
  EXPECT_EQ(t.modify_state(0x909, rqn, 3, 1), kBadResourceState) << "ERR -> RDY goes through RST";
  ASSERT_EQ(t.run(0x90b, with_number(rqn), 0x110), kOk);
  EXPECT_EQ((t.out32(0x20) >> 20) & 0xf, 3u);
  EXPECT_EQ(t.out32(0x28) & 0xffffff, t.cqn);
  EXPECT_EQ(t.modify_state(0x909, rqn, 3, 0), kOk);
  EXPECT_EQ(t.modify_state(0x909, rqn, 0, 1), kOk);
  EXPECT_EQ(t.run(0x90a, with_number(rqn)), kOk);
  EXPECT_EQ(t.f.resources.cqs.find(t.cqn)->refs, 0u);
  EXPECT_EQ(t.run(0x90a, with_number(rqn)), kBadResource);
}

TEST(EthObjects, RqChecksItsReferencesAndRing) {
  EthFunction t;
  EXPECT_EQ(t.run(0x908, t.queue_input(0x999, 4, 5, t.page(), {t.page()})), kBadResource) << "unknown CQ";
  EXPECT_EQ(t.run(0x908, t.queue_input(t.cqn, 4, 5, t.page() + 4, {t.page()})), kBadParameter) << "dbr misaligned";
  EXPECT_EQ(t.run(0x908, t.queue_input(t.cqn, 4, 2, t.page(), {t.page()})), kBadParameter) << "stride 4 bytes";
  EXPECT_EQ(t.run(0x908, t.queue_input(t.cqn, 17, 5, t.page(), {t.page()})), kBadParameter) << "ring too large";
  EXPECT_EQ(t.run(0x908, t.queue_input(t.cqn, 10, 6, t.page(), {t.page()})), kBadParameter) << "PAS too short";
  auto bad_pd = t.queue_input(t.cqn, 4, 5, t.page(), {t.page()});
  store_be32(&bad_pd[0x58], 0x4242);
  EXPECT_EQ(t.run(0x908, bad_pd), kBadResource);
  EXPECT_TRUE(t.f.eth.rqs.empty());
}

TEST(EthObjects, SqNeedsTisCqUarAndFollowsStates) {
  EthFunction t;
  const uint32_t tis = t.create_tis();
  const uint32_t sqn = t.create_sq(t.page(), t.page(), tis);
  EXPECT_GE(sqn, kFirstSqn);
  EXPECT_EQ(t.run(0x914, with_number(tis)), kBadResourceState) << "TIS in use by the SQ";
  auto no_uar = t.queue_input(t.cqn, 4, 6, t.page(), {t.page()});
  store_be32(&no_uar[0x5c], 0x55);
  EXPECT_EQ(t.run(0x904, no_uar), kBadResource);
  auto rq_stride = t.queue_input(t.cqn, 4, 5, t.page(), {t.page()});
  EXPECT_EQ(t.run(0x904, rq_stride), kBadParameter) << "SQ stride is one WQEBB";
  EXPECT_EQ(t.modify_state(0x905, sqn, 0, 1), kOk);
  EXPECT_EQ(t.f.eth.sqs.find(sqn)->state, WqState::kReady);
  ASSERT_EQ(t.run(0x907, with_number(sqn), 0x110), kOk);
  EXPECT_EQ((t.out32(0x20) >> 20) & 0xf, 1u);
  EXPECT_EQ(t.run(0x906, with_number(sqn)), kOk);
  EXPECT_EQ(t.run(0x914, with_number(tis)), kOk);
}

TEST(EthObjects, RqtAndTirReferenceRqs) {
  EthFunction t;
  const uint32_t rq1 = t.create_rq(t.page(), t.page());
  const uint32_t rq2 = t.create_rq(t.page(), t.page());
  ASSERT_EQ(t.run(0x916, t.rqt_input({rq1}, 4)), kOk);
  const uint32_t rqt = t.object();
  EXPECT_EQ(t.run(0x916, t.rqt_input({rq1, 0xe0ffff}, 4)), kBadResource) << "unknown RQ in the list";
  EXPECT_EQ(t.run(0x916, t.rqt_input({rq1, rq2}, 1)), kBadParameter) << "actual > max";
  ASSERT_EQ(t.run(0x900, t.tir_input(true, rqt)), kOk);
  const uint32_t tir = t.object();
  ASSERT_EQ(t.run(0x900, t.tir_input(false, rq2)), kOk);
  const uint32_t direct = t.object();
  EXPECT_EQ(t.run(0x900, t.tir_input(false, 0x1234)), kBadIndex) << "inline RQN outside the RQ range";
  EXPECT_EQ(t.run(0x90a, with_number(rq1)), kBadResourceState) << "RQ in an RQT";
  EXPECT_EQ(t.run(0x918, with_number(rqt)), kBadResourceState) << "RQT in a TIR";
  // MODIFY_RQT moves the list to rq2; rq1 becomes free.
  auto modify = t.rqt_input({rq2, rq2}, 0);
  store_be32(&modify[0x08], rqt);
  store_be64(&modify[0x10], 1);
  ASSERT_EQ(t.run(0x917, modify), kOk);
  ASSERT_EQ(t.run(0x919, with_number(rqt), 0x118), kOk);
  EXPECT_EQ(t.out32(0x38) & 0xffff, 2u);
  EXPECT_EQ(t.out32(0x110) & 0xffffff, rq2);
  EXPECT_EQ(t.run(0x90a, with_number(rq1)), kOk);
  ASSERT_EQ(t.run(0x903, with_number(tir), 0x110), kOk);
  EXPECT_EQ(t.out32(0x40) & 0xffffff, rqt);
  EXPECT_EQ(t.run(0x902, with_number(tir)), kOk);
  EXPECT_EQ(t.run(0x902, with_number(direct)), kOk);
  EXPECT_EQ(t.run(0x918, with_number(rqt)), kOk);
  EXPECT_EQ(t.run(0x90a, with_number(rq2)), kOk);
}

// rdma-core's DR tests create a TIR through DevX with no transport domain (0); an unknown one is refused.
TEST(EthObjects, ATirNeedNotNameATransportDomain) {
  EthFunction t;
  const uint32_t rq = t.create_rq(t.page(), t.page());
  auto in = t.tir_input(false, rq);
  store_be32(&in[0x44], 0);
  ASSERT_EQ(t.run(0x900, in), kOk);
  EXPECT_EQ(t.f.eth.tirs.find(t.object())->td, 0u);
  store_be32(&in[0x44], t.td + 9);
  EXPECT_EQ(t.run(0x900, in), kBadResource);
}

TEST(EthFlow, TablesGroupsEntriesAndReferences) {
  EthFunction t;
  const uint32_t rq = t.create_rq(t.page(), t.page());
  ASSERT_EQ(t.run(0x900, t.tir_input(false, rq)), kOk);
  const uint32_t tir = t.object();
  const uint32_t ft = t.create_flow_table(0, 4);
  const uint32_t ft2 = t.create_flow_table(0, 2, 1);
  const uint32_t g = t.create_group(0, ft, 0, 7, true);
  auto overlap = t.flow_input(0x400, 0, ft);
  store_be32(&overlap[0x1c], 7);
  store_be32(&overlap[0x24], 9);
  EXPECT_EQ(t.run(0x933, overlap), kBadParameter) << "overlapping groups";
  auto outside = t.flow_input(0x400, 0, ft);
  store_be32(&outside[0x1c], 8);
  store_be32(&outside[0x24], 16);
  EXPECT_EQ(t.run(0x933, outside), kBadParameter) << "past the table size";
  const std::array<uint8_t, 6> mac{0x02, 0, 0, 0, 0, 1};
  ASSERT_EQ(t.run(0x936, t.fte_input(0, ft, 0, g, {{2, tir}}, &mac)), kOk);
  ASSERT_EQ(t.run(0x936, t.fte_input(0, ft, 1, g, {{1, ft2}})), kOk);
  EXPECT_EQ(t.run(0x936, t.fte_input(0, ft, 0, g, {{2, tir}})), kBadResourceState) << "index taken (op_mod 0)";
  EXPECT_EQ(t.run(0x936, t.fte_input(0, ft, 2, g, {{2, 0x999}})), kBadResource) << "unknown TIR";
  EXPECT_EQ(t.run(0x936, t.fte_input(0, ft, 9, g, {{2, tir}})), kBadParameter) << "index outside the group";
  EXPECT_EQ(t.run(0x936, t.fte_input(1, ft, 3, g, {{2, tir}})), kBadParameter) << "wrong table type";
  EXPECT_EQ(t.run(0x902, with_number(tir)), kBadResourceState) << "TIR is a destination";
  EXPECT_EQ(t.run(0x934, t.flow_input(0x1c, 0, ft)), kBadIndex) << "group 0";
  auto destroy_group = t.flow_input(0x20, 0, ft);
  store_be32(&destroy_group[0x18], g);
  EXPECT_EQ(t.run(0x934, destroy_group), kBadResourceState) << "group has entries";
  EXPECT_EQ(t.run(0x931, t.flow_input(0x18, 0, ft2)), kBadResourceState) << "table is a destination";
  // Query returns what was set; delete releases the references.
  auto entry = t.flow_input(0x24, 0, ft);
  ASSERT_EQ(t.run(0x937, entry, 0x400), kOk);
  EXPECT_EQ(t.out[0x80 + 0x08], 0x02);
  EXPECT_EQ(t.out32(0x340) & 0xffffff, tir);
  ASSERT_EQ(t.run(0x938, entry), kOk);
  EXPECT_EQ(t.run(0x938, entry), kBadResource);
  store_be32(&entry[0x20], 1);
  ASSERT_EQ(t.run(0x938, entry), kOk);
  EXPECT_EQ(t.run(0x934, destroy_group), kOk);
  EXPECT_EQ(t.run(0x931, t.flow_input(0x18, 0, ft2)), kOk);
  EXPECT_EQ(t.run(0x902, with_number(tir)), kOk);
}

TEST(EthFlow, RootMissTableAndCounters) {
  EthFunction t;
  const uint32_t a = t.create_flow_table(0, 3);
  const uint32_t b = t.create_flow_table(0, 3, 1);
  EXPECT_EQ(t.run(0x92f, t.flow_input(0x20, 0, a)), kOk);
  EXPECT_EQ(t.f.eth.roots[0], a);
  EXPECT_EQ(t.run(0x92f, t.flow_input(0x20, 1, a)), kBadParameter) << "table type mismatch";
  auto miss = t.flow_input(0x40, 0, a);
  store_be32(&miss[0x0c], 1);
  store_be32(&miss[0x18], 1u << 24);
  store_be32(&miss[0x1c], b);
  ASSERT_EQ(t.run(0x93c, miss), kOk);
  EXPECT_EQ(t.f.eth.flow_tables.find(b)->refs, 1u);
  EXPECT_EQ(t.run(0x931, t.flow_input(0x18, 0, b)), kBadResourceState) << "miss target";
  store_be32(&miss[0x1c], a);
  EXPECT_EQ(t.run(0x93c, miss), kBadParameter) << "a table cannot miss to itself";
  ASSERT_EQ(t.run(0x931, t.flow_input(0x18, 0, a)), kOk);
  EXPECT_TRUE(t.f.eth.roots.empty()) << "destroying the root disconnects it";
  EXPECT_EQ(t.run(0x931, t.flow_input(0x18, 0, b)), kOk);

  const uint32_t counter = t.alloc(0x939);
  auto query = TestFunction::input(0x20);
  store_be32(&query[0x1c], counter);
  ASSERT_EQ(t.run(0x93b, query, 0x20), kOk);
  EXPECT_EQ(t.run(0x93a, with_number(counter)), kOk);
  EXPECT_EQ(t.run(0x93b, query, 0x20), kBadResource);
}

TEST(EthObjects, DisableHcaReleasesEverything) {
  EthFunction t;
  t.create_rq(t.page(), t.page());
  t.create_tis();
  t.create_flow_table(0, 2);
  ASSERT_EQ(t.run(0x105), kOk);
  EXPECT_TRUE(t.f.eth.rqs.empty());
  EXPECT_TRUE(t.f.eth.tises.empty());
  EXPECT_TRUE(t.f.eth.flow_tables.empty());
}

}  // namespace
}  // namespace hcaemu::model::test

namespace hcaemu::model {
namespace {

// Regression: mlx5e's drop RQ carries no PD; creating it once crashed hcaemu (a null PD's
// reference count was bumped). It must be created, hold no PD reference, and be destroyable.
TEST(EthObjects, DropRqWithoutPdIsAcceptedAndReleased) {
  test::EthFunction t;
  auto in = t.queue_input(t.cqn, 4, 5, t.page(64), {t.page()});
  store_be32(&in[0x58], 0);  // wq.pd = 0
  ASSERT_EQ(t.run(0x908, in), 0);
  const uint32_t rqn = t.object();
  auto destroy = t.input(0x10);
  store_be32(&destroy[0x08], rqn);
  EXPECT_EQ(t.run(0x90a, destroy), 0);
  auto sq = t.queue_input(t.cqn, 4, 6, t.page(64), {t.page()});
  store_be32(&sq[0x58], 0);
  EXPECT_NE(t.run(0x904, sq), 0) << "an SQ still needs its PD";
}

}  // namespace
}  // namespace hcaemu::model
