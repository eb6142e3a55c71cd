// Queue counter sets as mlx5_ib uses them: one set per port (ALLOC_Q_COUNTER), every QP bound to
// it at RST2INIT (qpc.counter_set_id), read by QUERY_Q_COUNTER for the hw_counters in sysfs. The
// engine counts what its responder and requester see into the set of the QP they work for.
#include <systemc>

#include "model/objects/queue_counters.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

namespace qc = q_counter;

constexpr uint8_t kBadParameter = 0x03;

uint32_t alloc_counter_set(RdmaNode& n) {
  EXPECT_EQ(n.run(0x771), 0);
  return n.out32(0x08) & 0xff;
}

// QUERY_Q_COUNTER: the 0x100-byte output, optionally clearing the set.
std::vector<uint8_t> query(RdmaNode& n, uint32_t set, bool clear = false) {
  std::vector<uint8_t> in(0x20, 0);
  store_be32(&in[0x18], clear ? 0x80000000u : 0);
  store_be32(&in[0x1c], set);
  EXPECT_EQ(n.run(0x773, in, 0x100), 0);
  return n.out;
}
uint32_t at(const std::vector<uint8_t>& out, uint32_t offset) { return load_be32(&out[offset]); }

struct CountersTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  uint32_t set_a = alloc_counter_set(a), set_b = alloc_counter_set(b);
  Cq& sa = a.make_cq();
  Cq& ra = a.make_cq();
  Cq& sb = b.make_cq();
  Cq& rb = b.make_cq();
  Qp& qa = a.create_qp(sa, ra);
  Qp& qb = b.create_qp(sb, rb);
  Mr src = a.reg_mr(8192);
  Mr dst = b.reg_mr(8192);

  CountersTest() {
    qa.counter_set = set_a;
    qb.counter_set = set_b;
    p.bring_up(qa, qb, {.retry_count = 2, .rnr_retry = 7});
  }
};

TEST_F(CountersTest, ResponderAndRequesterCountIntoTheirQpsSet) {
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 3000, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key});
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 10, src.key}}, .remote_va = dst.va(4000),
                   .rkey = dst.key});
  a.post_send(qa, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(4096), 100, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key});
  a.post_send(qa, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(8000), 8, src.key}}, .remote_va = dst.va(7168),
                   .rkey = dst.key, .swap_add = 1});
  // A SEND before any receive is posted: RNR NAK (B: out of buffer; A: an RNR NAK received), then
  // it lands once a WQE is there.
  a.post_send(qa, {.sges = {{src.va(0), 64, src.key}}});
  p.pump();
  b.post_recv(qb, {{dst.va(0), 64, dst.key}});
  ASSERT_TRUE(p.fire_timers(a));
  p.pump();
  EXPECT_EQ(a.drain(sa).size(), 5u);
  auto counted = query(b, set_b);
  EXPECT_EQ(at(counted, qc::kRxWriteRequests), 2u);
  EXPECT_EQ(at(counted, qc::kRxReadRequests), 1u);
  EXPECT_EQ(at(counted, qc::kRxAtomicRequests), 1u);
  EXPECT_EQ(at(counted, qc::kOutOfBuffer), 1u);
  EXPECT_EQ(at(query(a, set_a), qc::kRnrNakRetryErr), 1u);
  // A lost packet: B sees the next one out of sequence, A a sequence-error NAK.
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 2048, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 2u);
  p.inject(frames[1]);  // the NAK brings the resend (go-back-N)
  p.pump();
  EXPECT_EQ(at(query(b, set_b), qc::kOutOfSequence), 1u);
  EXPECT_EQ(at(query(a, set_a), qc::kPacketSeqErr), 1u);
  EXPECT_EQ(a.drain(sa).size(), 1u);
  // A bad rkey: a remote access error at both ends, and the flush of what A posted behind it.
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 8, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key ^ 0x100});
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 8, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key}, false);
  p.pump();
  a.ring(qa);
  p.pump();
  counted = query(a, set_a);
  EXPECT_EQ(at(counted, qc::kReqRemoteAccessErrors), 1u);
  EXPECT_EQ(at(counted, qc::kReqCqeError), 1u);
  EXPECT_EQ(at(counted, qc::kReqCqeFlushError), 1u);
  counted = query(b, set_b);
  EXPECT_EQ(at(counted, qc::kRespRemoteAccessErrors), 1u);
  EXPECT_EQ(at(counted, qc::kRespCqeFlushError), 0u) << "B had no receive WQE left to flush";
}

// IBA ch. 9, implied NAK: the READ's responses are lost, the ACK of the WRITE behind it arrives. That ACK
// is an implied NAK: the requester resends from the READ at once (no timer runs here) and counts it.
TEST_F(CountersTest, AnAckOvertakingALostReadResponseIsAnImpliedNak) {
  b.put(dst, 0, pattern(2048, 77));
  a.post_send(qa, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(0), 2048, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key});
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(4096), 16, src.key}}, .remote_va = dst.va(4096),
                   .rkey = dst.key});
  int dropped = 0;
  p.wire.filter = [&](WireFrame& f) {
    const uint8_t op = opcode_of(f);
    const bool read_response = op >= transport::opcode::kRcRdmaReadResponseFirst &&
                               op <= transport::opcode::kRcRdmaReadResponseOnly;
    if (read_response && dropped < 2) return ++dropped, false;
    return true;
  };
  p.pump();
  EXPECT_EQ(dropped, 2);
  const auto sent = a.drain(sa);
  ASSERT_EQ(sent.size(), 2u) << "both complete without a timeout";
  EXPECT_EQ(sent[0].opcode, 0x0);
  EXPECT_EQ(sent[1].opcode, 0x0);
  EXPECT_EQ(a.get(src, 0, 2048), pattern(2048, 77));
  EXPECT_EQ(at(query(a, set_a), qc::kImpliedNakSeqErr), 1u);
  EXPECT_EQ(at(query(a, set_a), qc::kLocalAckTimeoutErr), 0u);
}

TEST_F(CountersTest, ClearZeroesAndOtherSetsStayApart) {
  const uint32_t other = alloc_counter_set(b);
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 100, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key});
  p.pump();
  EXPECT_EQ(at(query(b, other), qc::kRxWriteRequests), 0u) << "QP qb is bound to set_b only";
  EXPECT_EQ(at(query(b, set_b, true), qc::kRxWriteRequests), 1u) << "the clearing query still reports";
  EXPECT_EQ(at(query(b, set_b), qc::kRxWriteRequests), 0u);
}

TEST_F(CountersTest, Rst2InitRefusesACounterSetTheFunctionDoesNotHave) {
  Cq& cq = b.make_cq();
  Qp& q = b.create_qp(cq, cq);
  for (uint32_t foreign : {set_b + 1, 0xffu}) {
    auto in = b.modify_input(q);
    set(RdmaNode::qpc_of(in), Field{0x0c, 31, 24}, foreign);
    set(RdmaNode::qpc_of(in), Field{0x3c, 23, 16}, 1);
    EXPECT_EQ(b.run(0x502, in), kBadParameter) << foreign;
    EXPECT_EQ(b.state(q), QpState::kReset);
  }
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
