// The RDMA engine's shared parts: frame addressing and transmission, trace stamps, error CQEs and
// flushes, and the dispatch of received frames by QP service (requester: rdma/requester.cpp,
// responder: rdma/responder.cpp, datagrams: rdma/datagram.cpp).
#include "model/rdma/engine.h"

#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "model/queues/completion_queue.h"
#include "model/queues/doorbell_unit.h"
#include "model/function_context.h"
#include "model/rdma/internal.h"

namespace hcaemu::model {

using namespace rdma_internal;



// ---------------------------------------------------------------------------------------------
// Shared helpers

void RdmaEngine::stamp(uint32_t qpn, const SendMessage& message, RdmaStage stage, uint64_t time_ps) {
  if (stage_hook_)
    stage_hook_({.time_ps = time_ps, .qpn = qpn, .message = message.id, .opcode = message.wqe.opcode,
                 .bytes = uint32_t(message.length), .stage = stage});
}

RdmaEngine::RdmaEngine(FunctionContext& function) : f_(function) {
  f_.congestion_statistics = [this] {
    return FunctionContext::CongestionStatistics{.rp_cnp_ignored = counters_.rp_cnp_ignored,
                                                 .rp_cnp_handled = counters_.rp_cnp_handled,
                                                 .np_ecn_marked_roce_packets = counters_.np_ecn_marked_roce_packets,
                                                 .np_cnp_sent = counters_.np_cnp_sent};
  };
}

void RdmaEngine::qp_ready(uint32_t qpn) {
  const QueuePair* qp = f_.resources.qps.find(qpn);
  if (qp == nullptr) return;
  // A connection starts at line rate: a QPN used again (or a QP reconnected) keeps none of the
  // rate limiter or CNP pacing of the QP before it.
  if (qp->state == QpState::kRtr) congestion_.erase(qpn);
  if (!qp_hook_) return;
  const auto entries = [&](uint32_t cqn) -> uint32_t {
    const CompletionQueue* cq = f_.resources.cqs.find(cqn);
    return cq != nullptr ? cq->entries() : 0;
  };
  QpDescription d{.qpn = qpn,
                  .service = qp->st,
                  .sending = qp->state == QpState::kRts,
                  .send_cq = qp->cqn_snd,
                  .send_cq_entries = entries(qp->cqn_snd),
                  .recv_cq = qp->cqn_rcv,
                  .recv_cq_entries = entries(qp->cqn_rcv),
                  .sq_wqebbs = qp->no_sq ? 0 : 1u << qp->log_sq_size,
                  .rq_stride = qp->rq_type == rq_type::kRegular ? 16u << qp->log_rq_stride : 0,
                  .mtu = is_datagram(*qp) ? 0 : pmtu_of(*qp),
                  .ack_timeout = get(qp->context, qpc::kAckTimeout),
                  .retry_count = get(qp->context, qpc::kRetryCount),
                  .rnr_retry = get(qp->context, qpc::kRnrRetry),
                  .max_rd_atomic = 1u << get(qp->context, qpc::kLogSraMax),
                  .remote_qpn = is_datagram(*qp) ? 0 : get(qp->context, qpc::kRemoteQpn)};
  const uint32_t index = get(qp->context, qpc::kSrcAddrIndex);
  if (index < f_.vport.roce_addresses.size()) {
    d.address = f_.vport.roce_addresses[index].gid;
    d.mac = f_.vport.roce_addresses[index].mac;
  }
  qp_hook_(d);
}

void RdmaEngine::stamp_remote_delivery(const QueuePair& qp, const transport::Mac& requester_mac, uint32_t last_psn,
                                       uint8_t opcode, uint32_t bytes) {
  if (!stage_hook_ || !peer_lookup_) return;
  const int32_t requester = peer_lookup_(requester_mac);
  if (requester < 0) return;
  // The requester's trace id for the message: its QPN (our remote QPN) and the message's last PSN.
  const uint32_t remote_qpn = get(qp.context, qpc::kRemoteQpn);
  stage_hook_({.function = requester, .qpn = remote_qpn, .message = (uint64_t(remote_qpn) << 24) | last_psn,
               .opcode = opcode, .bytes = bytes, .stage = RdmaStage::kRemoteDelivery});
}

void RdmaEngine::send_atomic_ack(QueuePair& qp, uint32_t psn, uint64_t original) {
  RocePacket ack;
  if (!address(qp, ack)) return;
  ack.opcode = uint8_t(op::kRcAtomicAcknowledge | opcode_base(qp.st));
  ack.psn = psn;
  ack.aeth = {.syndrome = transport::aeth_ack(transport::kAethCreditsInvalid), .msn = qp.rc.resp.msn & transport::kPsnMask};
  ack.atomic_ack = original;
  send_frame(ack);
}

bool RdmaEngine::source_address(uint32_t index, RocePacket& packet) {
  if (index >= f_.vport.roce_addresses.size()) return false;
  const RoceAddress& source = f_.vport.roce_addresses[index];
  if (!source.in_use() || source.roce_version != 2) {
    ++counters_.rx_roce_v1_unsupported;
    return false;
  }
  packet.src_mac = source.mac;
  if (source.vlan_valid) packet.vlan_tci = source.vlan_id;
  packet.src_gid = source.gid;
  return true;
}

namespace {
transport::Mac path_mac(const QueuePair& qp) {
  const uint64_t rmac = (uint64_t(get(qp.context, qpc::kRmacHigh)) << 32) | get(qp.context, qpc::kRmacLow);
  transport::Mac mac{};
  for (int i = 0; i < 6; ++i) mac[i] = uint8_t(rmac >> (40 - 8 * i));
  return mac;
}
transport::Gid path_gid(const QueuePair& qp) {
  transport::Gid gid{};
  std::copy_n(qp.context.begin() + qpc::kRgid, gid.size(), gid.begin());
  return gid;
}
}  // namespace

const RoceAddress* RdmaEngine::loopback_source() const {
  for (const RoceAddress& a : f_.vport.roce_addresses)
    if (a.in_use() && a.roce_version == 2) return &a;
  return nullptr;
}

// A connected QP hears only its path's other end (IBA 9.6.1.5: the source address matches the
// QP's path). hcaemu also holds the source MAC to the path's: the switch's spoof check makes the
// MAC the one thing a tenant cannot forge, so another function cannot inject into a QP whose
// number and PSN it guessed (a UC responder takes any PSN that starts a message, IBA 9.7.5.1.1).
// A DCI hears the DCT it is connected to; a force-loopback QP the address it sends from.
bool RdmaEngine::from_path(const QueuePair& qp, const RocePacket& packet) const {
  if (qp.st == qp_st::kDci) {
    const DcInitiator& dci = qp.rc.dci;
    return dci.connected && packet.src_gid == dci.target.rgid && packet.src_mac == dci.target.rmac;
  }
  if (get(qp.context, qpc::kForceLoopback) != 0) {
    const RoceAddress* own = loopback_source();
    return own != nullptr && packet.src_gid == own->gid && packet.src_mac == own->mac;
  }
  return packet.src_gid == path_gid(qp) && packet.src_mac == path_mac(qp);
}

bool RdmaEngine::address(QueuePair& qp, RocePacket& packet) {
  if (qp.st == qp_st::kDci || qp.st == qp_st::kDct) return dc_address(qp, packet);
  if (get(qp.context, qpc::kForceLoopback) != 0) {
    const RoceAddress* own = loopback_source();
    if (own == nullptr) return false;
    packet.src_mac = packet.dst_mac = own->mac;
    packet.src_gid = packet.dst_gid = own->gid;
    if (own->vlan_valid) packet.vlan_tci = own->vlan_id;
  } else {
    if (!source_address(get(qp.context, qpc::kSrcAddrIndex), packet)) return false;
    packet.dst_gid = path_gid(qp);
    packet.dst_mac = path_mac(qp);
  }
  const uint32_t dscp = get(qp.context, qpc::kDscp);
  packet.traffic_class = uint8_t(dscp != 0 ? dscp << 2 : get(qp.context, qpc::kTclass));
  if (dcqcn_ != nullptr) packet.traffic_class = uint8_t((packet.traffic_class & ~3u) | 2u);  // ECT(0)
  const uint32_t hop_limit = get(qp.context, qpc::kHopLimit);
  packet.hop_limit = uint8_t(hop_limit != 0 ? hop_limit : 64);
  packet.flow_label = get(qp.context, qpc::kFlowLabel);
  const uint32_t sport = get(qp.context, qpc::kUdpSport);
  packet.udp_sport = uint16_t(sport != 0 ? sport : transport::kDefaultUdpSourcePort);
  packet.dest_qp = get(qp.context, qpc::kRemoteQpn);
  return true;
}

bool RdmaEngine::send_frame(RocePacket& packet, uint64_t inputs_ready_ps) {
  // Header-only packets (ACKs, READ requests; a CNP carries 16 reserved bytes) have a buffer of
  // their own and leave as a copy: the payload buffer, handed over with its frame, comes back as
  // one that held a long frame (the replay's pool), so the next payload read into it has nothing
  // to zero first.
  const bool header_only = packet.payload.empty();
  std::vector<uint8_t>& frame = header_only ? tx_header_frame_ : tx_frame_;
  transport::build_frame_into(packet, frame, checksums_.compute);
  // The pipeline builds a packet while the one before it is on the wire: it leaves when the wire
  // is free (this thread's now) or when its inputs are there plus the pipeline's time, the later.
  const uint64_t now = now_ps();
  const uint64_t depart = std::max(now, (inputs_ready_ps != 0 ? inputs_ready_ps : now) + timing_.per_packet_tx_ps);
  // Then serialisation at the port rate (preamble, SFD, FCS and inter-frame gap included): one
  // wait for both, nothing happens to the packet in between.
  if (port_ == nullptr) {
    pcie::consume_model_time(pcie::from_ps(depart - now));
    ++counters_.tx_no_port;
    return false;
  }
  const uint64_t sent = port_->serialised_ps(frame, frame.size() + TimingPreset::kWireOverheadBytes, depart, timing_.link_gbps);
  pcie::consume_model_time(pcie::from_ps(sent - now));
  ++counters_.tx_packets;
  counters_.tx_bytes += frame.size();
  if (header_only)
    port_->transmit(frame);
  else
    port_->transmit_buffer(frame);
  return true;
}

RdmaTiming RdmaTiming::from_preset(const TimingPreset& preset) {
  const auto ps = [&](uint32_t cycles) { return uint64_t(preset.cycles_ns(cycles) * 1000.0); };
  return {.per_packet_tx_ps = ps(preset.per_packet_tx_cycles),
          .per_packet_rx_ps = ps(preset.per_packet_rx_cycles),
          .wqe_parse_ps = ps(preset.doorbell_cycles + preset.wqe_fetch_cycles),
          .link_gbps = preset.link_gbps};
}

void RdmaEngine::error_cqe(uint32_t cqn, uint32_t qpn, uint8_t opcode, uint16_t wqe_index, uint8_t syn,
                           bool responder, uint32_t user_index) {
  ++counters_.error_cqes;
  count_error_cqe(qpn, syn, responder);
  write_cqe(
      f_, cqn,
      [&](std::span<uint8_t> cqe) {
        cqe[cqe::kErrSyndrome] = syn;
        cqe[cqe::kVendorErrSyndrome] = syn == syndrome::kWrFlushed ? 0xf9 : 0x00;
        store_be32(&cqe[cqe::kSopDropQpn], (uint32_t(opcode) << 24) | (qpn & 0xffffff));
        // libmlx5 finds the QP (or XRC SRQ) whose WQE this was by its user index.
        store_be32(&cqe[cqe::kSrqnUserIndex], user_index & 0xffffff);
        store_be16(&cqe[cqe::kWqeCounter], wqe_index);
        cqe[cqe::kOpOwn] = uint8_t((responder ? cqe::kResponderError : cqe::kRequesterError) << 4);
      },
      true);
}

void RdmaEngine::count(const QueuePair& qp, uint32_t offset) {
  count_into(f_.q_counters, get(qp.context, qpc::kCounterSetId), offset);
}

void RdmaEngine::count_error_cqe(uint32_t qpn, uint8_t syn, bool responder) {
  const QueuePair* qp = f_.resources.qps.find(qpn);
  if (qp == nullptr) return;
  namespace qc = q_counter;
  if (syn == syndrome::kWrFlushed) {
    count(*qp, responder ? qc::kRespCqeFlushError : qc::kReqCqeFlushError);
    return;
  }
  count(*qp, responder ? qc::kRespCqeError : qc::kReqCqeError);
  // The cause, where the set has a counter for it (remote errors at the responder are counted
  // when it answers them: responder_error).
  uint32_t cause = 0;
  switch (syn) {
    case syndrome::kLocalLength: cause = responder ? qc::kRespLocalLengthError : qc::kReqLocalLengthError; break;
    case syndrome::kLocalQpOperation: cause = responder ? qc::kRespLocalQpError : qc::kLocalOperationError; break;
    case syndrome::kLocalProtection: cause = responder ? qc::kRespLocalProtection : qc::kReqLocalProtection; break;
    case syndrome::kBadResponse: cause = responder ? 0 : qc::kReqBadResponse; break;
    case syndrome::kRemoteInvalidRequest: cause = responder ? 0 : qc::kReqRemoteInvalidRequest; break;
    case syndrome::kRemoteAccess: cause = responder ? 0 : qc::kReqRemoteAccessErrors; break;
    case syndrome::kRemoteOperation: cause = responder ? 0 : qc::kReqRemoteOperationErrors; break;
    case syndrome::kRetryExceeded: cause = qc::kReqTransportRetriesExceeded; break;
    case syndrome::kRnrRetryExceeded: cause = qc::kReqRnrRetriesExceeded; break;
    default: break;
  }
  if (cause != 0) count(*qp, cause);
}

RdmaEngine::ReceiveTarget RdmaEngine::receive_target(const QueuePair& qp) {
  if (qp.st == qp_st::kXrc) {
    const SharedReceiveQueue* srq = f_.resources.srqs.find(qp.rc.resp.xrc_srqn);
    if (srq == nullptr) return {qp.cqn_rcv, qp.rc.resp.xrc_srqn, user_index_of(qp)};
    return {srq->cqn, qp.rc.resp.xrc_srqn, xrc_srq_user_index(*srq, qp.rc.resp.xrc_srqn)};
  }
  return {qp.cqn_rcv, qp.rq_type == rq_type::kSrq ? qp.srqn : 0, user_index_of(qp)};
}

uint32_t RdmaEngine::responder_pd(const QueuePair& qp) {
  if (qp.st != qp_st::kXrc) return qp.pd;
  const SharedReceiveQueue* srq = f_.resources.srqs.find(qp.rc.resp.xrc_srqn);
  return srq != nullptr ? srq->pd : 0;  // no PD 0 exists: every check fails
}

SharedReceiveQueue* RdmaEngine::xrc_srq_for(const QueuePair& qp, uint32_t xrc_srqn) {
  SharedReceiveQueue* srq = f_.resources.srqs.find(xrc_srqn);
  if (srq == nullptr || srq->kind != SrqKind::kXrcSrq || srq->xrcd != qp.xrcd) return nullptr;
  return srq;
}

// ---------------------------------------------------------------------------------------------
// Errors

void RdmaEngine::requester_error(uint32_t qpn, QueuePair& qp, const SendWqe& wqe, uint8_t syn) {
  if (dci_stream_error(qpn, qp, wqe, syn)) return;
  // `wqe` may be an element of `outstanding`: keep what the CQE needs before it is erased.
  const uint8_t opcode = wqe.opcode;
  const uint16_t index = wqe.wqe_index;
  log().debug("function {}: QP {:#x}: requester error {:#x} on WQE {:#x} (opcode {:#x})", f_.identity.vhca_id, qpn, syn,
              index, opcode);
  // Work acknowledged before the failing WQE has completed normally (retire). Completions stay in
  // SQ order: what was posted before it and is not acknowledged yet is flushed ahead of its error
  // CQE, what follows it is flushed by enter_error.
  RcRequester& req = qp.rc.req;
  auto failing = std::find_if(req.outstanding.begin(), req.outstanding.end(),
                              [&](const SendMessage& m) { return m.wqe.wqe_index == index; });
  for (auto it = req.outstanding.begin(); it != failing; ++it) {
    ++counters_.flushed_wqes;
    error_cqe(qp.cqn_snd, qpn, it->wqe.opcode, it->wqe.wqe_index, syndrome::kWrFlushed, false, user_index_of(qp));
  }
  req.outstanding.erase(req.outstanding.begin(), failing == req.outstanding.end() ? failing : std::next(failing));
  error_cqe(qp.cqn_snd, qpn, opcode, index, syn, false, user_index_of(qp));
  if (reliable_connected(qp.st))
    enter_error(qpn, qp);
  else
    enter_send_queue_error(qpn, qp);
}

void RdmaEngine::responder_error(uint32_t qpn, QueuePair& qp, uint8_t syn, bool consumed_wqe) {
  RcResponder& resp = qp.rc.resp;
  if (syn == syndrome::kRemoteInvalidRequest) count(qp, q_counter::kRespRemoteInvalidRequest);
  if (syn == syndrome::kRemoteAccess) count(qp, q_counter::kRespRemoteAccessErrors);
  if (consumed_wqe && resp.have_wqe) {
    const ReceiveTarget target = receive_target(qp);
    error_cqe(target.cqn, qpn, 0, resp.wqe_index, syn, true, target.user_index);
  }
  resp.have_wqe = false;
  resp.incoming = RcResponder::Incoming::kNone;
  if (qp.st == qp_st::kDct) {
    qp.rc.dct.serving_failed = true;  // that connection closes; the DCT serves on (rdma/dc.cpp)
    return;
  }
  enter_error(qpn, qp);
}

void RdmaEngine::enter_error(uint32_t qpn, QueuePair& qp) {
  if (qp.state == QpState::kError) return;
  move_to(qp, QpState::kError);
  flush(qpn, qp);
}

void RdmaEngine::enter_send_queue_error(uint32_t qpn, QueuePair& qp) {
  if (send_queue_stopped(qp)) return;
  move_to(qp, QpState::kSqError);
  flush_send_queue(qpn, qp);
}

void RdmaEngine::move_to(QueuePair& qp, QpState state) {
  qp.state = state;
  set(qp.context, qpc::kState, uint32_t(state));
}

bool RdmaEngine::send_queue_stopped(const QueuePair& qp) {
  return qp.state == QpState::kError || qp.state == QpState::kSqError;
}

void RdmaEngine::qp_moved_to_error(uint32_t qpn) {
  QueuePair* qp = f_.resources.qps.find(qpn);
  if (qp == nullptr || qp->state != QpState::kError ||
      (!reliable_connected(qp->st) && qp->st != qp_st::kUc && !is_datagram(*qp)))
    return;
  // A receive WQE the responder was filling completes as flushed too (IBA 10.3.1: every WQE
  // outstanding when the QP enters ERR).
  RcResponder& resp = qp->rc.resp;
  if (resp.have_wqe) {
    ++counters_.flushed_wqes;
    const ReceiveTarget target = receive_target(*qp);
    error_cqe(target.cqn, qpn, 0, resp.wqe_index, syndrome::kWrFlushed, true, target.user_index);
  }
  resp.have_wqe = false;
  resp.incoming = RcResponder::Incoming::kNone;
  flush(qpn, *qp);
}

void RdmaEngine::flush_send_queue(uint32_t qpn, QueuePair& qp) {
  RcRequester& req = qp.rc.req;
  req.timer_armed = false;
  req.rnr_wait = false;
  // Everything still outstanding or posted completes with "flushed" (one CQE per WQE).
  for (const SendMessage& message : req.outstanding) {
    ++counters_.flushed_wqes;
    error_cqe(qp.cqn_snd, qpn, message.wqe.opcode, message.wqe.wqe_index, syndrome::kWrFlushed, false, user_index_of(qp));
  }
  req.outstanding.clear();
  process_sq(qpn, qp);  // WQEs posted but not fetched yet
}

void RdmaEngine::flush(uint32_t qpn, QueuePair& qp) {
  flush_send_queue(qpn, qp);
  if (qp.rq_type == rq_type::kRegular && qp.rq_bytes() != 0) {
    uint32_t producer = 0;
    if (read_doorbell_record(f_.memory, qp.dbr_addr + kRqDbrOffset, producer)) {
      while (((producer - qp.rq_consumer) & kCounterMask16) != 0 &&
             ((producer - qp.rq_consumer) & kCounterMask16) <= (1u << qp.log_rq_size)) {
        ++counters_.flushed_wqes;
        error_cqe(qp.cqn_rcv, qpn, 0, uint16_t(qp.rq_consumer), syndrome::kWrFlushed, true, user_index_of(qp));
        qp.rq_consumer = (qp.rq_consumer + 1) & kCounterMask16;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Receive

bool RdmaEngine::receive(std::span<const uint8_t> frame, uint64_t arrival_ps) {
  if (!f_.vport.roce_en || !transport::is_roce_v2(frame)) return false;
  rx_arrival_ps_ = arrival_ps != 0 ? arrival_ps : now_ps();
  ++counters_.rx_packets;
  counters_.rx_bytes += frame.size();
  const transport::ParseResult parsed = transport::parse_frame(frame, checksums_.verify);
  if (parsed.error != transport::ParseError::kNone) {
    if (parsed.error == transport::ParseError::kBadIcrc)
      ++counters_.rx_bad_icrc;
    else
      ++counters_.rx_parse_errors;
    return true;
  }
  const RocePacket& packet = parsed.packet;
  // Steered by destination, as a ConnectX steers RoCE: a frame is this function's only when it is
  // addressed to a GID of its table and not to a group MAC, or to a multicast group one of its QPs
  // attached. Otherwise a broadcast RoCE frame would reach QP1 and the QPs of every function.
  if ((packet.dst_mac[0] & 0x01) != 0 || is_multicast_gid(packet.dst_gid)) {
    receive_multicast(packet, frame);
    return true;
  }
  const bool gid_is_mine = std::any_of(f_.vport.roce_addresses.begin(), f_.vport.roce_addresses.end(),
                                       [&](const RoceAddress& a) { return a.in_use() && a.gid == packet.dst_gid; });
  if (!gid_is_mine) {
    ++counters_.rx_not_addressed;
    return true;
  }
  const bool to_gsi = packet.dest_qp == kGsiQpn;
  uint32_t qpn = packet.dest_qp;
  QueuePair* qp = to_gsi ? gsi_qp(qpn) : f_.resources.qps.find(qpn);
  if (qp == nullptr ||
      (!reliable_connected(qp->st) && qp->st != qp_st::kUc && qp->st != qp_st::kDct && !is_datagram(*qp)) ||
      (qp->st == qp_st::kQp1 && !to_gsi)) {
    ++counters_.rx_unknown_qp;
    return true;
  }
  if (packet.opcode == transport::opcode::kCnp) {  // DCQCN: slow down what this QP sends
    receive_cnp(qpn);
    return true;
  }
  if (dcqcn_ != nullptr && (packet.traffic_class & 3) == 3) notify_congestion(qpn, *qp);  // Congestion Experienced
  // In SQE only the send queue has stopped (UC and UD/QP1 QPs); in SQD it holds its WQEs.
  const bool receiving = qp->state == QpState::kRtr || qp->state == QpState::kRts ||
                         qp->state == QpState::kSqError || qp->state == QpState::kSqDrained;
  if (is_datagram(*qp)) {
    if (!receiving) {
      ++counters_.rx_qp_not_ready;
      return true;
    }
    receive_datagram(qpn, *qp, packet, frame);
    return true;
  }
  receive_connected(qpn, *qp, packet, receiving);
  return true;
}

void RdmaEngine::receive_connected(uint32_t qpn, QueuePair& qp, const RocePacket& packet, bool receiving) {
  // The opcode's top bits name the service (IBA table 38): RC 0x00-0x1f, UC 0x20-0x3f, XRC 0xa0-0xbf,
  // DC 0xc0-0xdf (hcaemu's encoding).
  if ((packet.opcode & 0xe0) != opcode_base(qp.st)) {
    ++counters_.rx_wrong_service;
    return;
  }
  const bool response = transport::carries(packet.opcode, transport::hdr::kResponse);
  if (response ? qp.state != QpState::kRts && qp.state != QpState::kSqDrained : !receiving) {
    ++counters_.rx_qp_not_ready;
    return;
  }
  // A DCT takes requests from any DCI that has its access key (rdma/dc.cpp); it sends none.
  if (qp.st == qp_st::kDct) {
    if (response)
      ++counters_.rx_wrong_service;
    else
      receive_dc_request(qpn, qp, packet);
    return;
  }
  if (!from_path(qp, packet)) {
    ++counters_.rx_wrong_source;
    return;
  }
  if (response)
    handle_response(packet.dest_qp, qp, packet);
  else
    handle_request(packet.dest_qp, qp, packet);
}

}  // namespace hcaemu::model
