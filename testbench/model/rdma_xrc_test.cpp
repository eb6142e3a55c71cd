// XRC (IBA Annex A14) between two functions on the test wire: an initiator QP on A sends RC's
// packets with XRC opcodes (0xa0 + RC's) and an XRCETH naming an XRC SRQ on B; B's target QP runs
// the RC responder, but each message takes its receive WQE, its PD and its completion queue from
// the XRC SRQ it names, which must belong to the target QP's XRC domain. Objects are created as
// mlx5_ib creates them (ALLOC_XRCD, CREATE_XRC_SRQ with a CQ, XRC QPs with rq_type SRQ).
#include <systemc>

#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

namespace op = transport::opcode;

constexpr uint8_t kCqeReq = 0x0, kCqeRespSend = 0x2, kCqeRespSendImm = 0x3, kCqeReqErr = 0xd, kCqeRespErr = 0xe;
constexpr uint8_t kSynLocalProtection = 0x04, kSynRemoteInvalidRequest = 0x12, kSynRemoteAccess = 0x13,
                  kSynRemoteOperation = 0x14;

struct XrcTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  // A: the initiator.
  uint32_t a_xrcd = a.alloc(0x80e);
  Cq& a_scq = a.make_cq();
  Cq& a_rcq = a.make_cq();
  Srq& a_driver_srq = a.make_srq(a_xrcd, &a_rcq);
  Qp& ini = a.create_qp(a_scq, a_rcq, 0, qp_st::kXrc, &a_driver_srq, a_xrcd);
  // B: the target QP and two XRC SRQs of its domain (the second with its own PD), one of another.
  uint32_t b_xrcd = b.alloc(0x80e), b_other_xrcd = b.alloc(0x80e);
  uint32_t b_pd2 = b.alloc_pd();
  Cq& b_qp_cq = b.make_cq();
  Cq& cq1 = b.make_cq();
  Cq& cq2 = b.make_cq();
  Srq& s1 = b.make_srq(b_xrcd, &cq1);
  Srq& s2 = b.make_srq(b_xrcd, &cq2, b_pd2);
  Srq& foreign = b.make_srq(b_other_xrcd, &cq1);
  Qp& tgt = b.create_qp(b_qp_cq, b_qp_cq, 0, qp_st::kXrc, &s1, b_xrcd);
  Mr src = a.reg_mr(8192);
  Mr dst = b.reg_mr(8192);  // in B's first PD, the one s1 has
  std::vector<transport::RocePacket> to_b, to_a;
  std::vector<std::vector<uint8_t>> frames;  // keep the payloads the parsed packets point into

  XrcTest() {
    p.bring_up(ini, tgt, {});
    a.put(src, 0, pattern(8192, 31));
    b.put(dst, 0, pattern(8192, 32));
    p.wire.filter = [this](WireFrame& f) {
      frames.push_back(f.bytes);
      (f.to == 1 ? to_b : to_a).push_back(parse(f).packet);
      return true;
    };
  }
  std::vector<uint8_t> expected(uint32_t offset, uint32_t length, uint32_t seed = 31) {
    const auto all = pattern(8192, seed);
    return {all.begin() + offset, all.begin() + offset + length};
  }
};

TEST_F(XrcTest, SendsLandInTheXrcSrqTheyName) {
  const uint16_t w1 = b.post_srq_recv(s1, {{dst.va(0), 4096, dst.key}});
  Mr dst2 = b.reg_mr(4096, access_bits::kAll, b_pd2);
  const uint16_t w2 = b.post_srq_recv(s2, {{dst2.va(0), 256, dst2.key}});
  a.post_send(ini, {.sges = {{src.va(0), 3000, src.key}}, .xrc_srqn = s1.srqn});
  a.post_send(ini, {.opcode = wqe_op::kSendImm, .sges = {{src.va(3000), 100, src.key}}, .imm = 0x0badcafe,
                    .xrc_srqn = s2.srqn});
  p.pump();
  // The wire: XRC SEND first/middle/last and only-with-immediate, each naming its SRQ; XRC ACKs back.
  ASSERT_EQ(to_b.size(), 4u);
  const uint8_t x = op::kXrcBase;
  EXPECT_EQ(to_b[0].opcode, x + op::kRcSendFirst);
  EXPECT_EQ(to_b[1].opcode, x + op::kRcSendMiddle);
  EXPECT_EQ(to_b[2].opcode, x + op::kRcSendLast);
  EXPECT_EQ(to_b[3].opcode, x + op::kRcSendOnlyImm);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(to_b[i].xrc_srqn, s1.srqn);
  EXPECT_EQ(to_b[3].xrc_srqn, s2.srqn);
  ASSERT_FALSE(to_a.empty());
  for (const auto& k : to_a) EXPECT_EQ(k.opcode, x + op::kRcAcknowledge);
  // Each completion is in its SRQ's CQ, names the SRQ and the target QP.
  auto got1 = b.drain(cq1), got2 = b.drain(cq2);
  ASSERT_EQ(got1.size(), 1u);
  EXPECT_EQ(got1[0].opcode, kCqeRespSend);
  EXPECT_EQ(got1[0].wqe_counter, w1);
  EXPECT_EQ(got1[0].user_index, s1.user_index) << "a receive through an XRC SRQ names the SRQ";
  EXPECT_EQ(got1[0].qpn, tgt.qpn);
  EXPECT_EQ(got1[0].byte_cnt, 3000u);
  ASSERT_EQ(got2.size(), 1u);
  EXPECT_EQ(got2[0].opcode, kCqeRespSendImm);
  EXPECT_EQ(got2[0].wqe_counter, w2);
  EXPECT_EQ(got2[0].user_index, s2.user_index);
  EXPECT_EQ(got2[0].imm, 0x0badcafeu);
  EXPECT_TRUE(b.drain(b_qp_cq).empty()) << "the target QP's own CQ gets nothing";
  EXPECT_EQ(b.get(dst, 0, 3000), expected(0, 3000));
  EXPECT_EQ(b.get(dst2, 0, 100), expected(3000, 100));
  auto sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  EXPECT_EQ(sent[1].opcode, kCqeReq);
}

// RDMA WRITE, READ and atomics through a target QP check keys against the PD of the XRC SRQ the
// request names: dst is in s1's PD, so they work naming s1 and fail naming s2.
TEST_F(XrcTest, RemoteAccessUsesThePdOfTheNamedSrq) {
  a.post_send(ini, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 2500, src.key}}, .remote_va = dst.va(100),
                    .rkey = dst.key, .xrc_srqn = s1.srqn});
  a.post_send(ini, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(4096), 2000, src.key}}, .remote_va = dst.va(5000),
                    .rkey = dst.key, .xrc_srqn = s1.srqn});
  a.post_send(ini, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(7000), 8, src.key}}, .remote_va = dst.va(7168),
                    .rkey = dst.key, .swap_add = 5, .xrc_srqn = s1.srqn});
  p.pump();
  auto sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 3u);
  for (const Cqe& c : sent) EXPECT_EQ(c.opcode, kCqeReq);
  EXPECT_EQ(b.get(dst, 100, 2500), expected(0, 2500));
  EXPECT_EQ(a.get(src, 4096, 2000), expected(5000, 2000, 32));
  const auto before = expected(7168, 8, 32);
  EXPECT_EQ(a.get(src, 7000, 8), before) << "fetch-and-add returns the old value";
  EXPECT_EQ(a.state(ini), QpState::kRts);
  const uint8_t x = op::kXrcBase;
  EXPECT_TRUE(std::any_of(to_a.begin(), to_a.end(), [&](auto& k) { return k.opcode == x + op::kRcRdmaReadResponseFirst; }));
  EXPECT_TRUE(std::any_of(to_a.begin(), to_a.end(), [&](auto& k) { return k.opcode == x + op::kRcAtomicAcknowledge; }));
  // Naming s2 (another PD), the same key is a remote access error; both QPs end in ERR.
  a.post_send(ini, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0),
                    .rkey = dst.key, .xrc_srqn = s2.srqn});
  p.pump();
  sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_EQ(sent[0].syndrome, kSynRemoteAccess);
  EXPECT_EQ(a.state(ini), QpState::kError);
  EXPECT_EQ(b.state(tgt), QpState::kError);
  EXPECT_EQ(b.get(dst, 0, 64), expected(0, 64, 32)) << "nothing was written";
}

// A receive WQE of the named SRQ with a bad lkey: the error CQE goes to that SRQ's CQ and names
// the SRQ (libmlx5 frees the WQE in the SRQ it names, or else in the QP's own RQ, which an XRC
// target QP does not have).
TEST_F(XrcTest, AReceiveErrorCompletesInTheSrqsCqNamingTheSrq) {
  const uint16_t w = b.post_srq_recv(s2, {{dst.va(0), 4096, dst.key ^ 0x100}});
  a.post_send(ini, {.sges = {{src.va(0), 64, src.key}}, .xrc_srqn = s2.srqn});
  p.pump();
  auto got = b.drain(cq2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, kCqeRespErr);
  EXPECT_EQ(got[0].syndrome, kSynLocalProtection);
  EXPECT_EQ(got[0].wqe_counter, w);
  EXPECT_EQ(got[0].user_index, s2.user_index);
  EXPECT_EQ(got[0].qpn, tgt.qpn);
  EXPECT_TRUE(b.drain(cq1).empty());
  EXPECT_TRUE(b.drain(b_qp_cq).empty());
  auto sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_EQ(sent[0].syndrome, kSynRemoteOperation);
}

// An XRCETH naming an SRQ outside the target's XRC domain, a basic SRQ or no SRQ at all is an
// invalid request: NAK, error CQE at the initiator, nothing received.
TEST_F(XrcTest, AnSrqOutsideTheDomainIsAnInvalidRequest) {
  Srq& basic = b.make_srq();
  for (uint32_t named : {foreign.srqn, basic.srqn, 0x7777u}) {
    SCOPED_TRACE(named);
    b.post_srq_recv(foreign, {{dst.va(0), 4096, dst.key}});
    a.post_send(ini, {.sges = {{src.va(0), 64, src.key}}, .xrc_srqn = named});
    p.pump();
    auto sent = a.drain(a_scq);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].opcode, kCqeReqErr);
    EXPECT_EQ(sent[0].syndrome, kSynRemoteInvalidRequest);
    EXPECT_EQ(b.state(tgt), QpState::kError);
    EXPECT_TRUE(b.drain(cq1).empty());
    EXPECT_EQ(b.get(dst, 0, 64), expected(0, 64, 32));
    a.to_reset(ini);
    b.to_reset(tgt);
    p.bring_up(ini, tgt, {});
  }
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
