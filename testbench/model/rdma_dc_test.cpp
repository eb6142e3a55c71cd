// DC (Dynamically Connected) between two functions on the test wire, with the objects created as
// mlx5_ib creates them: DCIs by CREATE_QP (st 5) brought up without an address, a DCT by CREATE_DCT
// with its SRQ and CQ. Each DCI WQE names its DCT (number, access key, address); the DCT keeps a
// responder state per DCI. Checked on the responder's memory and completions, and on the wire:
// hcaemu's DC opcodes (0xc0 + RC's) with a DCETH on requests.
#include <systemc>

#include "testbench/model/odp_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

namespace op = transport::opcode;

constexpr uint8_t kCqeReq = 0x0, kCqeRespSend = 0x2, kCqeRespSendImm = 0x3, kCqeReqErr = 0xd;
constexpr uint8_t kSynRemoteAccess = 0x13, kSynRetryExceeded = 0x15;
constexpr uint64_t kKey = 0x000000000badc0de;

struct DcTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  RcAttributes attr;
  Cq& a_cq = a.make_cq();
  Cq& b_cq = b.make_cq();
  Qp& dci1 = a.create_qp(a_cq, a_cq, 0, qp_st::kDci);
  Qp& dci2 = a.create_qp(a_cq, a_cq, 0, qp_st::kDci);
  Srq& b_srq = b.make_srq();
  uint32_t dctn = b.create_dct(b_cq, b_srq, kKey, attr);
  Mr src = a.reg_mr(8192);
  Mr dst = b.reg_mr(8192);
  std::vector<transport::RocePacket> to_b, to_a;
  std::vector<std::vector<uint8_t>> frames;  // the payloads the parsed packets point into

  DcTest() {
    a.bring_up_dci(dci1, attr, 0x100);
    a.bring_up_dci(dci2, attr, 0x500);
    a.put(src, 0, pattern(8192, 41));
    b.put(dst, 0, pattern(8192, 42));
    p.wire.filter = [this](WireFrame& f) {
      frames.push_back(f.bytes);
      (f.to == 1 ? to_b : to_a).push_back(parse(f).packet);
      return true;
    };
  }
  Wr to_dct(Wr wr, uint64_t key = kKey) {
    wr.av = a.dc_address_vector(b, dctn, key);
    return wr;
  }
  std::vector<uint8_t> expected(uint32_t offset, uint32_t length, uint32_t seed = 41) {
    const auto all = pattern(8192, seed);
    return {all.begin() + offset, all.begin() + offset + length};
  }
};

TEST_F(DcTest, SendsOfTwoDcisLandInTheDctsSrq) {
  const uint16_t w1 = b.post_srq_recv(b_srq, {{dst.va(0), 4096, dst.key}});
  const uint16_t w2 = b.post_srq_recv(b_srq, {{dst.va(4096), 256, dst.key}});
  a.post_send(dci1, to_dct({.sges = {{src.va(0), 3000, src.key}}}));
  a.post_send(dci2, to_dct({.opcode = wqe_op::kSendImm, .sges = {{src.va(3000), 100, src.key}}, .imm = 0x0badcafe}));
  p.pump();
  // The wire: DC SEND first/middle/last from DCI 1, each with the DCETH (key, DCI number, the first
  // packet opening the connection), and DC ACKs back to the DCIs.
  ASSERT_EQ(to_b.size(), 4u);
  EXPECT_EQ(to_b[0].opcode, op::kDcBase | op::kRcSendFirst);
  EXPECT_EQ(to_b[0].dest_qp, dctn);
  EXPECT_EQ(to_b[0].psn, 0x100u);
  EXPECT_EQ(to_b[0].dceth.access_key, kKey);
  EXPECT_EQ(to_b[0].dceth.initiator, dci1.qpn);
  EXPECT_TRUE(to_b[0].dceth.connect);
  EXPECT_FALSE(to_b[1].dceth.connect);
  EXPECT_EQ(to_b[2].opcode, op::kDcBase | op::kRcSendLast);
  EXPECT_EQ(to_b[3].opcode, op::kDcBase | op::kRcSendOnlyImm);
  EXPECT_EQ(to_b[3].dceth.initiator, dci2.qpn);
  EXPECT_EQ(to_b[3].psn, 0x500u);
  EXPECT_TRUE(to_b[3].dceth.connect);
  ASSERT_FALSE(to_a.empty());
  for (const auto& ack : to_a) EXPECT_EQ(ack.opcode, op::kDcBase | op::kRcAcknowledge);
  // The responder: both messages in the SRQ's WQEs, completions naming the DCT by number and user index.
  EXPECT_EQ(b.get(dst, 0, 3000), expected(0, 3000));
  EXPECT_EQ(b.get(dst, 4096, 100), expected(3000, 100));
  const auto received = b.drain(b_cq);
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0].opcode, kCqeRespSend);
  EXPECT_EQ(received[0].byte_cnt, 3000u);
  EXPECT_EQ(received[0].qpn, dctn);
  EXPECT_EQ(received[0].user_index, 0x900u);
  EXPECT_EQ(received[0].wqe_counter, w1);
  EXPECT_EQ(received[1].opcode, kCqeRespSendImm);
  EXPECT_EQ(received[1].imm, 0x0badcafeu);
  EXPECT_EQ(received[1].wqe_counter, w2);
  const auto sent = a.drain(a_cq);
  ASSERT_EQ(sent.size(), 2u);
  for (const Cqe& c : sent) EXPECT_EQ(c.opcode, kCqeReq);
  EXPECT_EQ(b.engine.counters().dc_connections_accepted, 2u);
}

TEST_F(DcTest, WriteReadAndAtomicsThroughTheDct) {
  a.post_send(dci1, to_dct({.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 2500, src.key}}, .remote_va = dst.va(100),
                            .rkey = dst.key}));
  a.post_send(dci1, to_dct({.opcode = wqe_op::kRdmaRead, .sges = {{src.va(4096), 2500, src.key}},
                            .remote_va = dst.va(100), .rkey = dst.key}));
  std::array<uint8_t, 8> counter{};
  counter[0] = 5;  // little-endian 5 in the responder's memory
  b.put(dst, 6000, counter);
  a.post_send(dci1, to_dct({.opcode = wqe_op::kAtomicFa, .sges = {{src.va(7000), 8, src.key}}, .remote_va = dst.va(6000),
                            .rkey = dst.key, .swap_add = 3}));
  a.post_send(dci1, to_dct({.opcode = wqe_op::kAtomicFa, .sges = {{src.va(7008), 8, src.key}}, .remote_va = dst.va(6000),
                            .rkey = dst.key, .swap_add = 3}));
  p.pump();
  EXPECT_EQ(b.get(dst, 100, 2500), expected(0, 2500)) << "the WRITE landed on the DCT's side";
  EXPECT_EQ(a.get(src, 4096, 2500), expected(0, 2500)) << "the READ brought it back";
  EXPECT_EQ(b.get(dst, 6000, 1)[0], 11u) << "both fetch-adds executed once, in order";
  EXPECT_EQ(a.get(src, 7000, 1)[0], 5u);
  EXPECT_EQ(a.get(src, 7008, 1)[0], 8u);
  const auto sent = a.drain(a_cq);
  ASSERT_EQ(sent.size(), 4u);
  for (const Cqe& c : sent) EXPECT_EQ(c.opcode, kCqeReq);
  EXPECT_TRUE(b.drain(b_cq).empty()) << "no receive completion for WRITE, READ or atomics";
  EXPECT_EQ(to_b.front().opcode, op::kDcBase | op::kRcRdmaWriteFirst);
}

TEST_F(DcTest, ADciMovesToAnotherDctOnlyWhenItsConnectionIsDone) {
  Cq& b_cq2 = b.make_cq();
  Srq& b_srq2 = b.make_srq();
  const uint32_t dctn2 = b.create_dct(b_cq2, b_srq2, kKey + 1, attr, 0x901);
  b.post_srq_recv(b_srq, {{dst.va(0), 1024, dst.key}});
  b.post_srq_recv(b_srq2, {{dst.va(1024), 1024, dst.key}});
  a.post_send(dci1, to_dct({.sges = {{src.va(0), 1024, src.key}}}));
  Wr second{.sges = {{src.va(1024), 1024, src.key}}};
  second.av = a.dc_address_vector(b, dctn2, kKey + 1);
  a.post_send(dci1, second);
  // Only the first went: the second waits for its ACK.
  ASSERT_EQ(p.wire.frames.size(), 1u);
  p.pump();
  ASSERT_EQ(to_b.size(), 2u);
  EXPECT_EQ(to_b[1].dest_qp, dctn2);
  EXPECT_EQ(to_b[1].psn, 0x101u) << "the DCI's PSNs go on";
  EXPECT_TRUE(to_b[1].dceth.connect) << "and open the new connection";
  EXPECT_EQ(to_b[1].dceth.access_key, kKey + 1);
  EXPECT_EQ(b.get(dst, 0, 2048), expected(0, 2048));
  EXPECT_EQ(b.drain(b_cq).size(), 1u);
  EXPECT_EQ(b.drain(b_cq2).size(), 1u);
  EXPECT_EQ(a.drain(a_cq).size(), 2u);
  EXPECT_EQ(a.engine.counters().dc_connections_opened, 2u);
}

TEST_F(DcTest, ADciComingBackOpensAFreshConnection) {
  // DCI 1 to the DCT, then to a second DCT, then back: the DCT's old state for it (expected PSN
  // 0x101) would NAK the PSN it comes back with; the connect flag starts it afresh.
  Cq& b_cq2 = b.make_cq();
  Srq& b_srq2 = b.make_srq();
  const uint32_t dctn2 = b.create_dct(b_cq2, b_srq2, kKey, attr, 0x901);
  for (int i = 0; i < 2; ++i) b.post_srq_recv(b_srq, {{dst.va(512 * i), 512, dst.key}});
  b.post_srq_recv(b_srq2, {{dst.va(2048), 512, dst.key}});
  a.post_send(dci1, to_dct({.sges = {{src.va(0), 512, src.key}}}));
  Wr elsewhere{.sges = {{src.va(512), 512, src.key}}};
  elsewhere.av = a.dc_address_vector(b, dctn2, kKey);
  a.post_send(dci1, elsewhere);
  a.post_send(dci1, to_dct({.sges = {{src.va(1024), 512, src.key}}}));
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 512), expected(0, 512));
  EXPECT_EQ(b.get(dst, 512, 512), expected(1024, 512));
  EXPECT_EQ(b.get(dst, 2048, 512), expected(512, 512));
  const auto sent = a.drain(a_cq);
  ASSERT_EQ(sent.size(), 3u);
  for (const Cqe& c : sent) EXPECT_EQ(c.opcode, kCqeReq);
  EXPECT_EQ(b.engine.counters().sequence_errors, 0u);
}

TEST_F(DcTest, AWrongAccessKeyIsDroppedAndTheDciRunsOutOfRetries) {
  attr.retry_count = 1;
  a.to_reset(dci1);
  a.bring_up_dci(dci1, attr, 0x100);
  b.post_srq_recv(b_srq, {{dst.va(0), 1024, dst.key}});
  a.post_send(dci1, to_dct({.sges = {{src.va(0), 64, src.key}}}, kKey ^ 1));
  p.pump();
  for (int i = 0; i < 4 && a.drain(a_cq).empty(); ++i) {
    p.fire_timers(a);
    p.pump();
  }
  EXPECT_GE(b.engine.counters().dc_key_violations, 1u);
  EXPECT_TRUE(b.drain(b_cq).empty()) << "nothing received";
  EXPECT_EQ(a.state(dci1), QpState::kError);
}

TEST_F(DcTest, ARemoteAccessErrorClosesThatConnectionOnly) {
  Mr read_only = b.reg_mr(4096, access_bits::kLocalRead | access_bits::kLocalWrite | access_bits::kRemoteRead);
  a.post_send(dci1, to_dct({.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = read_only.va(0),
                            .rkey = read_only.key}));
  p.pump();
  const auto failed = a.drain(a_cq);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].opcode, kCqeReqErr);
  EXPECT_EQ(failed[0].syndrome, kSynRemoteAccess);
  EXPECT_EQ(a.state(dci1), QpState::kError);
  // The DCT serves on: DCI 2's WRITE lands.
  a.post_send(dci2, to_dct({.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0),
                            .rkey = dst.key}));
  p.pump();
  EXPECT_EQ(b.get(dst, 0, 64), expected(0, 64));
  const auto ok = a.drain(a_cq);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].opcode, kCqeReq);
  EXPECT_EQ(b.engine.counters().dc_connections_failed, 1u);
}

// DCI streams (DCS) as rdma-core's stream tests use them: a WQE whose keys fail errs its stream
// only, the driver may reset an errored stream (not a good one), and the DCI goes to ERR once as
// many streams are in error as its qpc allows.
struct DcStreamTest : DcTest {
  Qp& dcs = a.create_qp(a_cq, a_cq, 0, qp_st::kDci, nullptr, 0, {}, [](std::span<uint8_t> qpc) {
    set(qpc, Field{0x7c, 28, 24}, 2);  // log_num_dci_stream_channels
    set(qpc, Field{0x80, 28, 24}, 1);  // log_num_dci_errored_streams: two may be in error
  });
  DcStreamTest() { a.bring_up_dci(dcs, attr, 0x900); }
  Wr send(uint16_t stream, bool good) {
    return to_dct({.sges = {{src.va(0), 64, good ? src.key : src.key ^ 0x100}}, .stream = stream});
  }
  uint8_t reset_stream(uint16_t stream) {
    auto in = a.input(0x1d0);
    store_be32(&in[0x08], 0x80000000u | dcs.qpn);  // qpc_ext
    store_be32(&in[0x10c], 1);                     // opt_param_mask_95_32: DCI_STREAM_CHANNEL_ID
    store_be16(&in[0x112], stream);
    return a.run(0x505, in);
  }
  Cqe one_completion() {
    p.pump();
    const auto c = a.drain(a_cq);
    EXPECT_EQ(c.size(), 1u);
    return c.empty() ? Cqe{} : c[0];
  }
};

TEST_F(DcStreamTest, AnErrorStaysInItsStreamUntilTooManyAreInError) {
  for (int i = 0; i < 4; ++i) b.post_srq_recv(b_srq, {{dst.va(1024 * i), 1024, dst.key}});
  a.post_send(dcs, send(1, false));
  Cqe c = one_completion();
  EXPECT_EQ(c.opcode, kCqeReqErr);
  EXPECT_EQ(c.syndrome, 0x04) << "local protection";
  EXPECT_EQ(a.state(dcs), QpState::kRts) << "the stream is in error, not the DCI";
  a.post_send(dcs, send(2, true));
  EXPECT_EQ(one_completion().opcode, kCqeReq) << "another stream goes on";
  EXPECT_EQ(b.get(dst, 0, 64), expected(0, 64));
  a.post_send(dcs, send(1, true));
  EXPECT_EQ(one_completion().syndrome, 0x05) << "the errored stream flushes its work";
  EXPECT_NE(reset_stream(2), 0) << "a good stream cannot be reset";
  EXPECT_EQ(reset_stream(1), 0);
  a.post_send(dcs, send(1, true));
  EXPECT_EQ(one_completion().opcode, kCqeReq) << "reset, it works again";
  a.post_send(dcs, send(3, false));
  EXPECT_EQ(one_completion().opcode, kCqeReqErr);
  EXPECT_EQ(a.state(dcs), QpState::kRts);
  a.post_send(dcs, send(0, false));
  EXPECT_EQ(one_completion().syndrome, 0x04) << "the second stream in error has its own error";
  EXPECT_EQ(a.state(dcs), QpState::kError) << "and takes the DCI to ERR";
  a.post_send(dcs, send(2, true));
  EXPECT_EQ(one_completion().syndrome, 0x05);
  EXPECT_EQ(a.engine.counters().dci_stream_errors, 3u);
}

TEST_F(DcStreamTest, StreamsBeyondTheCapsAreRefused) {
  auto in = a.input(0x110);
  auto qpc = std::span(in).subspan(0x18, 0xe8);
  set(qpc, Field{0x00, 23, 16}, qp_st::kDci);
  set(qpc, Field{0x04, 23, 0}, a.pd);
  set(qpc, Field{0x7c, 28, 24}, 5);  // the caps offer 2^4 channels
  EXPECT_EQ(a.run(0x500, in), 0x3) << "BAD_PARAM";
  set(qpc, Field{0x00, 23, 16}, qp_st::kRc);
  set(qpc, Field{0x7c, 28, 24}, 1);
  EXPECT_EQ(a.run(0x500, in), 0x3) << "only a DCI has streams";
}

// ODP on DC (dc_odp_caps, rdma-core's test_odp_dc_traffic): a DCI's SGEs fault as an RC QP's, a
// DCT's SRQ WQE faults naming the SRQ, and the resume reaches the connection that waits for it.
TEST_F(DcTest, OdpFaultsOnBothSidesAreResumedAndTheSendLands) {
  FaultQueue faults_a{a}, faults_b{b};
  set_present(a, src, 0, false);
  set_present(b, dst, 0, false);
  const uint16_t rindex = b.post_srq_recv(b_srq, {{dst.va(0), 1024, dst.key}});
  a.post_send(dci1, to_dct({.sges = {{src.va(0), 1000, src.key}}}));
  p.pump();
  auto at_a = faults_a.poll();
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].fault_type, page_fault::kRequesterSend);
  EXPECT_EQ(at_a[0].wq_number, dci1.qpn);
  set_present(a, src, 0, true);
  ASSERT_EQ(faults_a.resume(at_a[0]), 0);
  p.pump();
  const auto at_b = faults_b.poll();
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].fault_type, page_fault::kSrq);
  EXPECT_EQ(at_b[0].wq_number, b_srq.srqn);
  EXPECT_EQ(at_b[0].wqe_index, rindex);
  EXPECT_TRUE(b.drain(b_cq).empty()) << "nothing lands before the resume";
  set_present(b, dst, 0, true);
  ASSERT_EQ(faults_b.resume(at_b[0]), 0);
  ASSERT_TRUE(p.fire_timers(a));  // the DCI sends again after the RNR NAK's wait
  p.pump();
  const auto got = b.drain(b_cq);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, kCqeRespSend);
  EXPECT_EQ(got[0].wqe_counter, rindex);
  EXPECT_EQ(b.get(dst, 0, 1000), expected(0, 1000));
  const auto sent = a.drain(a_cq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  // The resume reached the connection's wait: its next fault is a new event, not a silent wait.
  set_present(b, dst, 1, false);
  b.post_srq_recv(b_srq, {{dst.va(4096), 1024, dst.key}});
  a.post_send(dci1, to_dct({.sges = {{src.va(0), 100, src.key}}}));
  p.pump();
  EXPECT_EQ(faults_b.poll().size(), 1u);
}

TEST_F(DcTest, DrainPostsTheDrainedEventAndQueryShowsIt) {
  // mlx5_core's async EQ subscribes to DCT_DRAINED (0x1c) when the caps offer DC.
  const uint64_t ring = b.page();
  for (uint32_t i = 0; i < 64; ++i) *b.memory.at(ring + 64 * i + 0x3f) = 1;
  b.create_eq(6, b.uar, 0, uint64_t(1) << 0x1c, {ring});
  auto in = b.input(0x10);
  store_be32(&in[0x08], dctn);
  ASSERT_EQ(b.run(0x712, in), 0) << "DRAIN_DCT";
  const auto eqe = b.read(ring, 64);
  EXPECT_EQ(eqe[0x01], 0x1c);
  EXPECT_EQ(load_be32(&eqe[0x20 + 0x18]) & 0xffffff, dctn);
  ASSERT_EQ(b.run(0x713, in, 0x50), 0) << "QUERY_DCT";
  EXPECT_EQ(b.out32(0x10) >> 24 & 0xf, 2u) << "state DRAINED";
  EXPECT_EQ(b.out32(0x14) & 0xffffff, 0x900u) << "the dctc as created: user_index";
  // The QP commands do not take a DCT's number.
  auto q = b.input(0x10);
  store_be32(&q[0x08], dctn);
  EXPECT_NE(b.run(0x50b, q, 0x110), 0) << "QUERY_QP";
  EXPECT_NE(b.run(0x501, q), 0) << "DESTROY_QP";
  ASSERT_EQ(b.run(0x711, in), 0) << "DESTROY_DCT";
  EXPECT_NE(b.run(0x713, in, 0x50), 0) << "gone";
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
