// The QP modify commands take each optional parameter only when the command's opt_param_mask
// names it and the transition accepts it for the QP's service type; a field the command leaves
// out keeps its value. One case per (transition, service type, optional bit), each checked both
// ways: without the bit the old value stays, with it the new one lands. The UC WRITE loss of
// issue 16 was the INIT2RTR case: the access flags set at RST2INIT were reset to none.
#include <gtest/gtest-spi.h>

#include <string>
#include <systemc>

#include "testbench/model/rdma_fixture.h"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kRst2Init = 0x502, kInit2Init = 0x50e, kInit2Rtr = 0x503, kRtr2Rts = 0x504, kRts2Rts = 0x505,
                   kSqErr2Rts = 0x506;

namespace bit {
constexpr uint32_t kRre = 1u << 1, kRae = 1u << 2, kRwe = 1u << 3, kPkeyIndex = 1u << 4, kQkey = 1u << 5,
                   kRnrTimeout = 1u << 6, kPmState = 1u << 10, kLagTxAff = 1u << 15, kPriPort = 1u << 16,
                   kCounterSetId = 1u << 25;
}

struct OptionalField {
  const char* name;
  uint32_t bit;
  Field field;
  uint32_t value;  // differs from what the QP holds before the transition under test
};
const OptionalField kRre{"RRE", bit::kRre, {0x90, 15, 15}, 1};
const OptionalField kRwe{"RWE", bit::kRwe, {0x90, 14, 14}, 1};
const OptionalField kRae{"RAE", bit::kRae, {0x90, 13, 13}, 1};
const OptionalField kAtomicMode{"RAE (atomic_mode)", bit::kRae, {0x90, 19, 16}, 3};
const OptionalField kPkey{"PKEY_INDEX", bit::kPkeyIndex, {0x18, 15, 0}, 5};
const OptionalField kQkey{"Q_KEY", bit::kQkey, {0xa8, 31, 0}, 0x11112222};
const OptionalField kRnr{"RNR_TIMEOUT", bit::kRnrTimeout, {0x94, 28, 24}, 12};
const OptionalField kPm{"PM_STATE", bit::kPmState, {0x00, 12, 11}, 1};
const OptionalField kLag{"LAG_TX_AFF", bit::kLagTxAff, {0x00, 27, 24}, 1};
const OptionalField kPort{"PRI_PORT", bit::kPriPort, {0x3c, 23, 16}, 1};

struct Case {
  uint16_t opcode;
  QpState from;
  uint8_t service;
  OptionalField field;
  bool accepted;  // false: the transition does not take this parameter for this service type
};

std::string describe(const Case& c) {
  const char* service = c.service == qp_st::kRc ? "RC" : c.service == qp_st::kUc ? "UC" : c.service == qp_st::kUd ? "UD" : "XRC";
  return std::string(service) + " opcode " + std::to_string(c.opcode) + " " + c.field.name;
}

struct QpModifyTest : ::testing::Test {
  Wire wire;
  RdmaNode n{0, wire, 1};
  Cq& cq = n.make_cq();
  uint32_t xrcd = 0;

  Qp& make(uint8_t service) {
    if (service == qp_st::kXrc && xrcd == 0) xrcd = n.alloc(0x80e);  // ALLOC_XRCD
    return n.create_qp(cq, cq, 0, service, nullptr, service == qp_st::kXrc ? xrcd : 0);
  }
  // The required fields of each transition, valid, and nothing else.
  std::vector<uint8_t> command(const Qp& qp, uint16_t opcode, uint32_t mask) {
    auto in = n.modify_input(qp);
    store_be32(&in[0x10], mask);
    auto qpc = RdmaNode::qpc_of(in);
    if (opcode == kInit2Rtr) {
      set(qpc, Field{0x08, 31, 29}, 3);                     // mtu 1024
      set(qpc, Field{0x08, 28, 24}, 30);                    // log_msg_max
      set(qpc, Field{0x20, 23, 16}, RdmaNode::kGidIndex);  // ads.src_addr_index
    }
    return in;
  }
  uint32_t run(const Qp& qp, uint16_t opcode, uint32_t mask = 0) { return n.run(opcode, command(qp, opcode, mask)); }
  // RST -> ... -> `to` with no optional parameter and zero where the transitions allow it.
  void bring_to(Qp& qp, QpState to) {
    ASSERT_EQ(run(qp, kRst2Init), 0u);
    if (to == QpState::kInit) return;
    ASSERT_EQ(run(qp, kInit2Rtr), 0u);
    if (to == QpState::kRtr) return;
    ASSERT_EQ(run(qp, kRtr2Rts), 0u);
    if (to == QpState::kRts) return;
    n.state_of(qp).state = QpState::kSqError;  // as a send error leaves a UC or UD QP
  }
  uint32_t field_after(const Case& c, bool with_bit) {
    Qp& qp = make(c.service);
    bring_to(qp, c.from);
    auto in = command(qp, c.opcode, with_bit ? c.field.bit : 0);
    set(RdmaNode::qpc_of(in), c.field.field, c.field.value);
    EXPECT_EQ(n.run(c.opcode, in), 0u) << describe(c);
    return get(n.state_of(qp).context, c.field.field);
  }
};

TEST_F(QpModifyTest, AnOptionalParameterLandsOnlyWithItsBit) {
  const Case cases[] = {
      // INIT2INIT
      {kInit2Init, QpState::kInit, qp_st::kRc, kRre, true},
      {kInit2Init, QpState::kInit, qp_st::kRc, kRwe, true},
      {kInit2Init, QpState::kInit, qp_st::kRc, kRae, true},
      {kInit2Init, QpState::kInit, qp_st::kRc, kAtomicMode, true},
      {kInit2Init, QpState::kInit, qp_st::kRc, kPkey, true},
      {kInit2Init, QpState::kInit, qp_st::kRc, kPort, true},
      {kInit2Init, QpState::kInit, qp_st::kRc, kLag, true},
      {kInit2Init, QpState::kInit, qp_st::kUc, kRwe, true},
      {kInit2Init, QpState::kInit, qp_st::kUc, kRre, false},  // UC has no READ
      {kInit2Init, QpState::kInit, qp_st::kUc, kRae, false},  // nor atomics
      {kInit2Init, QpState::kInit, qp_st::kUd, kQkey, true},
      {kInit2Init, QpState::kInit, qp_st::kUd, kPkey, true},
      {kInit2Init, QpState::kInit, qp_st::kUd, kRwe, false},
      {kInit2Init, QpState::kInit, qp_st::kRc, kQkey, false},
      {kInit2Init, QpState::kInit, qp_st::kXrc, kRre, true},
      // INIT2RTR
      {kInit2Rtr, QpState::kInit, qp_st::kRc, kRre, true},
      {kInit2Rtr, QpState::kInit, qp_st::kRc, kRwe, true},
      {kInit2Rtr, QpState::kInit, qp_st::kRc, kRae, true},
      {kInit2Rtr, QpState::kInit, qp_st::kRc, kPkey, true},
      {kInit2Rtr, QpState::kInit, qp_st::kUc, kRwe, true},
      {kInit2Rtr, QpState::kInit, qp_st::kUc, kPkey, true},
      {kInit2Rtr, QpState::kInit, qp_st::kUc, kRre, false},
      {kInit2Rtr, QpState::kInit, qp_st::kUd, kQkey, true},
      {kInit2Rtr, QpState::kInit, qp_st::kUd, kPkey, true},
      {kInit2Rtr, QpState::kInit, qp_st::kXrc, kRwe, true},
      {kInit2Rtr, QpState::kInit, qp_st::kXrc, kPm, false},
      // RTR2RTS
      {kRtr2Rts, QpState::kRtr, qp_st::kRc, kRre, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kRc, kRwe, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kRc, kRae, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kRc, kRnr, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kRc, kPm, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kRc, kPkey, false},
      {kRtr2Rts, QpState::kRtr, qp_st::kUc, kRwe, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kUc, kPm, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kUc, kRnr, false},  // no RNR on UC
      {kRtr2Rts, QpState::kRtr, qp_st::kUd, kQkey, true},
      {kRtr2Rts, QpState::kRtr, qp_st::kXrc, kRnr, true},
      // RTS2RTS
      {kRts2Rts, QpState::kRts, qp_st::kRc, kRre, true},
      {kRts2Rts, QpState::kRts, qp_st::kRc, kRwe, true},
      {kRts2Rts, QpState::kRts, qp_st::kRc, kRae, true},
      {kRts2Rts, QpState::kRts, qp_st::kRc, kRnr, true},
      {kRts2Rts, QpState::kRts, qp_st::kRc, kPm, true},
      {kRts2Rts, QpState::kRts, qp_st::kUc, kRwe, true},
      {kRts2Rts, QpState::kRts, qp_st::kUc, kPm, true},
      {kRts2Rts, QpState::kRts, qp_st::kUd, kQkey, true},
      {kRts2Rts, QpState::kRts, qp_st::kUd, kPkey, false},
      {kRts2Rts, QpState::kRts, qp_st::kXrc, kRae, true},
      // SQERR2RTS
      {kSqErr2Rts, QpState::kSqError, qp_st::kUc, kRwe, true},
      {kSqErr2Rts, QpState::kSqError, qp_st::kUd, kQkey, true},
      {kSqErr2Rts, QpState::kSqError, qp_st::kUd, kPm, false},
  };
  for (const Case& c : cases) {
    // Without the bit the QP keeps what it had before (all of these are 0 or, for the port, 0 too).
    EXPECT_EQ(field_after(c, false), 0u) << describe(c) << " without its bit";
    EXPECT_EQ(field_after(c, true), c.accepted ? c.field.value : 0u) << describe(c) << " with its bit";
  }
}

// The headless host's driver code reports what the device refused as a failure of the test.
TEST_F(QpModifyTest, ARefusedDriverStepFailsTheTest) {
  Qp& qp = make(qp_st::kRc);
  EXPECT_NONFATAL_FAILURE(n.sqe_to_rts(qp), "hostsim:");  // RST -> RTS by SQERR2RTS: BAD_QP_STATE
}

// COUNTER_SET_ID moves a QP to another queue counter set (mlx5_ib's rdma counter binding uses
// RTS2RTS with this bit); an unknown set is refused.
TEST_F(QpModifyTest, CounterSetMovesOnlyWithItsBit) {
  const uint32_t set_id = n.alloc(0x771);  // ALLOC_Q_COUNTER
  Qp& qp = make(qp_st::kRc);
  bring_to(qp, QpState::kRts);
  const Field counter{0x0c, 31, 24};
  auto in = command(qp, kRts2Rts, 0);
  set(RdmaNode::qpc_of(in), counter, set_id);
  ASSERT_EQ(n.run(kRts2Rts, in), 0u);
  EXPECT_EQ(get(n.state_of(qp).context, counter), 0u);
  store_be32(&in[0x10], bit::kCounterSetId);
  ASSERT_EQ(n.run(kRts2Rts, in), 0u);
  EXPECT_EQ(get(n.state_of(qp).context, counter), set_id);
  set(RdmaNode::qpc_of(in), counter, set_id + 7);
  EXPECT_EQ(n.run(kRts2Rts, in), 0x03u) << "no such counter set: BAD_PARAMETER";
  EXPECT_EQ(get(n.state_of(qp).context, counter), set_id) << "a refused command changes nothing";
}

// A transition's required fields land whatever the mask says, zero included (RTR sets the path
// and the expected PSN, RTS the first send PSN and the retry budget).
TEST_F(QpModifyTest, RequiredFieldsLandWithoutBits) {
  Qp& qp = make(qp_st::kRc);
  bring_to(qp, QpState::kInit);
  auto in = command(qp, kInit2Rtr, 0);
  set(RdmaNode::qpc_of(in), Field{0x14, 23, 0}, 0x1234);   // remote_qpn
  set(RdmaNode::qpc_of(in), Field{0x94, 23, 0}, 0x777);    // next_rcv_psn
  set(RdmaNode::qpc_of(in), Field{0x94, 28, 24}, 9);       // min_rnr_nak
  set(RdmaNode::qpc_of(in), Field{0x90, 23, 21}, 4);       // log_rra_max
  ASSERT_EQ(n.run(kInit2Rtr, in), 0u);
  const auto& ctx = n.state_of(qp).context;
  EXPECT_EQ(get(ctx, Field{0x14, 23, 0}), 0x1234u);
  EXPECT_EQ(get(ctx, Field{0x94, 23, 0}), 0x777u);
  EXPECT_EQ(get(ctx, Field{0x94, 28, 24}), 9u);
  EXPECT_EQ(get(ctx, Field{0x90, 23, 21}), 4u);
  in = command(qp, kRtr2Rts, 0);
  set(RdmaNode::qpc_of(in), Field{0x78, 23, 0}, 0x4242);  // next_send_psn
  set(RdmaNode::qpc_of(in), Field{0x70, 18, 16}, 6);      // retry_count
  ASSERT_EQ(n.run(kRtr2Rts, in), 0u);
  EXPECT_EQ(get(ctx, Field{0x78, 23, 0}), 0x4242u);
  EXPECT_EQ(get(ctx, Field{0x70, 18, 16}), 6u);
  EXPECT_EQ(get(ctx, Field{0x94, 23, 0}), 0x777u) << "RTS does not touch the receive side";
}

// The UC case of issue 16: ib_write_bw -c UC and the rdma-core tests give the access flags at
// INIT only; INIT2RTR carries rwe = 0 and no RWE bit. Write access must survive it.
TEST_F(QpModifyTest, UcWriteAccessSurvivesRtr) {
  Qp& qp = make(qp_st::kUc);
  auto in = command(qp, kRst2Init, 0);
  set(RdmaNode::qpc_of(in), Field{0x90, 14, 14}, 1);  // rwe
  ASSERT_EQ(n.run(kRst2Init, in), 0u);
  ASSERT_EQ(run(qp, kInit2Rtr), 0u);
  ASSERT_EQ(run(qp, kRtr2Rts), 0u);
  EXPECT_EQ(get(n.state_of(qp).context, Field{0x90, 14, 14}), 1u);
}

// mlx5dv_modify_qp_udp_sport: RTS2RTS with bit 34 of the mask (bit 2 of opt_param_mask_95_32,
// after the qpc) sets ads.udp_sport of an RC or UC QP, the source port of its next packets; without
// the bit, or for a UD QP, the port stays.
TEST_F(QpModifyTest, UdpSourcePortMovesOnlyWithItsExtendedBit) {
  const Field udp_sport{0x38, 15, 0};
  for (uint8_t service : {qp_st::kRc, qp_st::kUc, qp_st::kUd}) {
    Qp& qp = make(service);
    bring_to(qp, QpState::kRts);
    auto in = command(qp, kRts2Rts, 0);
    in.resize(std::max<size_t>(in.size(), 0x120), 0);
    set(RdmaNode::qpc_of(in), udp_sport, 55555);
    ASSERT_EQ(n.run(kRts2Rts, in), 0u);
    EXPECT_EQ(get(n.state_of(qp).context, udp_sport), 0u) << "no bit";
    store_be32(&in[0x10c], 1u << 2);
    ASSERT_EQ(n.run(kRts2Rts, in), 0u);
    EXPECT_EQ(get(n.state_of(qp).context, udp_sport), service == qp_st::kUd ? 0u : 55555u) << int(service);
  }
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
