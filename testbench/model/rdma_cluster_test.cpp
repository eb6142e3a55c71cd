// The headless host with more than two hosts (hostsim's RdmaCluster): four functions, each with its
// own host memory, on one wire that routes frames by destination MAC as a switch would. Two RC
// connections and a UD exchange run at once between different pairs; each is checked on the
// responder's memory and completions, and no frame reaches a node it is not addressed to.
#include <systemc>

#include <map>

#include "sriov/port_scheduler.h"

#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeRespSend = 0x2;
constexpr uint32_t kQkey = 0x11111111, kGrh = 40;

// A switch past kmax: every ECN-capable IPv4 packet to node `to` is marked CE (and counted).
std::function<bool(WireFrame&)> mark_congestion_to(int to, uint64_t& marked) {
  return [to, &marked](WireFrame& f) {
    constexpr size_t kTos = 15, kChecksum = 24, kIpHeader = 14;
    if (f.to != to || f.bytes.size() < 34 || f.bytes[12] != 0x08 || f.bytes[13] != 0x00 || (f.bytes[kTos] & 3) == 0) return true;
    f.bytes[kTos] |= 3;
    f.bytes[kChecksum] = f.bytes[kChecksum + 1] = 0;
    uint32_t sum = 0;
    for (size_t i = 0; i < 20; i += 2) sum += uint32_t(f.bytes[kIpHeader + i]) << 8 | f.bytes[kIpHeader + i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    f.bytes[kChecksum] = uint8_t(~sum >> 8);
    f.bytes[kChecksum + 1] = uint8_t(~sum);
    ++marked;
    return true;
  };
}

struct ClusterTest : ::testing::Test {
  RdmaCluster c{4};
  std::map<int, std::vector<std::array<uint8_t, 6>>> received_macs;  // per node: destination MACs

  ClusterTest() {
    c.wire.filter = [this](WireFrame& f) {
      std::array<uint8_t, 6> mac{};
      std::copy_n(f.bytes.begin(), 6, mac.begin());
      received_macs[f.to].push_back(mac);
      return true;
    };
  }
};

TEST_F(ClusterTest, NodesHaveTheirOwnAddressesAndKeys) {
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = i + 1; j < c.size(); ++j) {
      EXPECT_NE(c.node(int(i)).mac, c.node(int(j)).mac);
      EXPECT_NE(c.node(int(i)).gid, c.node(int(j)).gid);
      EXPECT_NE(c.node(int(i)).reg_mr(4096).key, c.node(int(j)).reg_mr(4096).key);
    }
}

TEST_F(ClusterTest, ConnectionsBetweenDifferentPairsRunSideBySide) {
  RdmaNode &n0 = c.node(0), &n1 = c.node(1), &n2 = c.node(2), &n3 = c.node(3);
  Connection write03 = RdmaCluster::connect(n0, n3);
  Connection send12 = RdmaCluster::connect(n1, n2);
  Mr src0 = n0.reg_mr(65536), dst3 = n3.reg_mr(65536);
  Mr src1 = n1.reg_mr(8192), dst2 = n2.reg_mr(8192);
  n0.put(src0, 0, pattern(65536, 3));
  n1.put(src1, 0, pattern(8192, 4));
  const uint16_t r2 = n2.post_recv(*send12.b, {{dst2.va(0), 8192, dst2.key}});
  n0.post_send(*write03.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src0.va(0), 65536, src0.key}},
                            .remote_va = dst3.va(0), .rkey = dst3.key});
  n1.post_send(*send12.a, {.sges = {{src1.va(0), 6000, src1.key}}});
  c.pump();

  EXPECT_EQ(n3.get(dst3, 0, 65536), pattern(65536, 3)) << "the WRITE landed on node 3";
  const auto recv = n2.drain(*send12.b->rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].opcode, kCqeRespSend);
  EXPECT_EQ(recv[0].wqe_counter, r2);
  EXPECT_EQ(recv[0].byte_cnt, 6000u);
  const auto sent = pattern(8192, 4);
  EXPECT_EQ(n2.get(dst2, 0, 6000), std::vector<uint8_t>(sent.begin(), sent.begin() + 6000));
  for (auto* n : {&n0, &n1}) {
    const auto done = n->drain(n == &n0 ? *write03.a->scq : *send12.a->scq);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].opcode, kCqeReq);
  }
  for (int i = 0; i < 4; ++i)
    for (const auto& mac : received_macs[i]) EXPECT_EQ(mac, c.node(i).mac) << "node " << i << " got another's frame";
  for (int i = 0; i < 4; ++i) EXPECT_GT(received_macs[i].size(), 0u) << "node " << i << ": requests or ACKs";
  EXPECT_EQ(c.wire.unclaimed, 0u);
}

// Two functions of one device (nodes 0 and 1 as VFs 0 and 1: vports 1 and 2) write to node 2 at
// once through the device's transmit scheduler: with max_tx_rate 10 and 30 Gb/s, each engine's
// packets leave at its rate in model time; the data lands whole on the responder.
TEST_F(ClusterTest, TwoVfsWritingAtOnceLeaveAtTheirMaxRates) {
  RdmaNode &n0 = c.node(0), &n1 = c.node(1), &n2 = c.node(2);
  sriov::PortScheduler port(100);
  port.set_qos(1, {.max_tx_rate_mbps = 10000});
  port.set_qos(2, {.max_tx_rate_mbps = 30000});
  uint64_t last_done[3] = {};
  for (int i : {0, 1})
    c.node(i).port.serialise = [&, vport = uint16_t(i + 1)](std::span<const uint8_t> frame, size_t bytes, uint64_t start) {
      return last_done[vport] = port.serialised_ps(vport, frame, bytes, start);
    };
  Connection a = RdmaCluster::connect(n0, n2), b = RdmaCluster::connect(n1, n2);
  constexpr uint32_t kBytes = 256 * 1024;
  Mr src0 = n0.reg_mr(kBytes), src1 = n1.reg_mr(kBytes), dst0 = n2.reg_mr(kBytes), dst1 = n2.reg_mr(kBytes);
  n0.put(src0, 0, pattern(kBytes, 5));
  n1.put(src1, 0, pattern(kBytes, 6));
  for (int k = 0; k < 4; ++k) {  // interleaved messages, as two engines sending at once
    const uint32_t off = k * (kBytes / 4);
    n0.post_send(*a.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src0.va(off), kBytes / 4, src0.key}},
                        .remote_va = dst0.va(off), .rkey = dst0.key});
    n1.post_send(*b.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src1.va(off), kBytes / 4, src1.key}},
                        .remote_va = dst1.va(off), .rkey = dst1.key});
  }
  c.pump();
  EXPECT_EQ(n2.get(dst0, 0, kBytes), pattern(kBytes, 5));
  EXPECT_EQ(n2.get(dst1, 0, kBytes), pattern(kBytes, 6));
  EXPECT_EQ(n0.drain(*a.a->scq).size(), 4u);
  EXPECT_EQ(n1.drain(*b.a->scq).size(), 4u);
  // Each engine sent back to back from model time 0 (no kernel runs here): its rate is its bytes
  // over the time its last packet left.
  for (uint16_t vport : {1, 2}) {
    const double gbps = double(port.bytes_sent(vport)) * 8.0 / (double(last_done[vport]) / 1000.0);
    const double want = vport == 1 ? 10.0 : 30.0;
    EXPECT_NEAR(gbps, want, want * 0.05) << "vport " << vport;
    EXPECT_GT(port.bytes_sent(vport), kBytes) << "every packet went through the scheduler";
  }
}

// The same two VFs with min_tx_rate 10 and 30 Gb/s (weights 1:3) and no cap: they share the full
// port 25:75. VF 1 has three times VF 0's bytes, so both send for the whole run and each one's
// rate over it is its share.
TEST_F(ClusterTest, TwoVfsWritingAtOnceShareThePortByTheirMinRates) {
  RdmaNode &n0 = c.node(0), &n1 = c.node(1), &n2 = c.node(2);
  sriov::PortScheduler port(100);
  port.set_qos(1, {.min_tx_rate_mbps = 10000});
  port.set_qos(2, {.min_tx_rate_mbps = 30000});
  uint64_t last_done[3] = {};
  for (int i : {0, 1})
    c.node(i).port.serialise = [&, vport = uint16_t(i + 1)](std::span<const uint8_t> frame, size_t bytes, uint64_t start) {
      return last_done[vport] = port.serialised_ps(vport, frame, bytes, start);
    };
  Connection a = RdmaCluster::connect(n0, n2), b = RdmaCluster::connect(n1, n2);
  constexpr uint32_t kBytes0 = 256 * 1024, kBytes1 = 3 * kBytes0;
  Mr src0 = n0.reg_mr(kBytes0), src1 = n1.reg_mr(kBytes1), dst0 = n2.reg_mr(kBytes0), dst1 = n2.reg_mr(kBytes1);
  n0.put(src0, 0, pattern(kBytes0, 5));
  n1.put(src1, 0, pattern(kBytes1, 6));
  // Many small messages: an engine works a message ahead of the other, and its first one goes out
  // alone at the full rate before the other shows up (a share needs both active).
  constexpr uint32_t kMessages = 32;
  for (uint32_t k = 0; k < kMessages; ++k) {
    const uint32_t off0 = k * (kBytes0 / kMessages), off1 = k * (kBytes1 / kMessages);
    n0.post_send(*a.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src0.va(off0), kBytes0 / kMessages, src0.key}},
                        .remote_va = dst0.va(off0), .rkey = dst0.key});
    n1.post_send(*b.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src1.va(off1), kBytes1 / kMessages, src1.key}},
                        .remote_va = dst1.va(off1), .rkey = dst1.key});
  }
  c.pump();
  EXPECT_EQ(n2.get(dst0, 0, kBytes0), pattern(kBytes0, 5));
  EXPECT_EQ(n2.get(dst1, 0, kBytes1), pattern(kBytes1, 6));
  double gbps[3] = {};
  for (uint16_t vport : {1, 2}) gbps[vport] = double(port.bytes_sent(vport)) * 8.0 / (double(last_done[vport]) / 1000.0);
  EXPECT_NEAR(gbps[1], 25.0, 25.0 * 0.05);
  EXPECT_NEAR(gbps[2], 75.0, 75.0 * 0.05);
  EXPECT_NEAR(gbps[2] / gbps[1], 3.0, 3.0 * 0.05);
}

TEST_F(ClusterTest, DatagramsReachOnlyTheAddressedNode) {
  RdmaNode &n0 = c.node(0), &n2 = c.node(2);
  Cq& scq = n2.make_cq();
  Qp& sender = n2.create_qp(scq, n2.make_cq(), 0, qp_st::kUd);
  Cq& rcq = n0.make_cq();
  Qp& receiver = n0.create_qp(n0.make_cq(), rcq, 0, qp_st::kUd);
  n2.bring_up_ud(sender, kQkey);
  n0.bring_up_ud(receiver, kQkey);
  Mr src = n2.reg_mr(4096), dst = n0.reg_mr(4096);
  n2.put(src, 0, pattern(4096, 9));
  n0.post_recv(receiver, {{dst.va(0), 1024 + kGrh, dst.key}});
  n2.post_send(sender, {.sges = {{src.va(0), 1000, src.key}}, .av = n2.address_vector(n0, receiver.qpn, kQkey)});
  c.pump();
  const auto recv = n0.drain(rcq);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].flags_rqpn & 0xffffff, sender.qpn);
  EXPECT_EQ(n0.get(dst, kGrh, 1000), n2.get(src, 0, 1000));
  EXPECT_EQ(received_macs.size(), 1u) << "one node received";
  EXPECT_EQ(received_macs[0].size(), 1u);
}

TEST_F(ClusterTest, BroadcastFloodsUnknownUnicastIsCounted) {
  std::vector<uint8_t> frame(64, 0);
  std::fill_n(frame.begin(), 6, 0xff);
  c.wire.route(1, frame);
  frame[0] = 0x02;  // a unicast address nobody owns
  c.wire.route(1, frame);
  c.pump();
  EXPECT_EQ(received_macs.size(), 3u) << "every node but the sender";
  EXPECT_EQ(received_macs.count(1), 0u);
  EXPECT_EQ(c.wire.unclaimed, 3u + 1u) << "three frames no QP claimed, one no node owned";
}

// The host's side of events: a doorbell through the BlueFlame register, a CQ armed for its next
// completion raises one completion EQE naming it and one MSI-X message; unarmed, none.
TEST_F(ClusterTest, BlueFlameDoorbellArmedCqAndItsEvent) {
  RdmaNode &n0 = c.node(0), &n1 = c.node(1);
  Connection conn = RdmaCluster::connect(n0, n1);
  Mr src = n0.reg_mr(4096), dst = n1.reg_mr(4096);
  n0.put(src, 0, pattern(4096, 1));
  auto write = [&] {
    n0.post_send(*conn.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 4096, src.key}}, .remote_va = dst.va(0),
                           .rkey = dst.key}, false);
    n0.ring_blueflame(*conn.a);
    c.pump();
  };
  write();  // CQ not armed: a completion, no event
  EXPECT_EQ(n0.drain(*conn.a->scq).size(), 1u);
  EXPECT_TRUE(n0.poll_eq().empty());
  EXPECT_TRUE(n0.msix.fired.empty());
  EXPECT_EQ(n1.get(dst, 0, 4096), pattern(4096, 1));

  n0.arm_cq(*conn.a->scq);
  write();
  const auto events = n0.poll_eq();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].first, 0x00) << "a completion event";
  EXPECT_EQ(events[0].second, conn.a->scq->cqn);
  EXPECT_EQ(n0.msix.fired.size(), 1u);
  EXPECT_EQ(n0.drain(*conn.a->scq).size(), 1u);
  write();  // the arm was used up: no second event until armed again
  EXPECT_TRUE(n0.poll_eq().empty());
  EXPECT_EQ(n0.doorbells.counters().sq_doorbells, 3u);
  EXPECT_EQ(n0.doorbells.counters().malformed, 0u);
}

// A node's address can be the one a capture names (hcareplay gives the hosts theirs): an IPv6 GID
// makes IPv6 frames, and the wire delivers by the new MAC.
TEST_F(ClusterTest, ANodeTakesTheAddressItIsGiven) {
  RdmaNode& a = c.node(0);
  RdmaNode& b = c.node(1);
  const transport::Gid v6a = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0xc9, 0, 0xff, 0xfe, 0, 0, 0x01};
  transport::Gid v6b = v6a;
  v6b[15] = 0x02;
  a.set_address(v6a, {0x02, 0xc9, 0, 0, 0, 0x01});
  b.set_address(v6b, {0x02, 0xc9, 0, 0, 0, 0x02});
  auto conn = RdmaCluster::connect(a, b);
  Mr src = a.reg_mr(4096), dst = b.reg_mr(4096);
  a.post_send(*conn.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}},
                        .remote_va = dst.va(0), .rkey = dst.key});
  c.pump();
  ASSERT_EQ(a.drain(*conn.a->scq).size(), 1u) << "the responder answered the new address";
  EXPECT_EQ(received_macs[0].back(), (std::array<uint8_t, 6>{0x02, 0xc9, 0, 0, 0, 0x01}));
  EXPECT_EQ(received_macs[1].back(), (std::array<uint8_t, 6>{0x02, 0xc9, 0, 0, 0, 0x02}));
  EXPECT_EQ(c.wire.unclaimed, 0u);
}

// The QP table's source (model/rdma/engine.h QpDescription): each QP as it enters RTR and RTS, with
// its CQs' sizes, its send queue, its peer and its address.
TEST_F(ClusterTest, AQpIsDescribedWhenItBecomesReady) {
  RdmaNode& a = c.node(0);
  RdmaNode& b = c.node(1);
  std::vector<QpDescription> seen;
  a.f.qp_ready = [&](uint32_t qpn) { a.engine.qp_ready(qpn); };
  a.engine.set_qp_hook([&](const QpDescription& d) { seen.push_back(d); });
  Cq& send = a.make_cq(1);
  Cq& recv = a.make_cq(5);
  Qp& qa = a.create_qp(send, recv, 0, qp_st::kRc, nullptr, 0, {.log_sq_size = 7, .log_rq_size = 4});
  Qp& qb = b.create_qp(b.make_cq(), b.make_cq());
  RdmaCluster::bring_up(a, qa, b, qb, {.ack_timeout = 14});
  ASSERT_EQ(seen.size(), 2u) << "RTR, then RTS";
  EXPECT_FALSE(seen[0].sending);
  EXPECT_TRUE(seen[1].sending);
  const QpDescription& d = seen[1];
  EXPECT_EQ(d.qpn, qa.qpn);
  EXPECT_EQ(d.service, qp_st::kRc);
  EXPECT_EQ(d.send_cq, send.cqn);
  EXPECT_EQ(d.send_cq_entries, 2u);
  EXPECT_EQ(d.recv_cq, recv.cqn);
  EXPECT_EQ(d.recv_cq_entries, 32u);
  EXPECT_EQ(d.sq_wqebbs, 128u);
  EXPECT_EQ(d.remote_qpn, qb.qpn);
  EXPECT_EQ(d.ack_timeout, 14u);
  EXPECT_EQ(d.address, a.gid);
  EXPECT_EQ(d.mac, a.mac);
  a.engine.set_qp_hook({});
}

// DCQCN's counters through the firmware, as mlx5_ib reads its hw_counters (QUERY_CONG_STATISTICS,
// cc_query_allowed): a switch marks the WRITE's packets CE, the responder counts them and sends
// CNPs, the requester handles them; `clear` starts the counters again from zero.
TEST_F(ClusterTest, CongestionCountersReachTheFirmware) {
  RdmaNode& a = c.node(0);
  RdmaNode& b = c.node(1);
  const DcqcnParameters dcqcn = *dcqcn_profile("connectx");
  a.engine.set_congestion_control(&dcqcn);
  b.engine.set_congestion_control(&dcqcn);
  uint64_t marked = 0;
  c.wire.filter = mark_congestion_to(1, marked);
  auto conn = RdmaCluster::connect(a, b);
  Mr src = a.reg_mr(65536), dst = b.reg_mr(65536);
  a.post_send(*conn.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 65536, src.key}},
                        .remote_va = dst.va(0), .rkey = dst.key});
  c.pump();
  ASSERT_EQ(a.drain(*conn.a->scq).size(), 1u);
  ASSERT_GT(marked, 0u);

  constexpr uint16_t kQueryCongStatistics = 0x826;
  const auto query = [](RdmaNode& n, bool clear) {
    auto in = HostFunction::input(0x10);
    if (clear) in[8] = 0x80;
    EXPECT_EQ(n.run(kQueryCongStatistics, in, 0x110), 0);
    const auto at = [&](uint32_t offset) { return uint64_t(n.out32(offset)) << 32 | n.out32(offset + 4); };
    return std::array<uint64_t, 4>{at(0x18), at(0x20), at(0x54), at(0x5c)};  // ignored, handled, marked, sent
  };
  const auto responder = query(b, false);
  EXPECT_EQ(responder[2], marked) << "np_ecn_marked_roce_packets";
  EXPECT_GE(responder[3], 1u) << "np_cnp_sent";
  EXPECT_EQ(responder[3], b.engine.counters().np_cnp_sent);
  const auto requester = query(a, true);
  EXPECT_EQ(requester[1] + requester[0], responder[3]) << "every CNP handled or ignored at the requester";
  EXPECT_GE(requester[1], 1u) << "rp_cnp_handled";
  EXPECT_EQ(query(a, false), (std::array<uint64_t, 4>{})) << "cleared";

  // The requester is rate-limited now: its next message is paced. Reconnected (RESET to RTS), the
  // QP starts at line rate again, with nothing of the limiter before.
  c.wire.filter = {};
  size_t paced = 0;
  a.engine.set_congestion_control(&dcqcn, [&](const CongestionEvent& e) { paced += !e.cnp; });
  const auto write = [&] {
    a.post_send(*conn.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 4096, src.key}},
                          .remote_va = dst.va(0), .rkey = dst.key});
    c.pump();
    ASSERT_EQ(a.drain(*conn.a->scq).size(), 1u);
  };
  write();
  EXPECT_EQ(paced, 4u) << "limited after the CNPs: each of the message's four packets (MTU 1024) charged";
  a.f.qp_ready = [&](uint32_t qpn) { a.engine.qp_ready(qpn); };
  a.to_reset(*conn.a);
  b.to_reset(*conn.b);
  RdmaCluster::bring_up(a, *conn.a, b, *conn.b, {});
  paced = 0;
  write();
  EXPECT_EQ(paced, 0u) << "a new connection at line rate";
  a.engine.set_congestion_control(nullptr);
  b.engine.set_congestion_control(nullptr);
}

// DCQCN paces packet by packet, as a ConnectX does: a rate-limited QP's message leaves one packet
// at a time (the rest held, its continuation queued for when the rate allows), and meanwhile the
// function's other QPs send. Before, a message went whole at the line rate and only the next one
// waited. The continuation is no retransmission, and the data lands whole.
TEST(DcqcnPacing, ALimitedMessageGoesPacketByPacketAndOtherQpsGoMeanwhile) {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  QueuedSqScheduler scheduler;
  a.engine.set_sq_scheduler(&scheduler);
  const DcqcnParameters dcqcn = *dcqcn_profile("connectx");
  a.engine.set_congestion_control(&dcqcn);
  b.engine.set_congestion_control(&dcqcn);
  Connection limited = p.connect(), other = p.connect();
  Mr src = a.reg_mr(16384), dst = b.reg_mr(16384, access_bits::kAll);
  const std::vector<uint8_t> data = pattern(16384, 9);
  a.put(src, 0, data);
  const auto write = [&](Connection& c, uint64_t offset, uint32_t bytes) {
    a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(offset), bytes, src.key}},
                       .remote_va = dst.va(offset), .rkey = dst.key});
  };
  uint64_t marked = 0;
  p.wire.filter = mark_congestion_to(1, marked);
  write(limited, 0, 1024);  // one packet, marked: B answers with a CNP, A cuts the QP's rate
  p.pump();
  ASSERT_GT(marked, 0u);
  ASSERT_GE(a.engine.counters().rp_cnp_handled, 1u);
  p.wire.filter = {};
  scheduler.queued.clear();  // nothing of the first message is held
  ASSERT_EQ(a.drain(*limited.a->scq).size(), 1u);

  const uint64_t packets_before = a.engine.counters().tx_packets;
  write(limited, 0, 8192);  // eight 1024-byte packets
  p.pump();
  EXPECT_EQ(a.engine.counters().tx_packets, packets_before + 1) << "one packet, then the rate holds the rest";
  ASSERT_EQ(scheduler.queued.size(), 1u);
  EXPECT_GT(scheduler.queued.front().not_before_ps, 0u) << "resumed when the rate allows";
  EXPECT_TRUE(a.drain(*limited.a->scq).empty());

  write(other, 8192, 4096);  // another QP of the function is not held behind it
  p.pump();
  ASSERT_EQ(a.drain(*other.a->scq).size(), 1u);
  EXPECT_EQ(b.get(dst, 8192, 4096), std::vector<uint8_t>(data.begin() + 8192, data.begin() + 12288));

  // Resumed too early (model time stands still here), the message waits again and sends nothing.
  SqResume next = scheduler.queued.front();
  scheduler.queued.pop_front();
  const uint64_t packets_held = a.engine.counters().tx_packets;
  a.engine.resume_sq(next);
  EXPECT_EQ(a.engine.counters().tx_packets, packets_held);
  ASSERT_EQ(scheduler.queued.size(), 1u);
  // Without the limit, the rest follows; all of it lands at B, once, with no retransmission.
  a.engine.set_congestion_control(nullptr);
  next = scheduler.queued.front();
  scheduler.queued.pop_front();
  a.engine.resume_sq(next);
  p.pump();
  EXPECT_EQ(a.engine.counters().tx_packets, packets_held + 7);
  ASSERT_EQ(a.drain(*limited.a->scq).size(), 1u);
  EXPECT_EQ(b.get(dst, 0, 8192), std::vector<uint8_t>(data.begin(), data.begin() + 8192));
  EXPECT_EQ(a.engine.counters().retransmits, 0u);
  EXPECT_TRUE(scheduler.queued.empty());
  a.engine.set_sq_scheduler(nullptr);
  b.engine.set_congestion_control(nullptr);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
