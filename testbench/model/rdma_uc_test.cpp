// The UC service (IBA 9.7.7, 9.9.1.1) between two functions on the test wire: SEND, SEND with
// immediate, RDMA WRITE and WRITE with immediate with UC opcodes (0x20-0x2b) and no ACKs; the
// requester completes a message once it is on the wire; the responder drops a message that lost a
// packet, found no receive WQE or named a bad rkey, and stays up; READ and atomics are refused at
// the requester; a send error stops only the send queue (SQE) until SQERR2RTS; a frame of the
// wrong service is dropped.
#include <systemc>

#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

namespace op = transport::opcode;

constexpr uint8_t kCqeReq = 0x0, kCqeRespWriteImm = 0x1, kCqeRespSend = 0x2, kCqeRespSendImm = 0x3,
                  kCqeReqErr = 0xd;
constexpr uint8_t kSynLocalQpOperation = 0x02, kSynLocalProtection = 0x04, kSynWrFlushed = 0x05;

struct UcTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  Connection c = p.connect({}, qp_st::kUc);
  Mr src = a.reg_mr(8192);
  Mr dst = b.reg_mr(8192, access_bits::kAll);
  std::vector<uint8_t> opcodes_to_b, opcodes_to_a;

  UcTest() {
    a.put(src, 0, pattern(8192, 21));
    p.wire.filter = [this](WireFrame& f) {
      (f.to == 1 ? opcodes_to_b : opcodes_to_a).push_back(opcode_of(f));
      return true;
    };
  }
  Wr send(uint32_t offset, uint32_t length, uint8_t opcode = wqe_op::kSend, uint32_t imm = 0) {
    return {.opcode = opcode, .sges = {{src.va(offset), length, src.key}}, .imm = imm};
  }
  Wr write(uint32_t offset, uint32_t length, uint32_t rkey, uint8_t opcode = wqe_op::kRdmaWrite, uint32_t imm = 0) {
    return {.opcode = opcode, .sges = {{src.va(offset), length, src.key}}, .remote_va = dst.va(offset), .rkey = rkey,
            .imm = imm};
  }
  std::vector<uint8_t> expected(uint32_t offset, uint32_t length) {
    const auto all = pattern(8192, 21);
    return {all.begin() + offset, all.begin() + offset + length};
  }
};

TEST_F(UcTest, SendWriteAndImmediatesArriveWithUcOpcodesAndNoAcks) {
  const uint16_t r0 = b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  const uint16_t r1 = b.post_recv(*c.b, {{dst.va(4096), 64, dst.key}});
  const uint16_t r2 = b.post_recv(*c.b, {{dst.va(4160), 64, dst.key}});
  a.post_send(*c.a, send(0, 3000));
  a.post_send(*c.a, send(3000, 40, wqe_op::kSendImm, 0x11223344));
  p.pump();
  a.post_send(*c.a, write(5000, 2500, dst.key));
  a.post_send(*c.a, write(7600, 100, dst.key, wqe_op::kRdmaWriteImm, 0x55667788));
  p.pump();
  EXPECT_EQ(opcodes_to_b, (std::vector<uint8_t>{op::kUcSendFirst, op::kUcSendMiddle, op::kUcSendLast,
                                                op::kUcSendOnlyImm, op::kUcRdmaWriteFirst, op::kUcRdmaWriteMiddle,
                                                op::kUcRdmaWriteLast, op::kUcRdmaWriteOnlyImm}));
  EXPECT_TRUE(opcodes_to_a.empty()) << "UC sends no ACK";
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 4u);
  for (uint16_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sent[i].opcode, kCqeReq);
    EXPECT_EQ(sent[i].wqe_counter, i);
  }
  const auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 3u);
  EXPECT_EQ(recv[0].opcode, kCqeRespSend);
  EXPECT_EQ(recv[0].wqe_counter, r0);
  EXPECT_EQ(recv[0].byte_cnt, 3000u);
  EXPECT_EQ(recv[1].opcode, kCqeRespSendImm);
  EXPECT_EQ(recv[1].wqe_counter, r1);
  EXPECT_EQ(recv[1].imm, 0x11223344u);
  EXPECT_EQ(recv[2].opcode, kCqeRespWriteImm);
  EXPECT_EQ(recv[2].wqe_counter, r2);
  EXPECT_EQ(recv[2].imm, 0x55667788u);
  EXPECT_EQ(b.get(dst, 0, 3000), expected(0, 3000));
  EXPECT_EQ(b.get(dst, 4096, 40), expected(3000, 40));
  EXPECT_EQ(b.get(dst, 5000, 2500), expected(5000, 2500));
  EXPECT_EQ(b.get(dst, 7600, 100), expected(7600, 100));
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  EXPECT_EQ(b.state(*c.b), QpState::kRts);
}

TEST_F(UcTest, ALostPacketLosesOnlyItsMessage) {
  const uint16_t r0 = b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, send(0, 3000));
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 3u);
  p.inject(std::move(frames[0]));
  p.inject(std::move(frames[2]));  // the middle packet is lost
  p.pump();
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
  EXPECT_GE(b.engine.counters().uc_packets_dropped, 1u);
  // The next message starts afresh in the same receive WQE.
  a.post_send(*c.a, send(4000, 500));
  p.pump();
  const auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wqe_counter, r0);
  EXPECT_EQ(recv[0].byte_cnt, 500u);
  EXPECT_EQ(b.get(dst, 0, 500), expected(4000, 500));
  EXPECT_EQ(a.drain(*c.a->scq).size(), 2u) << "both complete at the requester";
  EXPECT_EQ(b.state(*c.b), QpState::kRts);
}

// Issue 14: a UC responder takes any PSN that starts a message (IBA 9.7.5.1.1), so a tenant that
// guessed a UC QP's number could write into it at any PSN. A connected QP now hears only its path's
// other end: a frame whose source MAC (what the switch's spoof check holds a tenant to) or source
// GID is not the QP's path is dropped and counted, and does not resynchronise the responder.
TEST_F(UcTest, FramesFromOutsideTheQpsPathNeitherLandNorResynchronise) {
  enum class Forge { kSourceMac, kSourceGid, kNone } forge = Forge::kSourceMac;
  p.wire.filter = [&](WireFrame& f) {
    if (f.to != 1 || forge == Forge::kNone) return true;
    auto parsed = parse(f);
    parsed.packet.psn = (parsed.packet.psn + 5000) & 0xffffff;  // anywhere: UC would resynchronise
    if (forge == Forge::kSourceMac) parsed.packet.src_mac = {2, 0, 0, 0, 0, 0x66};
    if (forge == Forge::kSourceGid) parsed.packet.src_gid = transport::gid_from_ipv4(0x0a0000feu);
    f.bytes = transport::build_frame(parsed.packet);
    return true;
  };
  a.post_send(*c.a, write(0, 256, dst.key));
  p.pump();
  forge = Forge::kSourceGid;
  a.post_send(*c.a, write(0, 256, dst.key, wqe_op::kRdmaWriteImm, 7));
  p.pump();
  EXPECT_EQ(b.engine.counters().rx_wrong_source, 2u);
  EXPECT_EQ(b.engine.counters().sequence_errors, 0u) << "no resynchronisation";
  EXPECT_NE(b.get(dst, 0, 256), expected(0, 256)) << "nothing landed";
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
  forge = Forge::kNone;
  a.post_send(*c.a, write(512, 256, dst.key));
  p.pump();
  EXPECT_EQ(b.get(dst, 512, 256), expected(512, 256)) << "the path's own frames still land";
  EXPECT_EQ(b.state(*c.b), QpState::kRts);
}

TEST_F(UcTest, NoReceiveWqeDropsTheMessageWithoutRnr) {
  a.post_send(*c.a, send(0, 2000));
  p.pump();
  EXPECT_TRUE(opcodes_to_a.empty()) << "no RNR NAK";
  EXPECT_EQ(b.engine.counters().uc_packets_dropped, 2u);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
  b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, send(100, 64));
  p.pump();
  const auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].byte_cnt, 64u);
  EXPECT_EQ(b.get(dst, 0, 64), expected(100, 64));
}

TEST_F(UcTest, BadRkeyDropsTheWriteAndTheQpStaysUp) {
  b.put(dst, 0, std::vector<uint8_t>(2048, 0xab));
  a.post_send(*c.a, write(0, 2048, dst.key ^ 0x100));
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 2048), std::vector<uint8_t>(2048, 0xab));
  EXPECT_EQ(b.engine.counters().remote_access_errors, 1u);
  EXPECT_EQ(b.state(*c.b), QpState::kRts);
  a.post_send(*c.a, write(0, 2048, dst.key));
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 2048), expected(0, 2048));
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  EXPECT_EQ(sent[1].opcode, kCqeReq);
}

TEST_F(UcTest, ReadAndAtomicsAreRefusedAtTheRequester) {
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0),
                     .rkey = dst.key});
  p.pump();
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_EQ(sent[0].syndrome, kSynLocalQpOperation);
  EXPECT_TRUE(opcodes_to_b.empty());
  EXPECT_EQ(a.state(*c.a), QpState::kSqError);
}

// IBA 10.3.1: a UC send that completes in error moves the QP to SQE. Sends posted then are flushed,
// the receive side keeps working, and SQERR2RTS brings the send queue back.
TEST_F(UcTest, SendErrorStopsOnlyTheSendQueueUntilSqErrToRts) {
  a.post_send(*c.a, {.sges = {{src.va(0), 64, src.key ^ 0x100}}});  // no such lkey
  a.post_send(*c.a, send(0, 64));
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_EQ(sent[0].syndrome, kSynLocalProtection);
  EXPECT_EQ(sent[1].opcode, kCqeReqErr);
  EXPECT_EQ(sent[1].syndrome, kSynWrFlushed);
  EXPECT_EQ(a.state(*c.a), QpState::kSqError);
  EXPECT_TRUE(opcodes_to_b.empty());
  // B sends to A in the meantime: A's receive queue still takes it.
  Mr back = b.reg_mr(4096);
  b.put(back, 0, pattern(4096, 3));
  Mr landing = a.reg_mr(4096);
  const uint16_t r0 = a.post_recv(*c.a, {{landing.va(0), 4096, landing.key}});
  b.post_send(*c.b, {.sges = {{back.va(0), 2000, back.key}}});
  p.pump();
  auto recv = a.drain(*c.a->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].opcode, kCqeRespSend);
  EXPECT_EQ(recv[0].wqe_counter, r0);
  EXPECT_EQ(a.get(landing, 0, 2000), b.get(back, 0, 2000));
  // Back to RTS: the next send goes out.
  a.sqe_to_rts(*c.a);
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  const uint16_t r1 = b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, send(100, 500));
  p.pump();
  sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wqe_counter, r1);
  EXPECT_EQ(b.get(dst, 0, 500), expected(100, 500));
}

TEST_F(UcTest, FramesOfAnotherServiceAreDropped) {
  // B's UC QP gets an RC SEND ONLY with the right PSN: not its service.
  b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, send(0, 64));
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 1u);
  auto parsed = parse(frames[0]);
  ASSERT_EQ(parsed.error, transport::ParseError::kNone);
  transport::RocePacket rc = parsed.packet;
  rc.opcode = op::kRcSendOnly;
  p.inject({.to = 1, .bytes = transport::build_frame(rc)});
  p.pump();
  EXPECT_EQ(b.engine.counters().rx_wrong_service, 1u);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
}

}  // namespace
}  // namespace hcaemu::model::test

int sc_main(int, char**) { return 0; }
