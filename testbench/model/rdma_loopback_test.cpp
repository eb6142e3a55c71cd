// Two QPs of one function (issue 16: MPI/NCCL-style programs, rdma-core's tests, two
// ibv_rc_pingpong processes in one guest). The function's frames to its own MAC come back to it
// (the switch's local loopback; here the test wire turns them around), and the engine serves
// requester and responder of one connection inside one function: RC SEND/WRITE/READ/atomic
// and UC WRITE, each checked on the responder's memory and completions.
#include <systemc>

#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeRespWriteImm = 0x1, kCqeRespSend = 0x2;

struct LoopbackTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& n = p.a;
  LoopbackTest() { n.port.to = 0; }  // what the switch does with a frame to the sender's own MAC

  std::pair<Qp*, Qp*> connect_local(uint8_t service, const RcAttributes& attr = {}) {
    Qp& q1 = n.create_qp(n.make_cq(), n.make_cq(), 0, service);
    Qp& q2 = n.create_qp(n.make_cq(), n.make_cq(), 0, service);
    RdmaPair::bring_up(n, q1, n, q2, attr);
    return {&q1, &q2};
  }
};

TEST_F(LoopbackTest, RcBetweenTwoQpsOfOneFunction) {
  auto [q1, q2] = connect_local(qp_st::kRc);
  Mr src = n.reg_mr(8192);
  Mr dst = n.reg_mr(8192, access_bits::kAll);
  n.put(src, 0, pattern(8192, 5));
  n.put64(dst, 4096, 40);
  const uint16_t r0 = n.post_recv(*q2, {{dst.va(0), 4096, dst.key}});
  n.post_send(*q1, {.sges = {{src.va(0), 3000, src.key}}});
  n.post_send(*q1, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(5000), 2000, src.key}}, .remote_va = dst.va(5000),
                    .rkey = dst.key});
  n.post_send(*q1, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(7000), 8, src.key}}, .remote_va = dst.va(4096),
                    .rkey = dst.key, .swap_add = 2});
  n.post_send(*q1, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(7100), 500, src.key}}, .remote_va = dst.va(5000),
                    .rkey = dst.key});
  p.pump();
  const auto recv = n.drain(*q2->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].opcode, kCqeRespSend);
  EXPECT_EQ(recv[0].wqe_counter, r0);
  EXPECT_EQ(recv[0].byte_cnt, 3000u);
  const auto all = pattern(8192, 5);
  EXPECT_EQ(n.get(dst, 0, 3000), std::vector<uint8_t>(all.begin(), all.begin() + 3000));
  EXPECT_EQ(n.get(dst, 5000, 2000), std::vector<uint8_t>(all.begin() + 5000, all.begin() + 7000));
  EXPECT_EQ(n.get64(dst, 4096), 42u) << "fetch-and-add landed on the responder";
  EXPECT_EQ(n.get64(src, 7000), 40u) << "and returned the old value";
  EXPECT_EQ(n.get(src, 7100, 500), std::vector<uint8_t>(all.begin() + 5000, all.begin() + 5500));
  const auto sent = n.drain(*q1->scq);
  ASSERT_EQ(sent.size(), 4u);
  for (const auto& c : sent) EXPECT_EQ(c.opcode, kCqeReq);
  EXPECT_EQ(n.state(*q1), QpState::kRts);
  EXPECT_EQ(n.state(*q2), QpState::kRts);
}

// UC WRITE with immediate inside one function, brought up as mlx5_ib brings UC up (access flags
// at INIT only): the write lands and the immediate completes on the receiving QP.
TEST_F(LoopbackTest, UcWriteBetweenTwoQpsOfOneFunction) {
  auto [q1, q2] = connect_local(qp_st::kUc);
  Mr src = n.reg_mr(4096);
  Mr dst = n.reg_mr(4096, access_bits::kAll);
  n.put(src, 0, pattern(4096, 9));
  const uint16_t r0 = n.post_recv(*q2, {{dst.va(0), 16, dst.key}});
  n.post_send(*q1, {.opcode = wqe_op::kRdmaWriteImm, .sges = {{src.va(100), 1500, src.key}}, .remote_va = dst.va(200),
                    .rkey = dst.key, .imm = 0xabcdef01});
  p.pump();
  const auto recv = n.drain(*q2->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].opcode, kCqeRespWriteImm);
  EXPECT_EQ(recv[0].wqe_counter, r0);
  EXPECT_EQ(recv[0].imm, 0xabcdef01u);
  const auto all = pattern(4096, 9);
  EXPECT_EQ(n.get(dst, 200, 1500), std::vector<uint8_t>(all.begin() + 100, all.begin() + 1600));
}

// mlx5 DR's send ring: one RC QP connected to itself with the force-loopback bit (ads.fl) and no
// address at all (no GID index, remote GID or MAC), writing with RDMA WRITE and reading back with
// RDMA READ. Its packets go from and to the function's own RoCE v2 address and the QP takes them.
TEST_F(LoopbackTest, AForceLoopbackQpTalksToItselfWithoutAnAddress) {
  Qp& q = n.create_qp(n.make_cq(), n.make_cq(), 0, qp_st::kRc);
  const RcAttributes attr;
  n.rst2init(q, attr);
  auto rtr = n.modify_input(q);
  auto qpc = RdmaNode::qpc_of(rtr);
  set(qpc, Field{0x08, 31, 29}, attr.mtu);
  set(qpc, Field{0x08, 28, 24}, 24);       // log_msg_max
  set(qpc, Field{0x14, 23, 0}, q.qpn);     // remote_qpn: itself
  set(qpc, Field{0x18, 31, 31}, 1);        // ads.fl
  set(qpc, Field{0x3c, 23, 16}, 1);        // vhca_port_num
  set(qpc, Field{0x90, 23, 21}, 4);
  set(qpc, Field{0x94, 28, 24}, attr.min_rnr_nak);
  set(qpc, Field{0x94, 23, 0}, attr.sq_psn_a);
  ASSERT_EQ(n.run(0x503, rtr), 0);
  n.rtr2rts(q, attr, attr.sq_psn_a);
  Mr src = n.reg_mr(4096);
  Mr dst = n.reg_mr(4096, access_bits::kAll);
  n.put(src, 0, pattern(4096, 3));
  n.post_send(q, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(640),
                  .rkey = dst.key});
  n.post_send(q, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(2048), 64, src.key}}, .remote_va = dst.va(640),
                  .rkey = dst.key});
  p.pump();
  const auto all = pattern(4096, 3);
  const std::vector<uint8_t> ste(all.begin(), all.begin() + 64);
  EXPECT_EQ(n.get(dst, 640, 64), ste) << "written on the responder side";
  EXPECT_EQ(n.get(src, 2048, 64), ste) << "and read back after the write";
  const auto done = n.drain(*q.scq);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& c : done) EXPECT_EQ(c.opcode, kCqeReq) << "syndrome " << int(c.syndrome);
  EXPECT_EQ(n.state(q), QpState::kRts);
}

// Without the bit, the same QP (no path) hears nothing: its packets are not its path's.
TEST_F(LoopbackTest, WithoutForceLoopbackAQpWithNoPathGetsNoAnswer) {
  Qp& q = n.create_qp(n.make_cq(), n.make_cq(), 0, qp_st::kRc);
  RcAttributes attr;
  attr.retry_count = 0;
  n.rst2init(q, attr);
  auto rtr = n.modify_input(q);
  auto qpc = RdmaNode::qpc_of(rtr);
  set(qpc, Field{0x08, 31, 29}, attr.mtu);
  set(qpc, Field{0x14, 23, 0}, q.qpn);
  set(qpc, Field{0x20, 23, 16}, RdmaNode::kGidIndex);
  set(qpc, Field{0x94, 23, 0}, attr.sq_psn_a);
  ASSERT_EQ(n.run(0x503, rtr), 0);
  n.rtr2rts(q, attr, attr.sq_psn_a);
  Mr src = n.reg_mr(4096);
  Mr dst = n.reg_mr(4096, access_bits::kAll);
  n.post_send(q, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0),
                  .rkey = dst.key});
  p.pump();
  EXPECT_EQ(n.engine.counters().rx_wrong_source + n.engine.counters().rx_not_addressed, 1u);
  EXPECT_TRUE(n.drain(*q.scq).empty()) << "nothing acknowledged it";
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
