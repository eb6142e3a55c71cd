// The UD service and the GSI QP (QP1) between two functions on the test wire (IBA 9.8, 10.2.4.2):
// a datagram is one UD SEND packet with a DETH, addressed by the WQE's address vector; the sender
// completes it once it is on the wire; the receiver finds the 40-byte GRH (here 20 zero bytes and
// the IPv4 header) before the payload and the source QP in the CQE. A datagram with a wrong Q_Key,
// no receive posted or too long for the receive completes nothing or completes that one receive
// in error, and the QP stays up. A send error stops only the send queue (SQE) until SQERR2RTS.
// QP1 answers to QPN 1 on the wire and sends from source QP 1.
#include <systemc>

#include <random>

#include "model/prm/qpc_fields.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

namespace op = transport::opcode;

constexpr uint8_t kCqeReq = 0x0, kCqeRespSend = 0x2, kCqeRespSendImm = 0x3, kCqeReqErr = 0xd, kCqeRespErr = 0xe;
constexpr uint8_t kSynLocalLength = 0x01, kSynLocalProtection = 0x04, kSynWrFlushed = 0x05;
constexpr uint32_t kQkey = 0x11111111, kGrh = 40;
constexpr uint8_t kL3Ipv4 = 2;

// The opcode and WQE index of a CQE (what tells which receive or send completed, and how).
void expect_cqe(const Cqe& c, uint8_t opcode, uint16_t index) {
  EXPECT_EQ(c.opcode, opcode);
  EXPECT_EQ(c.wqe_counter, index);
}

struct UdTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  Cq& a_scq = a.make_cq();
  Cq& a_rcq = a.make_cq();
  Cq& b_scq = b.make_cq();
  Cq& b_rcq = b.make_cq();
  Qp& qa = a.create_qp(a_scq, a_rcq, 0, qp_st::kUd);
  Qp& qb = b.create_qp(b_scq, b_rcq, 0, qp_st::kUd);
  Mr src = a.reg_mr(8192);
  Mr dst = b.reg_mr(8192);
  std::vector<WireFrame> seen;

  UdTest() {
    a.bring_up_ud(qa, kQkey);
    b.bring_up_ud(qb, kQkey);
    a.put(src, 0, pattern(8192, 5));
    p.wire.filter = [this](WireFrame& f) {
      seen.push_back(f);
      return true;
    };
  }
  Wr datagram(uint32_t length, uint32_t qkey = kQkey, uint8_t opcode = wqe_op::kSend, uint32_t imm = 0) {
    return {.opcode = opcode, .sges = {{src.va(0), length, src.key}}, .imm = imm,
            .av = a.address_vector(b, qb.qpn, qkey)};
  }
};

TEST_F(UdTest, DatagramArrivesBehindItsGrhWithTheSourceQp) {
  const uint16_t rindex = b.post_recv(qb, {{dst.va(0), 2048 + kGrh, dst.key}});
  const uint16_t sindex = a.post_send(qa, datagram(1500));
  auto sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 1u) << "complete once on the wire, before any answer";
  expect_cqe(sent[0], kCqeReq, sindex);
  EXPECT_EQ(sent[0].send_opcode, wqe_op::kSend);
  p.pump();
  ASSERT_EQ(seen.size(), 1u) << "one packet, no ACK";
  const auto parsed = parse(seen[0]);
  EXPECT_EQ(parsed.packet.opcode, op::kUdSendOnly);
  EXPECT_EQ(parsed.packet.deth.qkey, kQkey);
  EXPECT_EQ(parsed.packet.deth.src_qp, qa.qpn);
  EXPECT_EQ(parsed.packet.dest_qp, qb.qpn);
  EXPECT_EQ(parsed.packet.udp_sport, 0xc123);
  auto recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_cqe(recv[0], kCqeRespSend, rindex);
  EXPECT_EQ(recv[0].byte_cnt, 1500 + kGrh);
  EXPECT_EQ(recv[0].qpn, qb.qpn);
  EXPECT_EQ(recv[0].flags_rqpn & 0xffffff, qa.qpn);
  EXPECT_NE(recv[0].flags_rqpn & (3u << 28), 0u) << "GRH present";
  EXPECT_EQ((recv[0].flags_rqpn >> 24) & 3, kL3Ipv4) << "network header type IPv4";
  const auto grh = b.get(dst, 0, kGrh);
  EXPECT_EQ(std::vector<uint8_t>(grh.begin(), grh.begin() + 20), std::vector<uint8_t>(20, 0));
  EXPECT_EQ(grh[20], 0x45) << "the IPv4 header in the second half";
  EXPECT_TRUE(std::equal(a.gid.end() - 4, a.gid.end(), grh.begin() + 32)) << "source address";
  EXPECT_EQ(b.get(dst, kGrh, 1500), a.get(src, 0, 1500));
}

TEST_F(UdTest, ImmediateAndTheQpsOwnQkey) {
  b.post_recv(qb, {{dst.va(0), 256, dst.key}});
  // A WR Q_Key with the top bit set sends the sending QP's Q_Key (the same here).
  a.post_send(qa, datagram(10, 0x80000000u, wqe_op::kSendImm, 0x01020304));
  p.pump();
  auto recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].opcode, kCqeRespSendImm);
  EXPECT_EQ(recv[0].imm, 0x01020304u);
  EXPECT_EQ(recv[0].byte_cnt, 10 + kGrh);
}

TEST_F(UdTest, WrongQkeyOrNoReceiveIsDroppedAndTheQpStaysUp) {
  a.post_send(qa, datagram(64));  // no receive posted at B
  p.pump();
  EXPECT_EQ(b.engine.counters().datagrams_dropped_no_receive, 1u);
  const uint16_t rindex = b.post_recv(qb, {{dst.va(0), 256, dst.key}});
  a.post_send(qa, datagram(64, 0x22222222));
  p.pump();
  EXPECT_EQ(b.engine.counters().rx_bad_qkey, 1u);
  EXPECT_TRUE(b.drain(b_rcq).empty()) << "the receive is still there";
  a.post_send(qa, datagram(64));
  p.pump();
  auto recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_cqe(recv[0], kCqeRespSend, rindex);
  EXPECT_EQ(a.drain(a_scq).size(), 3u) << "every send completed: nobody answers a datagram";
  EXPECT_EQ(b.state(qb), QpState::kRts);
}

TEST_F(UdTest, DatagramLongerThanTheReceiveCompletesThatReceiveInError) {
  const uint16_t small = b.post_recv(qb, {{dst.va(0), 100, dst.key}});  // 40 + 100 > 100
  const uint16_t next = b.post_recv(qb, {{dst.va(4096), 1024, dst.key}});
  a.post_send(qa, datagram(100));
  a.post_send(qa, datagram(100));
  p.pump();
  auto recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 2u);
  expect_cqe(recv[0], kCqeRespErr, small);
  EXPECT_EQ(recv[0].syndrome, kSynLocalLength);
  expect_cqe(recv[1], kCqeRespSend, next);
  EXPECT_EQ(b.state(qb), QpState::kRts);
  EXPECT_EQ(b.get(dst, 4096 + kGrh, 100), a.get(src, 0, 100));
}

TEST_F(UdTest, SendLargerThanTheMtuIsALocalLengthError) {
  a.post_send(qa, datagram(4097));
  auto sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_EQ(sent[0].syndrome, kSynLocalLength);
  EXPECT_TRUE(p.wire.frames.empty());
}

TEST_F(UdTest, RdmaWriteOnAUdQpIsRefused) {
  a.post_send(qa, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 8, src.key}}, .remote_va = dst.va(0),
                   .rkey = dst.key, .av = a.address_vector(b, qb.qpn, kQkey)});
  auto sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_TRUE(p.wire.frames.empty());
}

TEST_F(UdTest, TheGsiQpIsQpOneOnTheWire) {
  Qp& ga = a.create_qp(a_scq, a_rcq, 0, qp_st::kQp1);
  Qp& gb = b.create_qp(b_scq, b_rcq, 0, qp_st::kQp1);
  constexpr uint32_t kGsiQkey = 0x80010000;
  a.bring_up_ud(ga, kGsiQkey);
  b.bring_up_ud(gb, kGsiQkey);
  const uint16_t rindex = b.post_recv(gb, {{dst.va(0), 256 + kGrh, dst.key}});
  // The MAD layer sends to QPN 1 with the well-known GSI Q_Key.
  a.post_send(ga, {.sges = {{src.va(0), 256, src.key}}, .av = a.address_vector(b, 1, kGsiQkey)});
  p.pump();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(parse(seen[0]).packet.dest_qp, 1u);
  EXPECT_EQ(parse(seen[0]).packet.deth.src_qp, 1u);
  auto recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_cqe(recv[0], kCqeRespSend, rindex);
  EXPECT_EQ(recv[0].qpn, gb.qpn);
  EXPECT_EQ(recv[0].flags_rqpn & 0xffffff, 1u);
  EXPECT_EQ(b.get(dst, kGrh, 256), a.get(src, 0, 256));
}

// A send error (here a bad lkey) moves a UD QP to SQE, not ERR (IBA 10.3.1): sends posted then
// are flushed, datagrams still arrive, and SQERR2RTS brings the send queue back. The kernel's MAD
// layer relies on this for QP1: it moves the QP back with SQERR2RTS and reposts.
TEST_F(UdTest, SendErrorStopsOnlyTheSendQueueUntilSqErrToRts) {
  Wr bad = datagram(64);
  bad.sges[0].lkey ^= 0x100;
  a.post_send(qa, bad);
  a.post_send(qa, datagram(64));
  auto sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_EQ(sent[0].syndrome, kSynLocalProtection);
  EXPECT_EQ(sent[1].opcode, kCqeReqErr);
  EXPECT_EQ(sent[1].syndrome, kSynWrFlushed);
  EXPECT_EQ(a.state(qa), QpState::kSqError);
  EXPECT_TRUE(p.wire.frames.empty());
  // A datagram from B still lands on A.
  Mr landing = a.reg_mr(4096);
  const uint16_t r0 = a.post_recv(qa, {{landing.va(0), 256 + kGrh, landing.key}});
  b.post_send(qb, {.sges = {{dst.va(0), 256, dst.key}}, .av = b.address_vector(a, qa.qpn, kQkey)});
  p.pump();
  auto recv = a.drain(a_rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_cqe(recv[0], kCqeRespSend, r0);
  // Back to RTS: the next datagram goes out and arrives.
  a.sqe_to_rts(qa);
  EXPECT_EQ(a.state(qa), QpState::kRts);
  const uint16_t r1 = b.post_recv(qb, {{dst.va(4096), 100 + kGrh, dst.key}});
  a.post_send(qa, datagram(100));
  p.pump();
  sent = a.drain(a_scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_cqe(recv[0], kCqeRespSend, r1);
  EXPECT_EQ(b.get(dst, 4096 + kGrh, 100), a.get(src, 0, 100));
}

TEST_F(UdTest, ModifyToErrorFlushesPostedReceives) {
  const uint16_t r0 = b.post_recv(qb, {{dst.va(0), 256, dst.key}});
  b.to_error(qb);
  auto recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_cqe(recv[0], kCqeRespErr, r0);
}

// Hostile datagram WQEs: random opcodes, lengths, keys, inline data and address vectors (GID index,
// destination QP, Q_Key, MAC bytes). The engines answer each with a completion or an error CQE, the
// wire drains, QPs end in RTS or ERR (and come back through RESET), and nothing crashes.
TEST_F(UdTest, RandomDatagramWqesAndAddressVectors) {
  std::mt19937_64 rng(0xd1a6);
  auto pick = [&](uint64_t n) { return rng() % n; };
  const uint8_t opcodes[] = {wqe_op::kSend, wqe_op::kSendImm, wqe_op::kNop, wqe_op::kRdmaWrite, wqe_op::kSendInval, 0x0e};
  uint64_t good = 0, errors = 0;
  for (int iteration = 0; iteration < 1500; ++iteration) {
    SCOPED_TRACE(iteration);
    while (b.state(qb) == QpState::kRts && ((qb.rq_head - b.state_of(qb).rq_consumer) & 0xffff) < 4) {
      const uint32_t size = 1 + uint32_t(pick(5000));
      b.post_recv(qb, {{dst.va(pick(8192 - std::min<uint32_t>(size, 8192))), std::min<uint32_t>(size, 8192), dst.key}});
    }
    Wr wr{.opcode = opcodes[pick(std::size(opcodes))], .imm = uint32_t(rng()), .signalled = pick(3) != 0,
          .av = a.address_vector(b, pick(8) ? qb.qpn : uint32_t(rng()) & 0xffffff, pick(6) ? kQkey : uint32_t(rng()))};
    for (uint32_t i = pick(3); i > 0; --i) {
      const uint32_t length = uint32_t(pick(5000));
      wr.sges.push_back({src.va(pick(8192)), length, pick(8) ? src.key : dst.key});
    }
    if (pick(5) == 0) wr.inline_data = pattern(pick(200), uint32_t(iteration));
    for (int flips = int(pick(3)); flips > 0; --flips) (*wr.av)[pick(48)] = uint8_t(rng());  // a damaged address
    a.post_send(qa, wr);
    ASSERT_LT(p.pump(), 16u) << "a datagram is one packet and is never answered";
    for (Cq* cq : {&a_scq, &a_rcq, &b_scq, &b_rcq}) {
      for (const Cqe& e : (cq == &a_scq || cq == &a_rcq ? a : b).drain(*cq)) {
        EXPECT_TRUE(e.opcode == kCqeReq || e.opcode == kCqeRespSend || e.opcode == kCqeRespSendImm ||
                    e.opcode == kCqeReqErr || e.opcode == kCqeRespErr)
            << int(e.opcode);
        (e.opcode >= kCqeReqErr ? errors : good)++;
      }
    }
    for (auto [node, qp] : {std::pair<RdmaNode*, Qp*>{&a, &qa}, {&b, &qb}}) {
      const QpState state = node->state(*qp);
      ASSERT_TRUE(state == QpState::kRts || state == QpState::kSqError || state == QpState::kError)
          << qp_state_name(state);
      if (state == QpState::kSqError) node->sqe_to_rts(*qp);  // as the MAD layer and IPoIB recover
      if (state == QpState::kError) {  // what an application does: back to RESET and up again
        node->to_reset(*qp);
        node->bring_up_ud(*qp, kQkey);
      }
    }
  }
  EXPECT_GT(good, 100u);
  EXPECT_GT(errors, 100u);
}

// Issue 16 (rdma_cm multicast): ATTACH_TO_MCG joins a UD QP to a multicast GID; a datagram to QPN
// 0xffffff, a group MAC and that GID reaches every attached QP of the receiving function (each with
// its own receive, GRH and CQE), no other QP, and nobody once the QPs detach. Only UD QPs join, only
// multicast GIDs; a QP that is destroyed leaves its groups.
struct MulticastTest : UdTest {
  const transport::Gid mgid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3};  // ::ffff:239.1.2.3
  Qp& qb2 = b.create_qp(b_scq, b_rcq, 0, qp_st::kUd);
  Qp& qb3 = b.create_qp(b_scq, b_rcq, 0, qp_st::kUd);
  MulticastTest() {
    b.bring_up_ud(qb2, kQkey);
    b.bring_up_ud(qb3, kQkey);
  }
  uint8_t mcg(RdmaNode& n, uint16_t opcode, uint32_t qpn, const transport::Gid& gid) {
    std::vector<uint8_t> in(0x20);
    store_be32(&in[0x08], qpn);
    std::copy(gid.begin(), gid.end(), &in[0x10]);
    return n.run(opcode, in);
  }
  Wr to_group(uint32_t length) {
    Wr wr = datagram(length);
    store_be32(&(*wr.av)[0x08], 0x80000000u | 0xffffffu);
    const std::array<uint8_t, 6> group_mac{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03};
    std::copy(group_mac.begin(), group_mac.end(), &(*wr.av)[0x14]);
    std::copy(mgid.begin(), mgid.end(), &(*wr.av)[0x20]);
    return wr;
  }
};

TEST_F(MulticastTest, EveryAttachedQpTakesTheDatagramAndOnlyThey) {
  ASSERT_EQ(mcg(b, 0x806, qb.qpn, mgid), 0);
  ASSERT_EQ(mcg(b, 0x806, qb2.qpn, mgid), 0);
  ASSERT_EQ(mcg(b, 0x806, qb2.qpn, mgid), 0) << "attaching twice is harmless";
  b.post_recv(qb, {{dst.va(0), 256, dst.key}});
  b.post_recv(qb2, {{dst.va(1024), 256, dst.key}});
  b.post_recv(qb3, {{dst.va(2048), 256, dst.key}});
  a.post_send(qa, to_group(100));
  p.pump();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(parse(seen[0]).packet.dest_qp, 0xffffffu);
  auto recv = b.drain(b_rcq);
  ASSERT_EQ(recv.size(), 2u) << "one copy per attached QP";
  EXPECT_EQ(recv[0].qpn, qb.qpn);
  EXPECT_EQ(recv[1].qpn, qb2.qpn);
  for (const Cqe& c : recv) EXPECT_EQ(c.byte_cnt, 100 + kGrh);
  EXPECT_EQ(b.get(dst, kGrh, 100), a.get(src, 0, 100));
  EXPECT_EQ(b.get(dst, 1024 + kGrh, 100), a.get(src, 0, 100));
  EXPECT_EQ(b.get(dst, 2048, 140), std::vector<uint8_t>(140, 0)) << "the unattached QP got nothing";
  EXPECT_EQ(b.engine.counters().multicast_received, 1u);
  // Both leave: the next datagram is nobody's.
  ASSERT_EQ(mcg(b, 0x807, qb.qpn, mgid), 0);
  ASSERT_EQ(mcg(b, 0x807, qb2.qpn, mgid), 0);
  EXPECT_NE(mcg(b, 0x807, qb2.qpn, mgid), 0) << "not attached any more";
  a.post_send(qa, to_group(100));
  p.pump();
  EXPECT_TRUE(b.drain(b_rcq).empty());
  EXPECT_EQ(b.engine.counters().multicast_no_member, 1u);
}

TEST_F(MulticastTest, OnlyUdQpsAndMulticastGidsJoinAndDestroyedQpsLeave) {
  Qp& rc = b.create_qp(b_scq, b_rcq, 0, qp_st::kRc);
  EXPECT_EQ(mcg(b, 0x806, rc.qpn, mgid), 0x3) << "an RC QP: BAD_PARAM";
  EXPECT_EQ(mcg(b, 0x806, qb.qpn, b.gid), 0x3) << "a unicast GID: BAD_PARAM";
  EXPECT_EQ(mcg(b, 0x806, 0xabcd, mgid), 0x5) << "no such QP: BAD_RESOURCE";
  ASSERT_EQ(mcg(b, 0x806, qb3.qpn, mgid), 0);
  EXPECT_EQ(b.f.resources.multicast.members(mgid).size(), 1u);
  std::vector<uint8_t> destroy(0x10);
  store_be32(&destroy[0x08], qb3.qpn);
  ASSERT_EQ(b.run(0x501, destroy), 0);
  EXPECT_EQ(b.f.resources.multicast.groups(), 0u) << "the destroyed QP left its group";
}

// A function's own multicast comes back to it inside the NIC (the eswitch loops group frames back):
// its attached QPs take it, except a QP created with block_lb_mc (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB).
TEST_F(MulticastTest, OwnDatagramsSkipQpsThatBlockMulticastLoopback) {
  Qp& blocking = a.create_qp(a_scq, a_rcq, 0, qp_st::kUd);
  Qp& taking = a.create_qp(a_scq, a_rcq, 0, qp_st::kUd);
  a.bring_up_ud(blocking, kQkey);
  a.bring_up_ud(taking, kQkey);
  set(a.f.resources.qps.find(blocking.qpn)->context, qpc::kBlockLbMc, 1);  // as CREATE_QP keeps the qpc
  ASSERT_EQ(mcg(a, 0x806, blocking.qpn, mgid), 0);
  ASSERT_EQ(mcg(a, 0x806, taking.qpn, mgid), 0);
  Mr own = a.reg_mr(4096);
  a.post_recv(blocking, {{own.va(0), 256, own.key}});
  a.post_recv(taking, {{own.va(1024), 256, own.key}});
  a.post_send(qa, to_group(64));
  a.drain(a_scq);
  ASSERT_EQ(p.wire.frames.size(), 1u);
  WireFrame looped = p.take()[0];
  looped.to = 0;  // back to the sender, as the eswitch's loopback does
  p.inject(std::move(looped));
  p.pump();
  auto recv = a.drain(a_rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].qpn, taking.qpn);
  EXPECT_EQ(a.get(own, 1024 + kGrh, 64), a.get(src, 0, 64));
  EXPECT_EQ(a.engine.counters().multicast_loopback_blocked, 1u);
}

TEST(MulticastGroups, BoundedByTheCaps) {
  MulticastGroups groups;
  MulticastGroups::Gid gid{0xff, 0x0e};
  for (uint32_t qpn = 1; qpn <= MulticastGroups::kMaxQpsPerGroup; ++qpn)
    ASSERT_EQ(groups.attach(gid, qpn), MulticastGroups::Result::kOk);
  EXPECT_EQ(groups.attach(gid, 1000), MulticastGroups::Result::kGroupFull);
  for (uint32_t g = 1; g < (1u << MulticastGroups::kLogMaxGroups); ++g) {
    gid[15] = uint8_t(g), gid[14] = uint8_t(g >> 8);
    ASSERT_EQ(groups.attach(gid, 1), MulticastGroups::Result::kOk);
  }
  gid[13] = 1;
  EXPECT_EQ(groups.attach(gid, 1), MulticastGroups::Result::kTooManyGroups);
  groups.forget_qp(1);
  EXPECT_EQ(groups.groups(), 1u) << "only the first group had other members";
  EXPECT_TRUE(is_multicast_gid({0xff, 0x02}));
  EXPECT_TRUE(is_multicast_gid({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 224, 0, 0, 1}));
  EXPECT_FALSE(is_multicast_gid({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}));
  EXPECT_FALSE(is_multicast_gid({0xfe, 0x80}));
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
