// Reconstruction of a crafted capture (issue 13): one message of each opcode class, each kind of
// anomaly, and frames that belong to nothing. Every RoCE frame must end up in a message, tied to
// one as its answer, counted as connection set-up, or listed as unmapped with its reason.
#include "replay/reconstruct.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "traces/pcap_writer.h"
#include "transport/roce_packet.h"

namespace hcaemu::replay {
namespace {

namespace op = transport::opcode;
using transport::RocePacket;

constexpr uint32_t kQpA = 0x11, kQpB = 0x22;

struct Capture {
  std::vector<std::vector<uint8_t>> frames;
  RocePacket base(bool a_to_b) const {
    RocePacket p;
    p.src_mac = a_to_b ? transport::Mac{2, 0, 0, 0, 0, 0xa} : transport::Mac{2, 0, 0, 0, 0, 0xb};
    p.dst_mac = a_to_b ? transport::Mac{2, 0, 0, 0, 0, 0xb} : transport::Mac{2, 0, 0, 0, 0, 0xa};
    p.src_gid = transport::gid_from_ipv4(a_to_b ? 0x0a000001 : 0x0a000002);
    p.dst_gid = transport::gid_from_ipv4(a_to_b ? 0x0a000002 : 0x0a000001);
    p.dest_qp = a_to_b ? kQpB : kQpA;
    return p;
  }
  std::vector<uint8_t> payload(size_t n) const { return std::vector<uint8_t>(n, 0x5a); }
  // A request from A to B.
  void request(uint8_t opcode, uint32_t psn, size_t bytes = 0, uint32_t reth_length = 0, uint32_t imm = 0) {
    RocePacket p = base(true);
    p.opcode = opcode;
    p.psn = psn;
    const auto data = payload(bytes);
    p.payload = data;
    p.reth.dma_length = reth_length;
    p.immediate = imm;
    p.invalidate_rkey = imm;
    frames.push_back(transport::build_frame(p));
  }
  // A response from B to A.
  void response(uint8_t opcode, uint32_t psn, uint8_t syndrome = 0, size_t bytes = 0) {
    RocePacket p = base(false);
    p.opcode = opcode;
    p.psn = psn;
    p.aeth.syndrome = syndrome;
    const auto data = payload(bytes);
    p.payload = data;
    frames.push_back(transport::build_frame(p));
  }
  void datagram(uint32_t dest_qp, uint32_t src_qp, size_t bytes, bool imm) {
    RocePacket p = base(true);
    p.opcode = imm ? op::kUdSendOnlyImm : op::kUdSendOnly;
    p.dest_qp = dest_qp;
    p.deth = {.qkey = 0x80010000, .src_qp = src_qp};
    p.immediate = 0x77;
    const auto data = payload(bytes);
    p.payload = data;
    frames.push_back(transport::build_frame(p));
  }
  std::string write(const std::string& name) const {
    const std::string path = (std::filesystem::temp_directory_path() / name).string();
    std::string error;
    auto pcap = traces::PcapWriter::open(path, &error);
    EXPECT_TRUE(pcap) << error;
    for (size_t i = 0; i < frames.size(); ++i) pcap->write(uint64_t(i + 1) * 1'000'000, frames[i]);  // 1 us apart (picoseconds)
    return path;
  }
};

TEST(Reconstruct, EachOpcodeClassAndAnomalyIsRecognised) {
  Capture c;
  c.request(op::kRcSendFirst, 100, 1024);                          // SEND of three packets with an immediate
  c.request(op::kRcSendMiddle, 101, 1024);
  c.request(op::kRcSendLastImm, 102, 10, 0, 0xabcd);
  c.response(op::kRcAcknowledge, 102);                            // 4
  c.request(op::kRcRdmaWriteOnly, 103, 100, 100);                 // WRITE
  c.request(op::kRcRdmaWriteOnly, 103, 100, 100);                 // the same packet again: retransmitted
  c.response(op::kRcAcknowledge, 103, 0x60);                      // a PSN sequence NAK
  c.response(op::kRcAcknowledge, 103, 0x21);                      // an RNR NAK
  c.response(op::kRcAcknowledge, 103);
  c.request(op::kRcRdmaReadRequest, 104, 0, 2048);                // READ of two responses
  c.response(op::kRcRdmaReadResponseFirst, 104, 0, 1024);
  c.response(op::kRcRdmaReadResponseFirst, 104, 0, 1024);         // duplicate response
  c.response(op::kRcRdmaReadResponseLast, 105, 0, 1024);
  c.request(op::kRcFetchAdd, 106);                                // atomic
  c.response(op::kRcAtomicAcknowledge, 106);
  c.request(op::kRcSendOnlyInvalidate, 107, 64, 0, 0x1234);       // SEND with invalidate
  c.request(op::kRcSendMiddle, 200, 1024);                        // a MIDDLE without its FIRST (and a gap)
  c.datagram(0x44, 0x33, 300, true);                              // UD datagram
  c.datagram(1, 1, 256, false);                                   // a CM MAD on QP1
  c.frames.push_back(std::vector<uint8_t>(60, 0));                // not RoCE (ethertype 0)
  auto bad = c.frames[0];
  bad[bad.size() - 1] ^= 0xff;                                    // ICRC wrong
  c.frames.push_back(bad);
  auto unknown = c.frames[4];
  c.frames.push_back(std::vector<uint8_t>(unknown.begin(), unknown.begin() + 50));  // truncated inside the BTH
  const std::string path = c.write("reconstruct_test.pcap");

  std::string error;
  const auto r = reconstruct_capture(path, &error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->frames, c.frames.size());
  ASSERT_EQ(r->hosts.size(), 2u);
  EXPECT_EQ(r->hosts[0].gid, transport::gid_from_ipv4(0x0a000001));
  ASSERT_EQ(r->queue_pairs.size(), 3u);
  const QueuePair& rc = r->queue_pairs[0];
  EXPECT_EQ(rc.service, Service::kRc);
  EXPECT_EQ(rc.qpn, kQpA) << "the requester's QPN comes from the responses";
  EXPECT_EQ(rc.peer_qpn, kQpB);
  EXPECT_EQ(rc.mtu, 1024u);
  EXPECT_EQ(r->queue_pairs[1].service, Service::kUd);
  EXPECT_EQ(r->queue_pairs[1].qpn, 0x33u);
  EXPECT_FALSE(r->queue_pairs[1].connection_setup);
  const QueuePair& gsi = r->queue_pairs[2];  // the MAD: a connection set-up QP, so the replay repeats its device work
  EXPECT_TRUE(gsi.connection_setup);
  EXPECT_EQ(gsi.service, Service::kUd);
  EXPECT_EQ(gsi.qpn, 1u);
  EXPECT_EQ(gsi.peer_qpn, 1u);

  ASSERT_EQ(r->messages.size(), 7u);
  const Message& send = r->messages[0];
  EXPECT_EQ(send.kind, MessageKind::kSendImm);
  EXPECT_EQ(send.bytes, 2058u);
  EXPECT_EQ(send.packets, 3u);
  EXPECT_EQ(send.immediate, 0xabcdu);
  EXPECT_EQ(send.done_ns, 4'000u) << "acknowledged by the ACK of its last PSN";
  const Message& write = r->messages[1];
  EXPECT_EQ(write.kind, MessageKind::kWrite);
  EXPECT_EQ(write.bytes, 100u);
  EXPECT_EQ(write.retransmitted, 1u);
  EXPECT_EQ(write.rnr_naks, 1u) << "the RNR NAK named its PSN";
  EXPECT_EQ(write.naks, 1u) << "so did the sequence NAK";
  EXPECT_EQ(send.rnr_naks + send.naks, 0u);
  EXPECT_EQ(write.done_ns, 9'000u) << "NAKs do not complete it; the ACK does";
  const Message& read = r->messages[2];
  EXPECT_EQ(read.kind, MessageKind::kRead);
  EXPECT_EQ(read.bytes, 2048u);
  EXPECT_EQ(read.done_ns, 13'000u) << "done at its last response";
  EXPECT_EQ(r->messages[3].kind, MessageKind::kFetchAdd);
  EXPECT_EQ(r->messages[3].done_ns, 15'000u);
  EXPECT_EQ(r->messages[4].kind, MessageKind::kSendInvalidate);
  EXPECT_EQ(r->messages[4].immediate, 0x1234u);
  EXPECT_EQ(r->messages[4].done_ns, 0u) << "never acknowledged in the capture";
  EXPECT_EQ(r->messages[5].kind, MessageKind::kSendImm);
  EXPECT_EQ(r->messages[5].qp, 1u);
  EXPECT_EQ(r->messages[5].bytes, 300u);
  EXPECT_EQ(r->messages[6].qp, 2u);
  EXPECT_EQ(r->messages[6].bytes, 256u);

  const Anomalies& a = r->anomalies;
  EXPECT_EQ(a.retransmitted_packets, 1u);
  EXPECT_EQ(a.sequence_naks, 1u);
  EXPECT_EQ(a.rnr_naks, 1u);
  EXPECT_EQ(a.duplicate_responses, 1u);
  EXPECT_EQ(a.acks, 2u);
  EXPECT_EQ(a.cm_mads, 1u);
  EXPECT_EQ(a.psn_gaps, 1u);

  ASSERT_EQ(r->unmapped.size(), 4u);
  EXPECT_NE(r->unmapped[0].reason.find("without the FIRST"), std::string::npos) << r->unmapped[0].reason;
  EXPECT_EQ(r->unmapped[1].reason, "not RoCEv2");
  EXPECT_EQ(r->unmapped[2].reason, "malformed RoCEv2: bad_icrc");
  EXPECT_NE(r->unmapped[3].reason.find("malformed RoCEv2"), std::string::npos);
  EXPECT_EQ(r->roce_frames, r->mapped_roce_frames + 3) << "every RoCE frame is mapped or listed";
  std::filesystem::remove(path);
}

TEST(Reconstruct, PsnWrapKeepsOneMessage) {
  Capture c;
  c.request(op::kRcSendFirst, 0xfffffe, 1024);
  c.request(op::kRcSendMiddle, 0xffffff, 1024);
  c.request(op::kRcSendLast, 0x000000, 1000);
  c.response(op::kRcAcknowledge, 0x000000);
  c.request(op::kRcRdmaWriteOnly, 0x000001, 8, 8);
  c.response(op::kRcAcknowledge, 0x000001);
  const std::string path = c.write("reconstruct_wrap.pcap");
  std::string error;
  const auto r = reconstruct_capture(path, &error);
  ASSERT_TRUE(r) << error;
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].bytes, 3048u);
  EXPECT_NE(r->messages[0].done_ns, 0u);
  EXPECT_NE(r->messages[1].done_ns, 0u);
  EXPECT_EQ(r->anomalies.psn_gaps, 0u);
  EXPECT_TRUE(r->unmapped.empty());
  std::filesystem::remove(path);
}

TEST(Reconstruct, Ipv6AndVlanTaggedFramesAreRebuiltAlike) {
  Capture c;
  auto v6 = [](uint8_t last) {
    transport::Gid g{0xfe, 0x80};
    g[15] = last;
    return g;
  };
  for (uint32_t i = 0; i < 3; ++i) {
    RocePacket p = c.base(true);
    p.src_gid = v6(1);
    p.dst_gid = v6(2);
    p.vlan_tci = uint16_t(0x2000 | 100);  // PCP 1, VLAN 100
    p.opcode = op::kRcSendOnly;
    p.psn = 10 + i;
    const auto data = c.payload(500);
    p.payload = data;
    c.frames.push_back(transport::build_frame(p));
    RocePacket ack = c.base(false);
    ack.src_gid = v6(2);
    ack.dst_gid = v6(1);
    ack.vlan_tci = uint16_t(100);
    ack.opcode = op::kRcAcknowledge;
    ack.psn = 10 + i;
    c.frames.push_back(transport::build_frame(ack));
  }
  const std::string path = c.write("reconstruct_v6.pcap");
  std::string error;
  const auto r = reconstruct_capture(path, &error);
  ASSERT_TRUE(r) << error;
  ASSERT_EQ(r->hosts.size(), 2u);
  EXPECT_EQ(r->hosts[0].gid, v6(1));
  ASSERT_EQ(r->messages.size(), 3u);
  for (const Message& m : r->messages) {
    EXPECT_EQ(m.bytes, 500u);
    EXPECT_NE(m.done_ns, 0u);
  }
  EXPECT_EQ(r->mapped_roce_frames, 6u);
  std::filesystem::remove(path);
}

TEST(Reconstruct, TruncatedOrForeignFilesAreErrorsNamingThePlace) {
  Capture c;
  c.request(op::kRcSendOnly, 1, 2000);
  c.request(op::kRcSendOnly, 2, 2000);
  const std::string path = c.write("reconstruct_truncated.pcap");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 500);  // the second record is cut
  std::string error;
  EXPECT_FALSE(reconstruct_capture(path, &error));
  EXPECT_NE(error.find("frame 1"), std::string::npos) << error;
  {
    std::ofstream text(path, std::ios::trunc);
    text << "not a capture\n";
  }
  EXPECT_FALSE(reconstruct_capture(path, &error));
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_FALSE(reconstruct_capture(path + ".missing", &error));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace hcaemu::replay
