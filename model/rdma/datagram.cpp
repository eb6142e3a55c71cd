// The datagram services of the RDMA engine: UD, and QP1 (the GSI QP the kernel's MAD layer and
// rdma_cm use). A message is one packet (BTH + DETH [+ ImmDt]) addressed by the address vector in
// its WQE; nothing is acknowledged, so a send completes once it is on the wire and a datagram with
// no receive posted, a wrong Q_Key or no such QP is dropped and counted (IBA 9.8.2, 10.2.4.2).
// The receiver finds the 40-byte GRH in front of the payload: the IPv6 header as it arrived, or 20
// zero bytes and the IPv4 header (how mlx5 and Soft-RoCE place a RoCE v2 datagram's L3 header).
#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "model/queues/completion_queue.h"
#include "model/function_context.h"
#include "model/objects/memory_protection.h"
#include "model/rdma/engine.h"
#include "model/rdma/internal.h"
#include "model/rdma/payload_reader.h"
#include "transport/ethernet.h"
#include "transport/ib_opcodes.h"

namespace hcaemu::model {

using namespace rdma_internal;

namespace {

constexpr uint32_t kGrhBytes = 40;
constexpr uint32_t kQkeyUseQp = 0x80000000u;  // a WR Q_Key with its top bit set means "the QP's own"
// CQE fields only datagram completions carry (struct mlx5_cqe64).
// flags_rqpn: [29:28] GRH present, [25:24] on RoCE the L3 header (0 RoCE v1 GRH, 1 IPv6, 2 IPv4:
// mlx5_ib turns it into wc->network_hdr_type, which tells the MAD layer how to read the GRH
// buffer), [23:0] source QP.
constexpr uint32_t kCqeFlagsRqpn = 0x18;
constexpr uint32_t kCqeGrhPresent = 1u << 28;
constexpr uint32_t kCqeRoceIpv6 = 1u << 24, kCqeRoceIpv4 = 2u << 24;
constexpr uint32_t kIpv4HeaderBytes = 20;  // transport::build_frame sends IHL 5 and parse_frame insists on it

// The GRH the receiver sees: the frame's IP header, an IPv4 one right-aligned in 40 bytes.
bool grh_of(std::span<const uint8_t> frame, std::array<uint8_t, kGrhBytes>& grh, bool& ipv6) {
  const transport::ethernet::Parsed p = transport::ethernet::parse(frame);
  if (p.ip_version == 0) return false;
  ipv6 = p.ip_version == 6;
  const size_t n = ipv6 ? kGrhBytes : kIpv4HeaderBytes;
  grh.fill(0);
  std::copy_n(&frame[p.l3_offset], n, grh.begin() + (kGrhBytes - n));
  return true;
}

}  // namespace

bool RdmaEngine::is_datagram(const QueuePair& qp) { return qp.st == qp_st::kUd || qp.st == qp_st::kQp1; }

QueuePair* RdmaEngine::gsi_qp(uint32_t& qpn) {
  for (auto& [number, qp] : f_.resources.qps) {
    if (qp.st != qp_st::kQp1) continue;
    qpn = number;
    return &qp;
  }
  return nullptr;
}

bool RdmaEngine::datagram_address(const UdAddress& av, RocePacket& packet) {
  if (!source_address(av.sgid_index, packet)) return false;
  packet.dst_mac = av.rmac;
  packet.dst_gid = av.rgid;
  packet.traffic_class = av.tclass;
  if (dcqcn_ != nullptr) packet.traffic_class = uint8_t((packet.traffic_class & ~3u) | 2u);  // ECT(0)
  packet.hop_limit = av.hop_limit != 0 ? av.hop_limit : 64;
  packet.flow_label = av.flow_label;
  // On RoCE v2 libmlx5 and mlx5_ib put the UDP source port they chose for the AH in rlid.
  packet.udp_sport = av.rlid != 0 ? av.rlid : transport::kDefaultUdpSourcePort;
  packet.dest_qp = av.remote_qpn;
  return true;
}

void RdmaEngine::transmit_datagram(uint32_t qpn, QueuePair& qp, SendMessage& message, uint64_t issue_ps) {
  const SendWqe& wqe = message.wqe;
  RocePacket packet;
  if (!wqe.ud || !datagram_address(*wqe.ud, packet)) {
    ++counters_.bad_wqes;
    requester_error(qpn, qp, wqe, syndrome::kLocalQpOperation);
    return;
  }
  std::vector<uint8_t> payload;
  uint64_t ready_ps = 0;
  if (wqe.has_inline) {
    packet.payload = wqe.inline_data;
  } else if (message.length != 0) {
    PayloadReader reader;
    if (reader.open(f_.resources, f_.memory, wqe, qp.pd, issue_ps) != ProtectionError::kNone) {  // checked at post
      ++counters_.local_protection_errors;
      requester_error(qpn, qp, wqe, syndrome::kLocalProtection);
      return;
    }
    payload.resize(message.length);
    if (!reader.read(0, payload)) {
      ++counters_.dma_faults;
      requester_error(qpn, qp, wqe, syndrome::kLocalProtection);
      return;
    }
    ready_ps = reader.ready_ps();
    stamp(qpn, message, RdmaStage::kPayloadDma, ready_ps);
    packet.payload = payload;
  }
  packet.opcode = wqe.opcode == wqe_op::kSendImm ? transport::opcode::kUdSendOnlyImm : transport::opcode::kUdSendOnly;
  packet.psn = message.first_psn;
  packet.solicited = wqe.solicited;
  packet.immediate = wqe.imm;
  packet.deth.qkey = (wqe.ud->qkey & kQkeyUseQp) != 0 ? get(qp.context, qpc::kQkey) : wqe.ud->qkey;
  packet.deth.src_qp = qp.st == qp_st::kQp1 ? kGsiQpn : qpn;  // the GSI QP is QP1 on the wire
  ++counters_.datagrams_sent;
  send_frame(packet, ready_ps);
  prefetch_floor_ps_ = now_ps();
  stamp(qpn, message, RdmaStage::kWireFirstPacket);
}

void RdmaEngine::receive_multicast(const RocePacket& packet, std::span<const uint8_t> frame) {
  // Only UD SENDs to the multicast QPN, with a group MAC and a multicast GID both (IBA 10.5.2).
  if (packet.dest_qp != kMulticastQpn || (packet.dst_mac[0] & 0x01) == 0 || !is_multicast_gid(packet.dst_gid)) {
    ++counters_.rx_not_addressed;
    return;
  }
  // A copy: a QP that takes the datagram may not change the group, but the list must not move under us.
  const std::span<const uint32_t> attached = f_.resources.multicast.members(packet.dst_gid);
  const std::vector<uint32_t> members(attached.begin(), attached.end());
  if (members.empty()) {
    ++counters_.multicast_no_member;
    return;
  }
  ++counters_.multicast_received;
  // Sent by this function (its source GID is one of the function's): a QP created with
  // block_lb_mc does not take its own function's datagrams.
  const bool own = std::any_of(f_.vport.roce_addresses.begin(), f_.vport.roce_addresses.end(),
                               [&](const RoceAddress& a) { return a.in_use() && a.gid == packet.src_gid; });
  for (uint32_t qpn : members) {
    QueuePair* qp = f_.resources.qps.find(qpn);
    if (qp == nullptr || !is_datagram(*qp)) continue;
    if (qp->state != QpState::kRtr && qp->state != QpState::kRts && qp->state != QpState::kSqError) {
      ++counters_.rx_qp_not_ready;
      continue;
    }
    if (own && get(qp->context, qpc::kBlockLbMc) != 0) {
      ++counters_.multicast_loopback_blocked;
      continue;
    }
    receive_datagram(qpn, *qp, packet, frame);
  }
}

void RdmaEngine::receive_datagram(uint32_t qpn, QueuePair& qp, const RocePacket& packet,
                                  std::span<const uint8_t> frame) {
  if (packet.opcode != transport::opcode::kUdSendOnly && packet.opcode != transport::opcode::kUdSendOnlyImm) {
    ++counters_.rx_wrong_service;
    return;
  }
  if (packet.deth.qkey != get(qp.context, qpc::kQkey)) {
    ++counters_.rx_bad_qkey;
    return;
  }
  std::array<uint8_t, kGrhBytes> grh{};
  bool ipv6 = false;
  if (!grh_of(frame, grh, ipv6)) {
    ++counters_.rx_parse_errors;
    return;
  }
  RcResponder& resp = qp.rc.resp;
  if (!take_receive_wqe(qp)) {
    ++counters_.datagrams_dropped_no_receive;
    count(qp, q_counter::kOutOfBuffer);
    return;
  }
  resp.have_wqe = false;  // a datagram completes its WQE now, whatever happens
  const uint16_t index = resp.wqe_index;
  const ReceiveTarget target = receive_target(qp);
  std::vector<DmaChunk> chunks;
  uint64_t total = 0;
  if (translate_sges(f_.resources, resp.sges, qp.pd, access::kLocalWrite, chunks, total) != ProtectionError::kNone ||
      any_signature_key(f_.resources, resp.sges)) {  // signature keys are for connected QPs
    ++counters_.local_protection_errors;
    error_cqe(target.cqn, qpn, 0, index, syndrome::kLocalProtection, true, target.user_index);
    enter_error(qpn, qp);  // a bad receive WQE is the local side's fault: the QP stops (IBA 10.7.3.1)
    return;
  }
  const uint64_t bytes = kGrhBytes + packet.payload.size();
  if (bytes > total) {
    // Too long for the buffer: this WQE completes in error; the QP stays up, as another sender's
    // datagram must not take it down (IBA class D, as Soft-RoCE does).
    ++counters_.datagrams_too_long;
    error_cqe(target.cqn, qpn, 0, index, syndrome::kLocalLength, true, target.user_index);
    return;
  }
  if (f_.memory == nullptr || !write_chunks(*f_.memory, chunks, 0, grh) ||
      (!packet.payload.empty() && !write_chunks(*f_.memory, chunks, kGrhBytes, packet.payload))) {
    ++counters_.dma_faults;
    error_cqe(target.cqn, qpn, 0, index, syndrome::kLocalProtection, true, target.user_index);
    enter_error(qpn, qp);
    return;
  }
  ++counters_.datagrams_received;
  ++counters_.responder_cqes;
  const bool with_imm = packet.opcode == transport::opcode::kUdSendOnlyImm;
  write_cqe(
      f_, target.cqn,
      [&](std::span<uint8_t> cqe) {
        store_be32(&cqe[kCqeFlagsRqpn],
                   kCqeGrhPresent | (ipv6 ? kCqeRoceIpv6 : kCqeRoceIpv4) | (packet.deth.src_qp & 0xffffff));
        if (with_imm) store_be32(&cqe[cqe::kImmediate], packet.immediate);
        store_be32(&cqe[cqe::kByteCount], uint32_t(bytes));
        store_be32(&cqe[cqe::kSrqnUserIndex], target.user_index & 0xffffff);
        store_be32(&cqe[cqe::kSopDropQpn], qpn & 0xffffff);
        store_be16(&cqe[cqe::kWqeCounter], index);
        cqe[cqe::kOpOwn] = uint8_t((with_imm ? cqe::kRespSendImm : cqe::kRespSend) << 4);
      },
      packet.solicited);
}

}  // namespace hcaemu::model
