// The RC data path (rdma/engine.cpp) between two functions over RoCEv2 frames on a test wire:
// every operation libmlx5 posts (SEND/IMM/INV, inline, RDMA WRITE/IMM, READ, atomics), the
// transport's recovery (go-back-N after a loss, duplicates, RNR, timeouts, retry budgets) and the
// error paths a guest or the wire can provoke. Data is compared byte for byte in both host
// memories; CQEs are checked on the fields libmlx5 reads (opcode, syndrome, wqe_counter,
// byte_cnt, qpn, immediate).
#include <systemc>
#include <thread>

#include <random>

#include "testbench/model/rdma_fixture.h"

// Work requests are written with designated initializers that name only what they use; GCC 12
// warns about the members left to their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

namespace op = transport::opcode;

constexpr uint8_t kCqeReq = 0x0, kCqeRespWriteImm = 0x1, kCqeRespSend = 0x2, kCqeRespSendImm = 0x3,
                  kCqeRespSendInv = 0x4, kCqeReqErr = 0xd, kCqeRespErr = 0xe;
constexpr uint8_t kSynLocalQpOperation = 0x02, kSynLocalProtection = 0x04, kSynFlushed = 0x05,
                  kSynRemoteInvalidRequest = 0x12, kSynRemoteAccess = 0x13, kSynRetryExceeded = 0x15,
                  kSynRnrRetryExceeded = 0x16;
constexpr uint32_t kPmtu = 1024;

void expect_requester(const Cqe& c, uint8_t wqe_opcode, uint16_t index, uint32_t qpn, uint32_t bytes = 0) {
  EXPECT_EQ(c.opcode, kCqeReq);
  EXPECT_EQ(c.send_opcode, wqe_opcode);
  EXPECT_EQ(c.wqe_counter, index);
  EXPECT_EQ(c.qpn, qpn);
  EXPECT_EQ(c.byte_cnt, bytes);
}
void expect_responder(const Cqe& c, uint8_t opcode, uint16_t index, uint32_t qpn, uint32_t bytes, uint32_t imm = 0) {
  EXPECT_EQ(c.opcode, opcode);
  EXPECT_EQ(c.wqe_counter, index);
  EXPECT_EQ(c.qpn, qpn);
  EXPECT_EQ(c.byte_cnt, bytes);
  EXPECT_EQ(c.imm, imm);
}
void expect_error(const Cqe& c, uint8_t opcode, uint8_t syndrome, uint16_t index, uint32_t qpn) {
  EXPECT_EQ(c.opcode, opcode);
  EXPECT_EQ(c.syndrome, syndrome) << std::hex << "syndrome " << unsigned(c.syndrome);
  EXPECT_EQ(c.wqe_counter, index);
  EXPECT_EQ(c.qpn, qpn);
}

struct RdmaTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;

  // An SRQ at B and the CQs (send and receive at A, at B) of RC connections that receive through it.
  struct SharedReceive {
    Srq& srq;
    Cq &sa, &ra, &sb, &rb;
  };
  SharedReceive shared_receive() { return {b.make_srq(), a.make_cq(), a.make_cq(), b.make_cq(), b.make_cq()}; }
  // An RC connection whose B side receives through `s.srq`, up to RTS.
  Connection connect_through(SharedReceive& s) {
    Connection c{&a.create_qp(s.sa, s.ra), &b.create_qp(s.sb, s.rb, 0, qp_st::kRc, &s.srq)};
    p.bring_up(*c.a, *c.b, {});
    return c;
  }

  // A SEND A -> B and an RDMA WRITE B -> A on `c` complete with their data.
  void expect_works(Connection& c) {
    SCOPED_TRACE("the other connection still works");
    const Mr src = a.reg_mr(300), dst = b.reg_mr(300);
    const auto data = pattern(300, 99);
    a.put(src, 0, data);
    const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 300, dst.key}});
    const uint16_t sindex = a.post_send(*c.a, {.sges = {{src.va(0), 300, src.key}}});
    p.pump();
    auto recv = b.drain(*c.b->rcq);
    auto sent = a.drain(*c.a->scq);
    ASSERT_EQ(recv.size(), 1u);
    ASSERT_EQ(sent.size(), 1u);
    expect_responder(recv[0], kCqeRespSend, rindex, c.b->qpn, 300);
    expect_requester(sent[0], wqe_op::kSend, sindex, c.a->qpn);
    EXPECT_EQ(b.get(dst, 0, 300), data);
    const auto back = pattern(200, 98);
    b.put(dst, 0, back);
    const uint16_t windex = b.post_send(*c.b, {.opcode = wqe_op::kRdmaWrite, .sges = {{dst.va(0), 200, dst.key}},
                                               .remote_va = src.va(50), .rkey = src.key});
    p.pump();
    auto written = b.drain(*c.b->scq);
    ASSERT_EQ(written.size(), 1u);
    expect_requester(written[0], wqe_op::kRdmaWrite, windex, c.b->qpn);
    EXPECT_EQ(a.get(src, 50, 200), back);
    EXPECT_EQ(a.state(*c.a), QpState::kRts);
    EXPECT_EQ(b.state(*c.b), QpState::kRts);
  }

  // One SEND of `size` bytes A -> B into a buffer larger than it; checks data, both CQEs and the
  // packet count.
  void send_and_check(Connection& c, uint32_t size, uint8_t opcode = wqe_op::kSend, uint32_t imm = 0) {
    const Mr src = a.reg_mr(size, access_bits::kLocalWrite, 0, 0x123);
    const Mr dst = b.reg_mr(size + 64, access_bits::kLocalWrite, 0, 0x40);
    const auto data = pattern(size, size);
    const auto guard = pattern(64, 7);
    a.put(src, 0, data);
    b.put(dst, size, guard);
    const uint64_t tx_before = a.engine.counters().tx_packets;
    const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), size + 64, dst.key}});
    const uint16_t sindex = a.post_send(*c.a, {.opcode = opcode, .sges = {{src.va(0), size, src.key}}, .imm = imm});
    EXPECT_EQ(a.engine.counters().tx_packets - tx_before, (size + kPmtu - 1) / kPmtu);
    p.pump();
    auto recv = b.drain(*c.b->rcq);
    auto sent = a.drain(*c.a->scq);
    ASSERT_EQ(recv.size(), 1u);
    ASSERT_EQ(sent.size(), 1u);
    const uint8_t resp = opcode == wqe_op::kSendImm ? kCqeRespSendImm : opcode == wqe_op::kSendInval ? kCqeRespSendInv : kCqeRespSend;
    expect_responder(recv[0], resp, rindex, c.b->qpn, size, opcode == wqe_op::kSend ? 0 : imm);
    expect_requester(sent[0], opcode, sindex, c.a->qpn);
    EXPECT_EQ(b.get(dst, 0, size), data);
    EXPECT_EQ(b.get(dst, size, 64), guard) << "nothing written past the message";
  }
};

// ---- Operations ---------------------------------------------------------------------------------

TEST_F(RdmaTest, SendOfOneByteOneMtuOneMtuPlusOneAnd64KiB) {
  auto c = p.connect({.sq_psn_a = 0xfffff0});  // the 64-packet message wraps the 24-bit PSN
  for (uint32_t size : {1u, 1024u, 1025u, 65536u}) {
    SCOPED_TRACE(size);
    send_and_check(c, size);
  }
  EXPECT_EQ(a.engine.counters().retransmits, 0u);
  EXPECT_EQ(b.engine.counters().naks_sent, 0u);
  EXPECT_EQ(a.engine.counters().messages_completed, 4u);
}

// The driver posted two WQEs (the doorbell record says so) but has rung only for the first: the
// device takes the first alone, the second at its own doorbell. In a live run the guest posts on
// the wall clock, so taking what the record holds when the device reads it would make the run
// depend on host timing.
TEST_F(RdmaTest, TheSqGoesAsFarAsTheDoorbellsRungNotTheRecord) {
  auto c = p.connect();
  const Mr src = a.reg_mr(100), dst = b.reg_mr(100);
  std::vector<uint8_t> data(100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i + 1);
  a.put(src, 0, data);
  const uint16_t r0 = b.post_recv(*c.b, {{dst.va(0), 50, dst.key}});
  const uint16_t r1 = b.post_recv(*c.b, {{dst.va(50), 50, dst.key}});
  const uint16_t s0 = a.post_send(*c.a, {.sges = {{src.va(0), 50, src.key}}}, /*ring_now=*/false);
  const std::vector<uint8_t> first_bell = a.publish(*c.a);
  const uint16_t s1 = a.post_send(*c.a, {.sges = {{src.va(50), 50, src.key}}}, /*ring_now=*/false);
  const std::vector<uint8_t> second_bell = a.publish(*c.a);  // the record now covers both
  ASSERT_TRUE(a.work_item([&] { return a.engine.doorbell(first_bell); }));
  p.pump();
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u) << "only the rung WQE went";
  expect_responder(recv[0], kCqeRespSend, r0, c.b->qpn, 50, 0);
  ASSERT_EQ(a.drain(*c.a->scq).size(), 1u);
  ASSERT_TRUE(a.work_item([&] { return a.engine.doorbell(second_bell); }));
  p.pump();
  recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSend, r1, c.b->qpn, 50, 0);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kSend, s1, c.a->qpn);
  EXPECT_EQ(b.get(dst, 0, 100), data) << "both messages landed, in order";
  EXPECT_NE(s0, s1);
}

TEST_F(RdmaTest, SendWithImmediateAndWithInvalidate) {
  auto c = p.connect();
  send_and_check(c, 40, wqe_op::kSendImm, 0x11223344);
  send_and_check(c, 3000, wqe_op::kSendImm, 0xdeadbeef);
  const Mr registered = b.reg_mr(4096, access_bits::kAll | access_bits::kUmrEn);  // as a kernel ULP's fast-reg MR
  send_and_check(c, 2500, wqe_op::kSendInval, registered.key);
  EXPECT_EQ(b.engine.counters().remote_invalidations, 1u);
  // The key is free now: an RDMA WRITE through it is refused with a remote access error.
  const Mr src = a.reg_mr(64);
  const uint16_t windex = a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}},
                                             .remote_va = registered.va(0), .rkey = registered.key});
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_error(sent[0], kCqeReqErr, kSynRemoteAccess, windex, c.a->qpn);
}

// Only a key made for registration by UMR, of the receiving QP's PD, can be invalidated by the
// remote side; naming any other ends the message as an invalid request on both sides and leaves
// the key as it was.
TEST_F(RdmaTest, SendWithInvalidateOfAKeyThatCannotBeInvalidated) {
  const Mr plain = b.reg_mr(4096);
  const uint32_t other_pd = b.alloc_pd();
  const Mr of_other_pd = b.reg_mr(4096, access_bits::kAll | access_bits::kUmrEn, other_pd);
  for (const uint32_t key : {plain.key, of_other_pd.key, 0x00fedc00u}) {
    SCOPED_TRACE(key);
    auto c = p.connect();
    const Mr src = a.reg_mr(100), dst = b.reg_mr(100);
    const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 100, dst.key}});
    const uint16_t sindex = a.post_send(*c.a, {.opcode = wqe_op::kSendInval, .sges = {{src.va(0), 100, src.key}}, .imm = key});
    p.pump();
    auto sent = a.drain(*c.a->scq);
    ASSERT_EQ(sent.size(), 1u);
    expect_error(sent[0], kCqeReqErr, kSynRemoteInvalidRequest, sindex, c.a->qpn);
    auto recv = b.drain(*c.b->rcq);
    ASSERT_EQ(recv.size(), 1u);
    expect_error(recv[0], kCqeRespErr, kSynRemoteInvalidRequest, rindex, c.b->qpn);
    EXPECT_EQ(b.state(*c.b), QpState::kError);
  }
  EXPECT_EQ(b.engine.counters().remote_invalidations, 0u);
  EXPECT_FALSE(b.f.resources.mkeys.find(plain.key >> 8)->free);
  EXPECT_FALSE(b.f.resources.mkeys.find(of_other_pd.key >> 8)->free);
  auto fresh = p.connect();
  expect_works(fresh);
}

// Two QPs at B receive through one SRQ (what ibv_srq_pingpong does): each message takes the next
// WQE of the shared list whichever QP it arrives on, the CQE names the QP and the SRQ; with the SRQ
// empty the responder sends an RNR NAK and the message lands once a WQE is posted.
TEST_F(RdmaTest, TwoQpsReceiveThroughOneSrq) {
  SharedReceive shared = shared_receive();
  auto& [srq, sa, ra, sb, rb] = shared;
  Connection c1 = connect_through(shared);
  Connection c2 = connect_through(shared);
  const Mr src = a.reg_mr(4096), dst = b.reg_mr(3 * 4096);
  a.put(src, 0, pattern(4096, 61));
  const uint16_t w0 = b.post_srq_recv(srq, {{dst.va(0), 4096, dst.key}});
  const uint16_t w1 = b.post_srq_recv(srq, {{dst.va(4096), 100, dst.key}, {dst.va(8192), 4000, dst.key}});
  a.post_send(*c2.a, {.sges = {{src.va(0), 3000, src.key}}});  // c2 first: it takes the head, w0
  a.post_send(*c1.a, {.sges = {{src.va(100), 2000, src.key}}});
  p.pump();
  auto recv = b.drain(rb);
  ASSERT_EQ(recv.size(), 2u);
  expect_responder(recv[0], kCqeRespSend, w0, c2.b->qpn, 3000);
  expect_responder(recv[1], kCqeRespSend, w1, c1.b->qpn, 2000);
  EXPECT_EQ(recv[0].user_index, c2.b->user_index) << "cqe_version 1: the QP's user index, not the SRQN";
  EXPECT_EQ(recv[1].user_index, c1.b->user_index);
  EXPECT_EQ(b.get(dst, 0, 3000), a.get(src, 0, 3000));
  EXPECT_EQ(b.get(dst, 4096, 100), a.get(src, 100, 100)) << "first SGE of w1";
  EXPECT_EQ(b.get(dst, 8192, 1900), a.get(src, 200, 1900)) << "second SGE of w1";
  const auto sent = a.drain(sa);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].user_index, c2.a->user_index) << "requester CQEs name their QP by user index too";
  EXPECT_EQ(sent[1].user_index, c1.a->user_index);
  // The SRQ is empty now: RNR, then a WQE is posted and the retry lands in it.
  a.post_send(*c1.a, {.sges = {{src.va(0), 64, src.key}}});
  p.pump();
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 1u);
  const uint16_t w2 = b.post_srq_recv(srq, {{dst.va(0), 64, dst.key}});
  ASSERT_TRUE(p.fire_timers(a));
  p.pump();
  recv = b.drain(rb);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSend, w2, c1.b->qpn, 64);
  EXPECT_EQ(b.f.resources.srqs.find(srq.srqn)->consumed, 3u);
  // An SRQ WQE with a bad lkey: the error CQE names the QP by its user index; libmlx5 frees the WQE
  // in that QP's SRQ (it has no RQ of its own to take it from).
  const uint16_t w3 = b.post_srq_recv(srq, {{dst.va(0), 64, dst.key ^ 0x100}});
  a.post_send(*c2.a, {.sges = {{src.va(0), 64, src.key}}});
  p.pump();
  recv = b.drain(rb);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].opcode, kCqeRespErr);
  EXPECT_EQ(recv[0].syndrome, kSynLocalProtection);
  EXPECT_EQ(recv[0].wqe_counter, w3);
  EXPECT_EQ(recv[0].user_index, c2.b->user_index);
}

// Issue 16 (rdma-core's test_modify_srq_limit): ibv_modify_srq(IBV_SRQ_LIMIT) arms the limit
// (ARM_RQ, read back by QUERY_SRQ); once fewer WQEs than it remain, one SRQ_RQ_LIMIT event names the
// SRQ on the EQ subscribed to it, and the limit disarms.
TEST_F(RdmaTest, SrqLimitEventOnceFewerWqesRemainThanArmed) {
  SharedReceive shared = shared_receive();
  auto& [srq, sa, ra, sb, rb] = shared;
  Connection c = connect_through(shared);
  const uint64_t async_ring = b.page();
  const uint32_t async_eq = b.create_eq(4, b.uar, 0, 1ull << 0x14, {async_ring});
  const Mr src = a.reg_mr(4096), dst = b.reg_mr(4096);
  for (int i = 0; i < 10; ++i) b.post_srq_recv(srq, {{dst.va(64 * i), 64, dst.key}});
  std::vector<uint8_t> arm(0x10);
  store_be32(&arm[0x08], srq.srqn);
  store_be32(&arm[0x0c], 7);
  ASSERT_EQ(b.run(0x703, arm, 16, 1), 0);
  std::vector<uint8_t> query(0x10);
  store_be32(&query[0x08], srq.srqn);
  ASSERT_EQ(b.run(0x702, query, 0x110), 0);
  EXPECT_EQ(b.out32(0x10 + 0x1c) >> 16, 7u) << "srqc.lwm: what ibv_query_srq reports";
  auto events = [&] {
    std::vector<std::pair<uint8_t, uint32_t>> seen;
    for (uint32_t i = 0; i < 16; ++i) {
      const auto e = b.read(async_ring + 64 * i, 64);
      if (e[0x01] != 0) seen.emplace_back(e[0x01], load_be32(&e[0x20 + 0x18]) & 0xffffff);  // mlx5_eqe_qp_srq
    }
    return seen;
  };
  for (int i = 0; i < 3; ++i) a.post_send(*c.a, {.sges = {{src.va(0), 16, src.key}}});
  p.pump();
  EXPECT_TRUE(events().empty()) << "7 remain: not below the limit";
  a.post_send(*c.a, {.sges = {{src.va(0), 16, src.key}}});
  p.pump();
  EXPECT_EQ(events(), (std::vector<std::pair<uint8_t, uint32_t>>{{0x14, srq.srqn}}));
  ASSERT_EQ(b.run(0x702, query, 0x110), 0);
  EXPECT_EQ(b.out32(0x10 + 0x1c) >> 16, 0u) << "disarmed";
  a.post_send(*c.a, {.sges = {{src.va(0), 16, src.key}}});
  p.pump();
  EXPECT_EQ(events().size(), 1u) << "one event per arming";
  EXPECT_EQ(b.drain(rb).size(), 5u);
  store_be32(&arm[0x0c], 1000);
  EXPECT_EQ(b.run(0x703, arm, 16, 1), 0x3) << "a limit beyond the SRQ's size";
  (void)async_eq;
}

TEST_F(RdmaTest, ZeroLengthSend) {
  auto c = p.connect();
  const Mr dst = b.reg_mr(64);
  const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 64, dst.key}});
  const uint16_t sindex = a.post_send(*c.a, {.opcode = wqe_op::kSendImm, .imm = 7});
  p.pump();
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSendImm, rindex, c.b->qpn, 0, 7);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kSendImm, sindex, c.a->qpn);
}

TEST_F(RdmaTest, InlineSendAcrossTheRingEnd) {
  auto c = p.connect();
  const Mr dst = b.reg_mr(4096);
  // 62 unsignalled NOPs: the inline SEND (4 WQEBBs) then starts two blocks before the ring end.
  for (int i = 0; i < 62; ++i) a.post_send(*c.a, {.opcode = wqe_op::kNop, .signalled = false}, false);
  EXPECT_TRUE(a.ring(*c.a));
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  const auto data = pattern(200, 5);
  const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  const uint16_t sindex = a.post_send(*c.a, {.opcode = wqe_op::kSend, .inline_data = data});
  EXPECT_EQ(sindex, 62);
  EXPECT_EQ(c.a->sq_pi, 66u);
  p.pump();
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSend, rindex, c.b->qpn, 200);
  EXPECT_EQ(b.get(dst, 0, 200), data);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kSend, 62, c.a->qpn);
  EXPECT_EQ(a.state_of(*c.a).sq_consumer, 66u);
}

TEST_F(RdmaTest, MultiSgeSendIntoMultiSgeReceiveAtUnalignedOffsets) {
  auto c = p.connect();
  const Mr src = a.reg_mr(3 * 4096, access_bits::kLocalWrite, 0, 13);
  const Mr dst = b.reg_mr(4 * 4096, access_bits::kLocalWrite, 0, 4001);
  a.put(src, 0, pattern(3 * 4096, 1));
  b.put(dst, 0, std::vector<uint8_t>(4 * 4096, 0xee));
  const std::vector<Sg> gather = {{src.va(5), 700, src.key}, {src.va(3000), 1500, src.key}, {src.va(8190), 811, src.key}};
  const std::vector<Sg> scatter = {{dst.va(7), 1000, dst.key}, {dst.va(4093), 333, dst.key}, {dst.va(9001), 2000, dst.key}};
  std::vector<uint8_t> sent_bytes;
  for (const Sg& s : gather) {
    const auto part = a.get(src, s.addr - src.iova, s.length);
    sent_bytes.insert(sent_bytes.end(), part.begin(), part.end());
  }
  ASSERT_EQ(sent_bytes.size(), 3011u);
  const uint16_t rindex = b.post_recv(*c.b, scatter);
  a.post_send(*c.a, {.sges = gather});
  p.pump();
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSend, rindex, c.b->qpn, 3011);
  // The message fills the receive SGEs in order: 1000, 333, then 1678 of the last 2000.
  auto expected = std::vector<uint8_t>(4 * 4096, 0xee);
  size_t at = 0;
  for (const Sg& s : scatter) {
    const size_t n = std::min<size_t>(s.length, sent_bytes.size() - at);
    std::copy_n(sent_bytes.begin() + at, n, expected.begin() + (s.addr - dst.iova));
    at += n;
  }
  EXPECT_EQ(b.get(dst, 0, 4 * 4096), expected);
  ASSERT_EQ(a.drain(*c.a->scq).size(), 1u);
}

TEST_F(RdmaTest, RdmaWriteMultiPacketTouchesOnlyItsRange) {
  auto c = p.connect();
  const Mr src = a.reg_mr(5000, access_bits::kLocalWrite, 0, 9);
  const Mr dst = b.reg_mr(3 * 4096, access_bits::kLocalWrite | access_bits::kRemoteWrite, 0, 100);
  const auto data = pattern(5000, 3);
  a.put(src, 0, data);
  b.put(dst, 0, std::vector<uint8_t>(3 * 4096, 0x5a));
  b.post_recv(*c.b, {{dst.va(0), 16, dst.key}});
  const uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 5000, src.key}},
                                            .remote_va = dst.va(77), .rkey = dst.key});
  EXPECT_EQ(a.engine.counters().tx_packets, 5u);
  p.pump();
  auto expected = std::vector<uint8_t>(3 * 4096, 0x5a);
  std::copy(data.begin(), data.end(), expected.begin() + 77);
  EXPECT_EQ(b.get(dst, 0, 3 * 4096), expected);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kRdmaWrite, index, c.a->qpn);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty()) << "a WRITE consumes no receive WQE";
  EXPECT_EQ(b.state_of(*c.b).rq_consumer, 0u);
}

TEST_F(RdmaTest, RdmaWriteWithImmediateConsumesOneReceive) {
  auto c = p.connect();
  const Mr src = a.reg_mr(3000);
  const Mr dst = b.reg_mr(4096);
  const Mr unused = b.reg_mr(64);
  const auto data = pattern(3000, 4);
  a.put(src, 0, data);
  b.put(unused, 0, std::vector<uint8_t>(64, 0x33));
  const uint16_t rindex = b.post_recv(*c.b, {{unused.va(0), 64, unused.key}});
  const uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kRdmaWriteImm, .sges = {{src.va(0), 3000, src.key}},
                                            .remote_va = dst.va(1000), .rkey = dst.key, .imm = 0xcafef00d});
  p.pump();
  EXPECT_EQ(b.get(dst, 1000, 3000), data);
  EXPECT_EQ(b.get(unused, 0, 64), std::vector<uint8_t>(64, 0x33)) << "the receive buffer is not written";
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespWriteImm, rindex, c.b->qpn, 3000, 0xcafef00d);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kRdmaWriteImm, index, c.a->qpn);
}

TEST_F(RdmaTest, RdmaReadMultiPacketIntoMultiSgeLocal) {
  auto c = p.connect();
  const Mr remote = b.reg_mr(8192, access_bits::kRemoteRead, 0, 17);
  const Mr local = a.reg_mr(3 * 4096, access_bits::kLocalWrite, 0, 2000);
  const auto data = pattern(8192, 11);
  b.put(remote, 0, data);
  a.put(local, 0, std::vector<uint8_t>(3 * 4096, 0x11));
  const std::vector<Sg> scatter = {{local.va(3), 1500, local.key}, {local.va(5000), 100, local.key}, {local.va(7000), 2400, local.key}};
  const uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = scatter, .remote_va = remote.va(100),
                                            .rkey = remote.key});
  EXPECT_EQ(a.engine.counters().tx_packets, 1u) << "one READ request";
  p.pump();
  EXPECT_EQ(b.engine.counters().tx_packets, 4u) << "4000 bytes in 4 responses";
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kRdmaRead, index, c.a->qpn, 4000);
  auto expected = std::vector<uint8_t>(3 * 4096, 0x11);
  size_t at = 100;
  for (const Sg& s : scatter) {
    std::copy_n(data.begin() + at, s.length, expected.begin() + (s.addr - local.iova));
    at += s.length;
  }
  EXPECT_EQ(a.get(local, 0, 3 * 4096), expected);
  EXPECT_EQ(b.get(remote, 0, 8192), data) << "READ leaves the remote as it was";
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
}

TEST_F(RdmaTest, AtomicsRunInHostByteOrderOnBothSides) {
  auto c = p.connect();
  const Mr remote = b.reg_mr(64, access_bits::kAtomic | access_bits::kLocalWrite);
  const Mr local = a.reg_mr(64);
  b.put64(remote, 0, 0x1111222233334444ull);
  b.put64(remote, 8, 0x5555666677778888ull);
  b.put64(remote, 16, 0x00000000fffffff0ull);
  // Compare and swap, matching.
  uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kAtomicCs, .sges = {{local.va(0), 8, local.key}},
                                      .remote_va = remote.va(0), .rkey = remote.key,
                                      .swap_add = 0xaaaabbbbccccddddull, .compare = 0x1111222233334444ull});
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kAtomicCs, index, c.a->qpn, 8);
  EXPECT_EQ(b.get64(remote, 0), 0xaaaabbbbccccddddull);
  EXPECT_EQ(a.get64(local, 0), 0x1111222233334444ull);
  EXPECT_EQ(b.get(remote, 0, 1)[0], 0xdd) << "little-endian in host memory";
  // Compare and swap, not matching: nothing changes, the original comes back.
  index = a.post_send(*c.a, {.opcode = wqe_op::kAtomicCs, .sges = {{local.va(8), 8, local.key}},
                             .remote_va = remote.va(8), .rkey = remote.key, .swap_add = 1, .compare = 2});
  p.pump();
  sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kAtomicCs, index, c.a->qpn, 8);
  EXPECT_EQ(b.get64(remote, 8), 0x5555666677778888ull);
  EXPECT_EQ(a.get64(local, 8), 0x5555666677778888ull);
  // Fetch and add with a carry across the 32-bit halves.
  index = a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{local.va(16), 8, local.key}},
                             .remote_va = remote.va(16), .rkey = remote.key, .swap_add = 0x20});
  p.pump();
  sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kAtomicFa, index, c.a->qpn, 8);
  EXPECT_EQ(b.get64(remote, 16), 0x0000000100000010ull);
  EXPECT_EQ(a.get64(local, 16), 0x00000000fffffff0ull);
}

TEST_F(RdmaTest, UnsignalledWqesThenASignalledOneGiveOneCqe) {
  auto c = p.connect();
  const Mr src = a.reg_mr(4096);
  const Mr dst = b.reg_mr(4096);
  a.put(src, 0, pattern(4096, 8));
  for (int i = 0; i < 3; ++i)
    a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(1000u * i), 1000, src.key}},
                       .remote_va = dst.va(1000u * i), .rkey = dst.key, .signalled = false},
                i == 1);  // the first two with one doorbell, the third with its own
  const uint16_t last = a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(3000), 1000, src.key}},
                                           .remote_va = dst.va(3000), .rkey = dst.key});
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kRdmaWrite, last, c.a->qpn);
  EXPECT_EQ(last, 3);
  EXPECT_EQ(b.get(dst, 0, 4000), a.get(src, 0, 4000));
  EXPECT_EQ(a.engine.counters().messages_completed, 4u);
}

// ---- Transport ----------------------------------------------------------------------------------

TEST_F(RdmaTest, DroppedPacketIsResentGoBackN) {
  auto c = p.connect();
  const Mr src = a.reg_mr(4000), dst = b.reg_mr(4096);
  const auto data = pattern(4000, 21);
  a.put(src, 0, data);
  const uint32_t lost = transport::psn_add(c.attributes.sq_psn_a, 1);
  bool dropped = false;
  p.wire.filter = [&](WireFrame& f) {
    if (f.to == 1 && !dropped && psn_of(f) == lost) return !(dropped = true);
    return true;
  };
  const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 4000, src.key}}});
  p.pump();
  EXPECT_TRUE(dropped);
  EXPECT_EQ(b.engine.counters().naks_sent, 1u) << "one sequence NAK";
  EXPECT_EQ(a.engine.counters().sequence_errors, 1u);
  EXPECT_EQ(a.engine.counters().retransmits, 1u);
  EXPECT_EQ(a.engine.counters().tx_packets, 4u + 3u) << "packets 1..3 again";
  EXPECT_EQ(b.get(dst, 0, 4000), data);
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSend, rindex, c.b->qpn, 4000);
  EXPECT_EQ(a.drain(*c.a->scq).size(), 1u);
}

TEST_F(RdmaTest, DroppedReadResponseIsAskedForAgain) {
  auto c = p.connect();
  const Mr remote = b.reg_mr(4096, access_bits::kRemoteRead), local = a.reg_mr(4096);
  const auto data = pattern(4000, 24);
  b.put(remote, 0, data);
  bool dropped = false;
  p.wire.filter = [&](WireFrame& f) {
    if (f.to == 0 && !dropped && opcode_of(f) == op::kRcRdmaReadResponseMiddle) return !(dropped = true);
    return true;
  };
  const uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = {{local.va(0), 4000, local.key}},
                                            .remote_va = remote.va(0), .rkey = remote.key});
  p.pump();
  EXPECT_TRUE(dropped);
  EXPECT_GE(a.engine.counters().retransmits, 1u) << "the READ asked again from the missing response";
  EXPECT_GE(b.engine.counters().duplicates, 1u);
  EXPECT_EQ(a.get(local, 0, 4000), data);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kRdmaRead, index, c.a->qpn, 4000);
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  expect_works(c);
}

TEST_F(RdmaTest, ReorderedPacketsRecover) {
  auto c = p.connect();
  const Mr src = a.reg_mr(3000), dst = b.reg_mr(4096);
  const auto data = pattern(3000, 22);
  a.put(src, 0, data);
  b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 3000, src.key}}});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 3u);
  p.inject(frames[0]);
  p.inject(frames[2]);
  p.inject(frames[1]);
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 3000), data);
  EXPECT_EQ(b.drain(*c.b->rcq).size(), 1u);
  EXPECT_EQ(a.drain(*c.a->scq).size(), 1u);
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  EXPECT_EQ(b.state(*c.b), QpState::kRts);
}

TEST_F(RdmaTest, DuplicatePacketsAreAcknowledgedNotDeliveredTwice) {
  auto c = p.connect();
  const Mr src = a.reg_mr(2000), dst = b.reg_mr(4096);
  const auto data = pattern(2000, 23);
  a.put(src, 0, data);
  b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 2000, src.key}}});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 2u);
  for (const WireFrame& f : {frames[0], frames[0], frames[1], frames[1]}) p.inject(f);
  p.pump();
  EXPECT_EQ(b.engine.counters().duplicates, 2u);
  EXPECT_EQ(b.engine.counters().acks_sent, 3u) << "ACK of the message and two re-ACKs";
  EXPECT_EQ(b.state_of(*c.b).rq_consumer, 1u) << "one receive WQE consumed";
  EXPECT_EQ(b.get(dst, 0, 2000), data);
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wqe_counter, 0);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  // A late duplicate of the whole message: re-ACKed, ignored by the requester.
  p.inject(frames[0]);
  p.inject(frames[1]);
  p.pump();
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  EXPECT_EQ(b.state(*c.b), QpState::kRts);
  expect_works(c);
}

TEST_F(RdmaTest, DuplicateAtomicIsExecutedOnce) {
  auto c = p.connect();
  const Mr remote = b.reg_mr(64), local = a.reg_mr(64);
  b.put64(remote, 0, 1000);
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{local.va(0), 8, local.key}}, .remote_va = remote.va(0),
                     .rkey = remote.key, .swap_add = 5});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 1u);
  p.inject(frames[0]);
  p.inject(frames[0]);
  p.pump();
  EXPECT_EQ(b.get64(remote, 0), 1005u);
  EXPECT_EQ(a.get64(local, 0), 1000u);
  EXPECT_EQ(b.engine.counters().duplicates, 1u);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].byte_cnt, 8u);
  // The same request once more after completion: answered from the saved result, not run again.
  p.inject(frames[0]);
  p.pump();
  EXPECT_EQ(b.get64(remote, 0), 1005u);
  EXPECT_EQ(a.get64(local, 0), 1000u);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
}

TEST_F(RdmaTest, RnrNakThenTheReceiveIsPostedAndTheTimerResends) {
  auto c = p.connect();
  const Mr src = a.reg_mr(100), dst = b.reg_mr(100);
  const auto data = pattern(100, 31);
  a.put(src, 0, data);
  const uint16_t sindex = a.post_send(*c.a, {.sges = {{src.va(0), 100, src.key}}});
  p.pump();
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 1u);
  EXPECT_EQ(a.engine.counters().rnr_naks_received, 1u);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 100, dst.key}});
  ASSERT_TRUE(p.fire_timers(a));
  p.pump();
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSend, rindex, c.b->qpn, 100);
  EXPECT_EQ(b.get(dst, 0, 100), data);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kSend, sindex, c.a->qpn);
}

TEST_F(RdmaTest, RnrOnAMultiPacketSendWaitsForTheReceive) {
  // Retry budget 1: the packets behind the RNR-NAKed one must not spend it (they are not lost).
  auto c = p.connect({.retry_count = 1});
  const Mr src = a.reg_mr(3000), dst = b.reg_mr(4096);
  const auto data = pattern(3000, 32);
  a.put(src, 0, data);
  a.post_send(*c.a, {.sges = {{src.va(0), 3000, src.key}}});
  p.pump();
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 1u);
  for (int round = 0; round < 2; ++round) {  // still nothing posted: RNR again
    ASSERT_TRUE(p.fire_timers(a));
    p.pump();
  }
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 3u);
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  ASSERT_TRUE(p.fire_timers(a));
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 3000), data);
  EXPECT_EQ(b.drain(*c.b->rcq).size(), 1u);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
}

TEST_F(RdmaTest, RnrRetryZeroEndsInRnrRetryExceeded) {
  auto c = p.connect({.rnr_retry = 0});
  const Mr src = a.reg_mr(100), dst = b.reg_mr(100);
  // One message completes first (the failing one is then not the first the QP ever sent).
  b.post_recv(*c.b, {{dst.va(0), 100, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 100, src.key}}});
  p.pump();
  ASSERT_EQ(a.drain(*c.a->scq).size(), 1u);
  const uint16_t failing = a.post_send(*c.a, {.sges = {{src.va(0), 100, src.key}}});
  const uint16_t second = a.post_send(*c.a, {.sges = {{src.va(0), 10, src.key}}});
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 2u);
  expect_error(sent[0], kCqeReqErr, kSynRnrRetryExceeded, failing, c.a->qpn);
  EXPECT_EQ(sent[0].send_opcode, wqe_op::kSend);
  expect_error(sent[1], kCqeReqErr, kSynFlushed, second, c.a->qpn);
  EXPECT_EQ(a.state(*c.a), QpState::kError);
  EXPECT_EQ(b.state(*c.b), QpState::kRts) << "an RNR NAK is no error at the responder";
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 1u);
  EXPECT_EQ(b.engine.counters().naks_sent, 0u) << "the SEND behind the RNR-NAKed one is not NAKed";
}

// The driver moves a QP to ERR by command (ibv_modify_qp to ERR, as rdma_disconnect and every
// test teardown do): what is outstanding, posted or half-received completes as flushed, in order.
TEST_F(RdmaTest, ModifyToErrorFlushesOutstandingAndPostedWork) {
  auto c = p.connect();
  auto other = p.connect();
  const Mr src = a.reg_mr(100), dst = a.reg_mr(200);
  const uint16_t r0 = a.post_recv(*c.a, {{dst.va(0), 100, dst.key}});
  const uint16_t r1 = a.post_recv(*c.a, {{dst.va(100), 100, dst.key}});
  const uint16_t s0 = a.post_send(*c.a, {.sges = {{src.va(0), 100, src.key}}});  // RNR: no receive at B
  p.pump();
  ASSERT_EQ(b.engine.counters().rnr_naks_sent, 1u);
  const uint16_t s1 = a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 10, src.key}},
                                         .remote_va = 0x1000, .rkey = 0x99}, /*ring_now=*/false);
  a.put32(c.a->dbr + 4, c.a->sq_pi & 0xffff);  // posted (doorbell record), its doorbell not yet rung
  a.to_error(*c.a);
  EXPECT_EQ(a.state(*c.a), QpState::kError);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 2u);
  expect_error(sent[0], kCqeReqErr, kSynFlushed, s0, c.a->qpn);
  expect_error(sent[1], kCqeReqErr, kSynFlushed, s1, c.a->qpn);
  auto recv = a.drain(*c.a->rcq);
  ASSERT_EQ(recv.size(), 2u);
  expect_error(recv[0], kCqeRespErr, kSynFlushed, r0, c.a->qpn);
  expect_error(recv[1], kCqeRespErr, kSynFlushed, r1, c.a->qpn);
  EXPECT_FALSE(p.expire_timers(a)) << "no retransmit or RNR timer left armed";
  EXPECT_EQ(a.engine.counters().tx_packets, 1u) << "nothing resent after the flush";
  // A WQE posted to the QP in ERR completes flushed at its doorbell.
  const uint16_t s2 = a.post_send(*c.a, {.sges = {{src.va(0), 5, src.key}}});
  sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_error(sent[0], kCqeReqErr, kSynFlushed, s2, c.a->qpn);
  expect_works(other);
}

TEST_F(RdmaTest, ModifyToErrorFlushesTheReceiveOfAHalfArrivedMessage) {
  auto c = p.connect();
  const Mr src = a.reg_mr(3000), dst = b.reg_mr(4096);
  const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  const uint16_t spare = b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 3000, src.key}}});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 3u);
  p.inject(std::move(frames[0]));  // only the first packet arrives
  p.pump();
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
  b.to_error(*c.b);
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 2u);
  expect_error(recv[0], kCqeRespErr, kSynFlushed, rindex, c.b->qpn);
  expect_error(recv[1], kCqeRespErr, kSynFlushed, spare, c.b->qpn);
  EXPECT_EQ(b.state(*c.b), QpState::kError);
}

// Found by engine_bench's lossy mix: a go-back-N resend carries every atomic from the lost PSN
// on, so the responder must answer duplicates of more than its last atomic from saved results
// (it answered only the last one, and the requester ran out of retries).
TEST_F(RdmaTest, BothAtomicAcksLostAreReplayedFromSavedResults) {
  auto c = p.connect({.retry_count = 2});
  const Mr src = a.reg_mr(4096), dst = b.reg_mr(4096);
  b.put64(dst, 128, 10);
  p.wire.filter = [&](WireFrame& f) { return !(f.to == 0 && opcode_of(f) == op::kRcAtomicAcknowledge && a.engine.counters().timeouts == 0); };
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicCs, .sges = {{src.va(64), 8, src.key}}, .remote_va = dst.va(128),
                     .rkey = dst.key, .swap_add = 20, .compare = 10});
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(72), 8, src.key}}, .remote_va = dst.va(128),
                     .rkey = dst.key, .swap_add = 1});
  p.pump();
  ASSERT_TRUE(p.expire_timers(a));
  p.pump();
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].opcode, 0u);
  EXPECT_EQ(done[1].opcode, 0u);
  EXPECT_EQ(a.get64(src, 64), 10u) << "CS returned the original from the saved result";
  EXPECT_EQ(a.get64(src, 72), 20u) << "FA returned the value CS left";
  EXPECT_EQ(b.get64(dst, 128), 21u) << "each atomic ran once on the responder";
  EXPECT_EQ(b.engine.counters().duplicates, 2u);
}

// Found the same way: an atomic received (its plain-ACK successor says so) whose response is lost
// twice must be resent; the resend after a timeout started at the ACK point and skipped it.
TEST_F(RdmaTest, AnAtomicBeforeTheAckPointWhoseResponseIsLostIsResent) {
  auto c = p.connect({.retry_count = 3});
  const Mr src = a.reg_mr(4096), dst = b.reg_mr(4096);
  b.put64(dst, 128, 5);
  b.post_recv(*c.b, {{dst.va(0), 64, dst.key}});
  int atomic_requests = 0, acks = 0;
  p.wire.filter = [&](WireFrame& f) {
    const uint8_t opcode = opcode_of(f);
    if (f.to == 1 && opcode == op::kRcFetchAdd) return ++atomic_requests != 2;  // the first resend is lost
    if (f.to == 0 && opcode == op::kRcAtomicAcknowledge) return atomic_requests >= 3;
    if (f.to == 0 && opcode == op::kRcAcknowledge) return ++acks != 1;  // the SEND's first ACK is lost
    return true;
  };
  a.post_send(*c.a, {.sges = {{src.va(0), 32, src.key}}});
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(64), 8, src.key}}, .remote_va = dst.va(128),
                     .rkey = dst.key, .swap_add = 2});
  for (int i = 0; i < 6 && a.drain(*c.a->scq).size() < 2; ++i) {  // completions are checked below
    p.pump();
    if (!p.expire_timers(a)) break;
  }
  p.pump();
  EXPECT_EQ(a.engine.counters().error_cqes, 0u) << "no retry exceeded";
  EXPECT_GE(atomic_requests, 3);
  EXPECT_EQ(a.get64(src, 64), 5u);
  EXPECT_EQ(b.get64(dst, 128), 7u) << "the atomic ran once";
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
}

// Issue 14: RoCE receive is steered by destination. A frame to a group MAC (broadcast RoCE) or to a
// GID that is not in the function's table is dropped and counted, never handed to a QP by its
// number alone; the same frame to the function's own GID is served.
TEST_F(RdmaTest, RoceFramesNotAddressedToTheFunctionAreDropped) {
  auto c = p.connect();
  const Mr src = a.reg_mr(256), dst = b.reg_mr(256);
  const auto data = pattern(200, 77);
  a.put(src, 0, data);
  enum class Damage { kBroadcastMac, kForeignGid, kNone } damage = Damage::kBroadcastMac;
  p.wire.filter = [&](WireFrame& f) {
    if (f.to != 1) return true;
    auto parsed = parse(f);
    if (damage == Damage::kBroadcastMac) parsed.packet.dst_mac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    if (damage == Damage::kForeignGid) parsed.packet.dst_gid = transport::gid_from_ipv4(0x0a0000feu);
    f.bytes = transport::build_frame(parsed.packet);
    return true;
  };
  auto write_once = [&] {
    a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 200, src.key}}, .remote_va = dst.va(0),
                       .rkey = dst.key});
    p.pump();
  };
  write_once();
  EXPECT_EQ(b.engine.counters().rx_not_addressed, 1u) << "broadcast MAC";
  damage = Damage::kForeignGid;
  ASSERT_TRUE(p.expire_timers(a));  // the requester resends; the resend goes to another GID
  p.pump();
  EXPECT_EQ(b.engine.counters().rx_not_addressed, 2u) << "a GID not in the table";
  EXPECT_NE(b.get(dst, 0, 200), data) << "nothing landed";
  damage = Damage::kNone;
  ASSERT_TRUE(p.expire_timers(a));
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 200), data) << "addressed properly, it lands";
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, 0u);
}

TEST_F(RdmaTest, LostAckIsRecoveredByTheRetransmitTimer) {
  auto c = p.connect({.retry_count = 1});
  const Mr src = a.reg_mr(1500), dst = b.reg_mr(2048);
  const auto data = pattern(1500, 41);
  a.put(src, 0, data);
  bool dropped = false;
  p.wire.filter = [&](WireFrame& f) {
    if (f.to == 0 && !dropped && opcode_of(f) == op::kRcAcknowledge) return !(dropped = true);
    return true;
  };
  const uint16_t rindex = b.post_recv(*c.b, {{dst.va(0), 2048, dst.key}});
  const uint16_t sindex = a.post_send(*c.a, {.sges = {{src.va(0), 1500, src.key}}});
  const uint64_t posted = a.clock_ps;
  p.pump();
  EXPECT_TRUE(dropped);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_responder(recv[0], kCqeRespSend, rindex, c.b->qpn, 1500);
  ASSERT_TRUE(a.deadline.has_value());
  // ack_timeout 14: 4.096 us << 14 = 67.1 ms of model time, and no wall-clock floor in a closed run.
  EXPECT_EQ(a.deadline->model_ps - posted, (uint64_t(4096) << 14) * 1000);
  EXPECT_FALSE(a.deadline->wall.has_value());
  a.engine.on_timer();  // too early: nothing happens
  EXPECT_EQ(a.engine.counters().timeouts, 0u);
  ASSERT_TRUE(p.fire_timers(a));
  EXPECT_EQ(a.engine.counters().timeouts, 1u);
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_requester(sent[0], wqe_op::kSend, sindex, c.a->qpn);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty()) << "the resent packets are duplicates";
  EXPECT_EQ(b.engine.counters().duplicates, 2u);
  EXPECT_EQ(b.get(dst, 0, 1500), data);
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
}

// A full-system run's policy: the timer also waits out a wall-clock floor, so a guest running at
// emulation speed gets the time to act; model time alone having passed does not fire it.
TEST_F(RdmaTest, WallClockFloorHoldsTheTimerUntilItHasPassedToo) {
  a.engine.set_timer_policy({.wall_clock_floor = true, .min_retransmit_wait = std::chrono::milliseconds(30)});
  auto c = p.connect({.retry_count = 1, .ack_timeout = 1});  // 8.2 us of model time
  const Mr src = a.reg_mr(100), dst = b.reg_mr(128);
  p.wire.filter = [&](WireFrame& f) { return !(f.to == 0 && opcode_of(f) == op::kRcAcknowledge); };
  b.post_recv(*c.b, {{dst.va(0), 128, dst.key}});
  const auto before = WallClock::now();
  a.post_send(*c.a, {.sges = {{src.va(0), 100, src.key}}});
  p.pump();
  ASSERT_TRUE(a.deadline.has_value());
  ASSERT_TRUE(a.deadline->wall.has_value());
  EXPECT_GE(*a.deadline->wall - before, std::chrono::milliseconds(30));
  a.clock_ps += 1'000'000'000;  // a millisecond of model time: far past the model deadline
  a.engine.on_timer();
  EXPECT_EQ(a.engine.counters().timeouts, 0u) << "the wall-clock floor has not passed";
  std::this_thread::sleep_until(*a.deadline->wall + std::chrono::milliseconds(1));
  a.engine.on_timer();
  EXPECT_EQ(a.engine.counters().timeouts, 1u);
}

TEST_F(RdmaTest, SequenceNakWithoutRetriesLeftIsRetryExceeded) {
  auto c = p.connect({.retry_count = 0});
  auto other = p.connect();
  const Mr src = a.reg_mr(3000), dst = b.reg_mr(4096);
  const uint32_t lost = transport::psn_add(c.attributes.sq_psn_a, 1);
  p.wire.filter = [&](WireFrame& f) { return !(f.to == 1 && psn_of(f) == lost && parse(f).packet.dest_qp == c.b->qpn); };
  b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  const uint16_t first = a.post_send(*c.a, {.sges = {{src.va(0), 3000, src.key}}});
  const uint16_t second = a.post_send(*c.a, {.sges = {{src.va(0), 10, src.key}}});
  p.pump();
  EXPECT_EQ(a.engine.counters().sequence_errors, 1u);
  EXPECT_EQ(a.engine.counters().retransmits, 0u);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 2u);
  expect_error(sent[0], kCqeReqErr, kSynRetryExceeded, first, c.a->qpn);
  expect_error(sent[1], kCqeReqErr, kSynFlushed, second, c.a->qpn);
  EXPECT_EQ(a.state(*c.a), QpState::kError);
  EXPECT_EQ(b.state(*c.b), QpState::kRts);
  p.wire.filter = nullptr;
  expect_works(other);
}

TEST_F(RdmaTest, RetriesSpentByANakThenATimeoutIsRetryExceeded) {
  // retry_count 1: the sequence NAK spends it, the resent packet is lost again, and the
  // responder (which NAKs a gap once) stays silent: the timeout that follows has no retry left.
  auto c = p.connect({.retry_count = 1});
  const Mr src = a.reg_mr(3000), dst = b.reg_mr(4096);
  const uint32_t lost = transport::psn_add(c.attributes.sq_psn_a, 1);
  p.wire.filter = [&](WireFrame& f) { return !(f.to == 1 && psn_of(f) == lost); };
  b.post_recv(*c.b, {{dst.va(0), 4096, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 3000, src.key}}});
  p.pump();
  EXPECT_EQ(a.engine.counters().sequence_errors, 1u);
  EXPECT_EQ(b.engine.counters().naks_sent, 1u);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  ASSERT_TRUE(p.expire_timers(a));
  EXPECT_EQ(a.engine.counters().timeouts, 1u);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_error(sent[0], kCqeReqErr, kSynRetryExceeded, 0, c.a->qpn);
  EXPECT_EQ(a.state(*c.a), QpState::kError);
  EXPECT_TRUE(p.wire.frames.empty()) << "nothing resent after the last retry";
}

// ---- Bad input from the guest -------------------------------------------------------------------

struct BadWqeTest : RdmaTest {
  Connection c, other;
  Mr src, dst;
  void SetUp() override {
    c = p.connect();
    other = p.connect();
    src = a.reg_mr(4096);
    dst = b.reg_mr(4096);
    a.put(src, 0, pattern(4096, 51));
  }
  Wr good_send() { return {.sges = {{src.va(0), 64, src.key}}}; }

  // The bad WQE at index 0 failed with `syndrome`, `followers` WQEs after it were flushed,
  // nothing reached the wire, the QP is in ERR and the other connection still works.
  void expect_failed(uint8_t syndrome, std::vector<uint16_t> followers) {
    auto sent = a.drain(*c.a->scq);
    ASSERT_EQ(sent.size(), 1 + followers.size());
    expect_error(sent[0], kCqeReqErr, syndrome, 0, c.a->qpn);
    for (size_t i = 0; i < followers.size(); ++i) expect_error(sent[1 + i], kCqeReqErr, kSynFlushed, followers[i], c.a->qpn);
    EXPECT_EQ(a.state(*c.a), QpState::kError);
    EXPECT_EQ(b.state(*c.b), QpState::kRts);
    EXPECT_EQ(a.engine.counters().tx_packets, 0u);
    // Posted after the error: flushed too.
    const uint16_t late = a.post_send(*c.a, good_send());
    sent = a.drain(*c.a->scq);
    ASSERT_EQ(sent.size(), 1u);
    expect_error(sent[0], kCqeReqErr, kSynFlushed, late, c.a->qpn);
    EXPECT_EQ(a.engine.counters().tx_packets, 0u);
    expect_works(other);
  }
};

TEST_F(BadWqeTest, UnknownOpcode) {
  auto wqe = a.build_wqe(*c.a, good_send());
  wqe[3] = 0x07;  // no such mlx5 opcode
  a.put_wqe(*c.a, wqe);
  const uint16_t next = a.post_send(*c.a, good_send());
  p.pump();
  expect_failed(kSynLocalQpOperation, {next});
}

TEST_F(BadWqeTest, LocalInvalidateIsRefused) {
  auto wqe = a.build_wqe(*c.a, good_send());
  wqe[3] = wqe_op::kLocalInval;
  a.put_wqe(*c.a, wqe);
  a.ring(*c.a);
  expect_failed(kSynLocalQpOperation, {});
}

TEST_F(BadWqeTest, DsZero) {
  auto wqe = a.build_wqe(*c.a, good_send());
  wqe[7] &= 0xc0;
  a.put_wqe(*c.a, wqe);
  const uint16_t next = a.post_send(*c.a, good_send());
  expect_failed(kSynLocalQpOperation, {next});
}

TEST_F(BadWqeTest, DsBeyondTheProducer) {
  // A SEND with 7 SGEs (ds 8, two WQEBBs) whose producer update covers only its first WQEBB.
  Wr wr;
  for (int i = 0; i < 7; ++i) wr.sges.push_back({src.va(64u * i), 64, src.key});
  const auto wqe = a.build_wqe(*c.a, wr);
  ASSERT_EQ(wqe.size(), 128u);
  a.put_wqe(*c.a, wqe, 1);
  EXPECT_TRUE(a.ring(*c.a));
  expect_failed(kSynLocalQpOperation, {});
  EXPECT_EQ(a.engine.counters().bad_wqes, 1u);
}

TEST_F(BadWqeTest, SgeOutsideItsMr) {
  a.post_send(*c.a, {.sges = {{src.va(4000), 200, src.key}}}, false);
  const uint16_t n1 = a.post_send(*c.a, good_send(), false);
  const uint16_t n2 = a.post_send(*c.a, good_send());
  expect_failed(kSynLocalProtection, {n1, n2});
  EXPECT_EQ(a.engine.counters().local_protection_errors, 1u);
}

TEST_F(BadWqeTest, SgeBeforeItsMr) {
  a.post_send(*c.a, {.sges = {{src.va(0) - 1, 16, src.key}}});
  expect_failed(kSynLocalProtection, {});
}

TEST_F(BadWqeTest, LkeyOfAnotherPd) {
  const Mr foreign = a.reg_mr(4096, access_bits::kAll, a.alloc_pd());
  a.post_send(*c.a, {.sges = {{foreign.va(0), 64, foreign.key}}});
  expect_failed(kSynLocalProtection, {});
}

TEST_F(BadWqeTest, LkeyOfNoMr) {
  a.post_send(*c.a, {.sges = {{src.va(0), 64, src.key ^ 0x01}}});  // right index, wrong variant
  expect_failed(kSynLocalProtection, {});
}

TEST_F(BadWqeTest, ReadIntoAReadOnlyLocalMr) {
  const Mr read_only = a.reg_mr(4096, access_bits::kLocalRead);
  const Mr remote = b.reg_mr(4096, access_bits::kRemoteRead);
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = {{read_only.va(0), 64, read_only.key}},
                     .remote_va = remote.va(0), .rkey = remote.key});
  expect_failed(kSynLocalProtection, {});
}

TEST_F(BadWqeTest, AtomicResultIntoAReadOnlyLocalMr) {
  const Mr read_only = a.reg_mr(64, access_bits::kLocalRead);
  const Mr remote = b.reg_mr(64, access_bits::kAtomic);
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{read_only.va(0), 8, read_only.key}},
                     .remote_va = remote.va(0), .rkey = remote.key, .swap_add = 1});
  expect_failed(kSynLocalProtection, {});
  EXPECT_EQ(b.get64(remote, 0), 0u);
}

TEST_F(BadWqeTest, MisalignedAtomicIsRefusedBeforeTheWire) {
  const Mr remote = b.reg_mr(64, access_bits::kAtomic);
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(0), 8, src.key}}, .remote_va = remote.va(4),
                     .rkey = remote.key, .swap_add = 1});
  expect_failed(kSynLocalQpOperation, {});
  EXPECT_EQ(b.get64(remote, 0), 0u);
}

TEST_F(BadWqeTest, GoodWqeBeforeABadOneCompletesInOrder) {
  // One doorbell: a good SEND, then one with a bad SGE. The CQEs come in SQ order.
  const uint16_t good = a.post_send(*c.a, good_send(), false);
  const uint16_t bad = a.post_send(*c.a, {.sges = {{src.va(4000), 200, src.key}}}, false);
  const uint16_t after = a.post_send(*c.a, good_send());
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].wqe_counter, good);
  EXPECT_TRUE(sent[0].opcode == kCqeReq || (sent[0].opcode == kCqeReqErr && sent[0].syndrome == kSynFlushed))
      << "the WQE before the bad one: done or flushed, never after the error";
  expect_error(sent[1], kCqeReqErr, kSynLocalProtection, bad, c.a->qpn);
  expect_error(sent[2], kCqeReqErr, kSynFlushed, after, c.a->qpn);
  EXPECT_EQ(a.state(*c.a), QpState::kError);
  expect_works(other);
}

// ---- Remote access errors -----------------------------------------------------------------------

struct RemoteAccessTest : RdmaTest {
  Connection c, other;
  Mr src;
  void SetUp() override {
    c = p.connect();
    other = p.connect();
    src = a.reg_mr(4096);
    a.put(src, 0, pattern(4096, 61));
  }
  // `wr` failed at the responder: remote access NAK, requester CQE `syndrome`, both QPs in ERR
  // (the responder's posted receive flushed), the other connection unaffected.
  void expect_remote_error(const Wr& wr, uint8_t syndrome = kSynRemoteAccess) {
    const Mr spare = b.reg_mr(64);
    b.post_recv(*c.b, {{spare.va(0), 64, spare.key}});
    const uint16_t index = a.post_send(*c.a, wr);
    p.pump();
    auto sent = a.drain(*c.a->scq);
    ASSERT_EQ(sent.size(), 1u);
    expect_error(sent[0], kCqeReqErr, syndrome, index, c.a->qpn);
    EXPECT_EQ(sent[0].send_opcode, wr.opcode);
    EXPECT_EQ(a.state(*c.a), QpState::kError);
    EXPECT_EQ(b.state(*c.b), QpState::kError);
    auto recv = b.drain(*c.b->rcq);
    ASSERT_EQ(recv.size(), 1u);
    expect_error(recv[0], kCqeRespErr, kSynFlushed, 0, c.b->qpn);
    EXPECT_EQ(b.engine.counters().naks_sent, 1u);
    expect_works(other);
  }
  Wr write_to(const Mr& mr, uint32_t length = 100) {
    return {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), length, src.key}}, .remote_va = mr.va(0), .rkey = mr.key};
  }
};

TEST_F(RemoteAccessTest, RkeyOfAnotherPd) {
  const Mr foreign = b.reg_mr(4096, access_bits::kAll, b.alloc_pd());
  expect_remote_error(write_to(foreign));
  EXPECT_EQ(b.get(foreign, 0, 100), std::vector<uint8_t>(100, 0));
}

TEST_F(RemoteAccessTest, RkeyOfAnotherFunction) {
  expect_remote_error(write_to(src));  // A's own key means nothing at B
}

TEST_F(RemoteAccessTest, RkeyWithoutRemoteWrite) {
  const Mr no_write = b.reg_mr(4096, access_bits::kLocalWrite | access_bits::kRemoteRead | access_bits::kAtomic);
  expect_remote_error(write_to(no_write));
  EXPECT_EQ(b.get(no_write, 0, 100), std::vector<uint8_t>(100, 0));
}

TEST_F(RemoteAccessTest, WritePastTheEndOfTheRemoteMr) {
  const Mr small = b.reg_mr(2000, access_bits::kAll);
  expect_remote_error(write_to(small, 3000));
  EXPECT_EQ(b.get(small, 1024, 976), std::vector<uint8_t>(976, 0)) << "nothing of the packet that failed";
}

TEST_F(RemoteAccessTest, ReadWithoutRemoteRead) {
  const Mr no_read = b.reg_mr(4096, access_bits::kLocalWrite | access_bits::kRemoteWrite);
  expect_remote_error({.opcode = wqe_op::kRdmaRead, .sges = {{src.va(0), 100, src.key}}, .remote_va = no_read.va(0),
                       .rkey = no_read.key});
}

TEST_F(RemoteAccessTest, AtomicWithoutAtomicAccess) {
  const Mr no_atomic = b.reg_mr(64, access_bits::kLocalWrite | access_bits::kRemoteWrite | access_bits::kRemoteRead);
  expect_remote_error({.opcode = wqe_op::kAtomicFa, .sges = {{src.va(0), 8, src.key}}, .remote_va = no_atomic.va(0),
                       .rkey = no_atomic.key, .swap_add = 1});
  EXPECT_EQ(b.get64(no_atomic, 0), 0u);
}

TEST_F(RemoteAccessTest, WriteToAQpWithoutRemoteWriteEnabled) {
  Connection closed = p.connect({.rwe = false});
  c = closed;
  const Mr dst = b.reg_mr(4096, access_bits::kAll);
  expect_remote_error(write_to(dst));
}

TEST_F(RemoteAccessTest, MisalignedAtomicOnTheWireIsAnInvalidRequest) {
  // A requester that does not check alignment: the atomic request is rewritten on the wire.
  const Mr remote = b.reg_mr(64, access_bits::kAtomic);
  const Mr spare = b.reg_mr(64);
  b.post_recv(*c.b, {{spare.va(0), 64, spare.key}});
  a.post_send(*c.a, {.opcode = wqe_op::kAtomicFa, .sges = {{src.va(0), 8, src.key}}, .remote_va = remote.va(0),
                     .rkey = remote.key, .swap_add = 1});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 1u);
  auto parsed = parse(frames[0]);
  ASSERT_EQ(parsed.error, transport::ParseError::kNone);
  parsed.packet.atomic.va += 4;
  p.inject({1, transport::build_frame(parsed.packet)});
  p.pump();
  EXPECT_EQ(b.engine.counters().invalid_requests, 1u);
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_error(sent[0], kCqeReqErr, kSynRemoteInvalidRequest, 0, c.a->qpn);
  EXPECT_EQ(a.state(*c.a), QpState::kError);
  EXPECT_EQ(b.state(*c.b), QpState::kError);
  EXPECT_EQ(b.get64(remote, 0), 0u);
  expect_works(other);
}

TEST_F(RemoteAccessTest, SendLongerThanTheReceiveIsALengthError) {
  const Mr dst = b.reg_mr(1000);
  b.post_recv(*c.b, {{dst.va(0), 1000, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 2000, src.key}}});
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  expect_error(sent[0], kCqeReqErr, kSynRemoteInvalidRequest, 0, c.a->qpn);
  auto recv = b.drain(*c.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  expect_error(recv[0], kCqeRespErr, 0x01, 0, c.b->qpn);
  EXPECT_EQ(b.state(*c.b), QpState::kError);
  expect_works(other);
}

// ---- Bad frames ---------------------------------------------------------------------------------

TEST_F(RdmaTest, FrameWithABadIcrcIsDropped) {
  auto c = p.connect();
  auto other = p.connect();
  const Mr src = a.reg_mr(100), dst = b.reg_mr(100);
  const auto data = pattern(100, 71);
  a.put(src, 0, data);
  b.post_recv(*c.b, {{dst.va(0), 100, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 100, src.key}}});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 1u);
  WireFrame corrupt = frames[0];
  corrupt.bytes[corrupt.bytes.size() - 10] ^= 0x40;  // a payload byte
  p.inject(corrupt);
  p.pump();
  EXPECT_EQ(b.engine.counters().rx_bad_icrc, 1u);
  EXPECT_EQ(b.engine.counters().acks_sent + b.engine.counters().naks_sent, 0u);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());
  EXPECT_EQ(b.state_of(*c.b).rq_consumer, 0u);
  p.inject(frames[0]);  // the intact copy (as a retransmission would bring it)
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 100), data);
  EXPECT_EQ(b.drain(*c.b->rcq).size(), 1u);
  EXPECT_EQ(a.drain(*c.a->scq).size(), 1u);
  expect_works(other);
}

TEST_F(RdmaTest, FrameForAnUnknownQpnIsDropped) {
  auto c = p.connect();
  auto other = p.connect();
  const Mr src = a.reg_mr(100), dst = b.reg_mr(100);
  const auto data = pattern(100, 72);
  a.put(src, 0, data);
  b.post_recv(*c.b, {{dst.va(0), 100, dst.key}});
  a.post_send(*c.a, {.sges = {{src.va(0), 100, src.key}}});
  auto frames = p.take();
  ASSERT_EQ(frames.size(), 1u);
  auto parsed = parse(frames[0]);
  ASSERT_EQ(parsed.error, transport::ParseError::kNone);
  parsed.packet.dest_qp = 0xabcdef;
  p.inject({1, transport::build_frame(parsed.packet)});
  p.pump();
  EXPECT_EQ(b.engine.counters().rx_unknown_qp, 1u);
  EXPECT_EQ(b.engine.counters().tx_packets, 0u);
  EXPECT_EQ(p.wire.unclaimed, 0u) << "RoCEv2 frames are the engine's even when it drops them";
  EXPECT_EQ(b.state_of(*c.b).rq_consumer, 0u);
  p.inject(frames[0]);
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 100), data);
  EXPECT_EQ(a.drain(*c.a->scq).size(), 1u);
  expect_works(other);
}

// ---- Robustness ---------------------------------------------------------------------------------

// Random bytes as WQEs through the doorbell path, mixed with well-formed headers so the parser's
// later stages are reached. Whatever a WQE says, the engine must not crash, and after the
// frames are delivered and the timers run out each QP is either in ERR or has completed all
// its work.
TEST(RdmaFuzz, RandomWqesThroughTheDoorbell) {
  RdmaPair p;
  Connection c = p.connect({.retry_count = 2, .rnr_retry = 1});
  const Mr mr_a = p.a.reg_mr(16384), mr_b = p.b.reg_mr(16384);
  std::mt19937_64 rng(0x5eed);
  auto pick = [&](uint64_t n) { return rng() % n; };
  const uint8_t opcodes[] = {wqe_op::kNop, wqe_op::kSendInval, wqe_op::kRdmaWrite, wqe_op::kRdmaWriteImm, wqe_op::kSend,
                             wqe_op::kSendImm, wqe_op::kRdmaRead, wqe_op::kAtomicCs, wqe_op::kAtomicFa, 0x0e, 0x25};
  uint64_t errors = 0, completions = 0;
  for (int iteration = 0; iteration < 2000; ++iteration) {
    SCOPED_TRACE(iteration);
    const bool from_a = iteration % 2 == 0;
    RdmaNode& tx = from_a ? p.a : p.b;
    RdmaNode& rx = from_a ? p.b : p.a;
    Qp& qtx = from_a ? *c.a : *c.b;
    Qp& qrx = from_a ? *c.b : *c.a;
    const Mr& local = from_a ? mr_a : mr_b;
    const Mr& remote = from_a ? mr_b : mr_a;
    while (rx.state(qrx) == QpState::kRts && ((qrx.rq_head - rx.state_of(qrx).rq_consumer) & 0xffff) < 4)
      rx.post_recv(qrx, {{remote.va(0), 16384, remote.key}});
    const int count = 1 + int(pick(3));
    for (int k = 0; k < count; ++k) {
      if (pick(2) == 0) {  // a well-formed WQE with random parameters
        Wr wr{.opcode = opcodes[pick(9)], .signalled = pick(2) == 0, .solicited = pick(4) == 0,
              .fence = uint8_t(pick(4) == 0 ? 1 : 0)};
        const bool atomic = wr.opcode == wqe_op::kAtomicCs || wr.opcode == wqe_op::kAtomicFa;
        const uint32_t sges = atomic ? 1 : uint32_t(pick(4));
        for (uint32_t i = 0; i < sges; ++i) {
          const uint32_t length = atomic ? 8 : 1 + uint32_t(pick(3000));
          wr.sges.push_back({local.va(pick(16384 - length)), length, local.key});
        }
        if (!atomic && pick(4) == 0) wr.inline_data = pattern(pick(400), uint32_t(iteration));
        wr.remote_va = remote.va(pick(8192) & ~uint64_t(7));
        wr.rkey = remote.key;
        wr.swap_add = rng();
        wr.compare = pick(2) ? rng() : 0;
        wr.imm = uint32_t(rng());
        tx.put_wqe(qtx, tx.build_wqe(qtx, wr));
        continue;
      }
      std::vector<uint8_t> wqe(16 * (1 + pick(16)));
      for (auto& byte : wqe) byte = uint8_t(rng());
      if (pick(4) != 0) {  // a plausible ctrl segment
        store_be32(&wqe[0], ((qtx.sq_pi & 0xffff) << 8) | opcodes[pick(std::size(opcodes))]);
        store_be32(&wqe[4], (qtx.qpn << 8) | uint32_t(pick(5) == 0 ? pick(64) : wqe.size() / 16));
        wqe[11] &= 0x0e;
      }
      for (size_t at = 16; at < wqe.size(); at += 16) {
        switch (pick(3)) {
          case 0: break;  // random bytes
          case 1:         // remote address segment: 8-byte aligned or not, inside the region or past it
            store_be64(&wqe[at], remote.va(pick(2) ? pick(16384) & ~uint64_t(7) : pick(20000)));
            store_be32(&wqe[at + 8], pick(4) ? remote.key : local.key);
            break;
          default:        // data segment
            store_be32(&wqe[at], uint32_t(pick(4) ? pick(3000) : pick(20000)));
            store_be32(&wqe[at + 4], pick(4) ? local.key : remote.key);
            store_be64(&wqe[at + 8], local.va(pick(16384)));
            break;
        }
      }
      const uint32_t blocks = pick(8) == 0 ? uint32_t(pick(4)) : uint32_t((wqe.size() + 63) / 64);
      tx.put_wqe(qtx, wqe, blocks);
    }
    if (pick(10) == 0) {  // a doorbell naming some other QPN
      std::vector<uint8_t> bell(8);
      for (auto& byte : bell) byte = uint8_t(rng());
      tx.engine.doorbell(bell);
    }
    store_be32(&tx.last_ctrl_[4], qtx.qpn << 8);  // the doorbell itself names the QP (its ctrl may be garbage)
    EXPECT_TRUE(tx.ring(qtx));
    for (int round = 0; round < 12; ++round) {
      p.pump(200'000);
      ASSERT_TRUE(p.wire.frames.empty()) << "the engines keep talking";
      const bool armed_a = p.expire_timers(p.a);
      const bool armed_b = p.expire_timers(p.b);
      if (!armed_a && !armed_b) break;
    }
    for (RdmaNode* n : {&p.a, &p.b}) {
      for (Cq& cq : n->cqs) {
        for (const Cqe& e : n->drain(cq)) {
          EXPECT_TRUE(e.opcode <= kCqeRespSendInv || e.opcode == kCqeReqErr || e.opcode == kCqeRespErr) << int(e.opcode);
          (e.opcode >= kCqeReqErr ? errors : completions)++;
        }
      }
    }
    for (RdmaNode* n : {&p.a, &p.b}) {
      const Qp& q = n == &p.a ? *c.a : *c.b;
      const QueuePair& s = n->state_of(q);
      ASSERT_TRUE(s.state == QpState::kRts || s.state == QpState::kError) << qp_state_name(s.state);
      if (s.state == QpState::kRts && n == &tx) {
        EXPECT_TRUE(s.rc.req.outstanding.empty());
        EXPECT_EQ((q.sq_pi - s.sq_consumer) & 0xffff, 0u);
      }
    }
    if (p.a.state(*c.a) == QpState::kError || p.b.state(*c.b) == QpState::kError || pick(64) == 0) {
      const uint32_t psn = uint32_t(rng()) & 0xffffff;
      p.reconnect(c, {.sq_psn_a = psn, .sq_psn_b = transport::psn_add(psn, 0x800000), .retry_count = 2, .rnr_retry = 1});
    }
  }
  EXPECT_GT(errors, 100u);
  EXPECT_GT(completions, 100u);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
