// DC, the Dynamically Connected transport of ConnectX (mlx5dv DCI and DCT): RC's protocol between a
// DCI and whichever DCT its WQE names. The DCI sends RC's requests with DC opcodes and a DCETH
// (transport/ib_opcodes.h: hcaemu's encoding, the real one is not public); a DCT keeps a responder
// state per DCI connected to it and answers like an RC responder, through its SRQ and CQ.
#include <algorithm>

#include "common/log.h"
#include "model/function_context.h"
#include "model/rdma/engine.h"
#include "model/rdma/internal.h"

namespace hcaemu::model {

using namespace rdma_internal;

namespace {
bool same_target(const UdAddress& a, const UdAddress& b) {
  return a.remote_qpn == b.remote_qpn && a.dc_key == b.dc_key && a.rgid == b.rgid && a.rmac == b.rmac &&
         a.sgid_index == b.sgid_index;
}
}  // namespace

bool RdmaEngine::dc_address(QueuePair& qp, RocePacket& packet) {
  if (qp.st == qp_st::kDci) {
    const DcInitiator& dci = qp.rc.dci;
    if (!dci.connected || !datagram_address(dci.target, packet)) return false;
    packet.dceth = {.access_key = dci.target.dc_key, .connect = false, .initiator = dci.qpn};
    return true;
  }
  // A DCT answers the DCI whose packet it is serving, from the address its context names.
  const DcConnection* peer = qp.rc.dct.serving;
  if (peer == nullptr || !source_address(get(qp.context, qpc::kSrcAddrIndex), packet)) return false;
  packet.dst_gid = peer->gid;
  packet.dst_mac = peer->mac;
  packet.traffic_class = uint8_t(get(qp.context, qpc::kTclass));
  if (dcqcn_ != nullptr) packet.traffic_class = uint8_t((packet.traffic_class & ~3u) | 2u);  // ECT(0)
  const uint32_t hop_limit = get(qp.context, qpc::kHopLimit);
  packet.hop_limit = uint8_t(hop_limit != 0 ? hop_limit : 64);
  packet.flow_label = get(qp.context, qpc::kFlowLabel);
  packet.dest_qp = peer->initiator;
  return true;
}

bool RdmaEngine::dci_ready_for(uint32_t qpn, QueuePair& qp, const SendWqe& wqe) {
  DcInitiator& dci = qp.rc.dci;
  if (!wqe.ud) return false;
  if (dci.stream_errored(wqe.stream)) {  // a stream in error flushes what is posted on it
    ++counters_.flushed_wqes;
    qp.sq_consumer = (qp.sq_consumer + wqe.wqebbs()) & kCounterMask16;
    error_cqe(qp.cqn_snd, qpn, wqe.opcode, wqe.wqe_index, syndrome::kWrFlushed, false, user_index_of(qp));
    return false;
  }
  if (dci.connected && same_target(dci.target, *wqe.ud)) return true;
  // Another DCT: the connection closes once everything sent on it is acknowledged (the completer
  // resumes the SQ then, as it does for a fence).
  if (!qp.rc.req.outstanding.empty()) {
    qp.rc.req.fence_blocked = true;
    return false;
  }
  dci.connected = true;
  dci.qpn = qpn;
  dci.target = *wqe.ud;
  dci.start_psn = qp.rc.req.next_psn;
  ++counters_.dc_connections_opened;
  return true;
}

bool RdmaEngine::dci_stream_error(uint32_t qpn, QueuePair& qp, const SendWqe& wqe, uint8_t syn) {
  const uint32_t log_errored = get(qp.context, qpc::kLogNumDciErroredStreams);
  if (qp.st != qp_st::kDci || (get(qp.context, qpc::kLogNumDciStreamChannels) == 0 && log_errored == 0)) return false;
  // Streams contain errors of WQEs that fail before they leave (their keys, their form); an error
  // of the transport (retries, a NAK) still ends the DCI.
  const auto& outstanding = qp.rc.req.outstanding;
  if (std::any_of(outstanding.begin(), outstanding.end(), [&](const SendMessage& m) { return m.wqe.wqe_index == wqe.wqe_index; }))
    return false;
  DcInitiator& dci = qp.rc.dci;
  error_cqe(qp.cqn_snd, qpn, wqe.opcode, wqe.wqe_index, syn, false, user_index_of(qp));
  if (!dci.stream_errored(wqe.stream)) dci.errored_streams.push_back(wqe.stream);
  ++counters_.dci_stream_errors;
  if (dci.errored_streams.size() >= (size_t(1) << log_errored)) enter_error(qpn, qp);
  return true;
}

void RdmaEngine::dc_request_header(const QueuePair& qp, RocePacket& packet) {
  // The connection's first PSN opens it (again, when resent): the DCT starts its state there.
  packet.dceth.connect = packet.psn == qp.rc.dci.start_psn;
}

DcConnection* RdmaEngine::dc_connection(uint32_t dctn, QueuePair& dct, const RocePacket& packet) {
  DcTarget& target = dct.rc.dct;
  const uint32_t initiator = packet.dceth.initiator;
  auto it = std::find_if(target.connections.begin(), target.connections.end(), [&](const DcConnection& c) {
    // The MAC too: the switch's spoof check makes it the one thing another tenant cannot forge.
    return c.initiator == initiator && c.gid == packet.src_gid && c.mac == packet.src_mac;
  });
  // A connect packet with another first PSN is a new connection of that DCI (it went elsewhere in
  // between); the same one again is a resend and keeps the state (duplicates are answered from it).
  const bool opens = packet.dceth.connect && (it == target.connections.end() || it->start_psn != packet.psn);
  if (!opens) return it != target.connections.end() ? &*it : nullptr;
  if (it == target.connections.end()) {
    if (target.connections.size() >= DcTarget::kMaxConnections) {
      // The idle connection unused longest makes room; none idle: the DCI retries later.
      auto idle = target.connections.end();
      for (auto c = target.connections.begin(); c != target.connections.end(); ++c) {
        if (c->resp.incoming == RcResponder::Incoming::kNone && !c->resp.have_wqe &&
            (idle == target.connections.end() || c->last_used < idle->last_used))
          idle = c;
      }
      if (idle == target.connections.end()) return nullptr;
      target.connections.erase(idle);
    }
    it = target.connections.insert(target.connections.end(), DcConnection{});
  } else if (it->resp.have_wqe) {
    // The DCI opened a new connection with a SEND of the old one half placed (it was reset, or
    // gave up): that receive WQE completes flushed, as the connection it belonged to is gone.
    ++counters_.flushed_wqes;
    const ReceiveTarget target = receive_target(dct);
    error_cqe(target.cqn, dctn, 0, it->resp.wqe_index, syndrome::kWrFlushed, true, target.user_index);
  }
  *it = DcConnection{};
  it->gid = packet.src_gid;
  it->mac = packet.src_mac;
  it->initiator = initiator;
  it->start_psn = packet.psn;
  it->resp.epsn = packet.psn;
  ++counters_.dc_connections_accepted;
  return &*it;
}

void RdmaEngine::receive_dc_request(uint32_t dctn, QueuePair& dct, const RocePacket& packet) {
  if (packet.dceth.access_key != dct.rc.dct.access_key) {
    ++counters_.dc_key_violations;
    return;
  }
  DcConnection* connection = dc_connection(dctn, dct, packet);
  if (connection == nullptr) {
    ++counters_.dc_not_connected;
    return;
  }
  connection->last_used = ++dct.rc.dct.packets;
  // The connection's responder state runs as the QP's for this packet.
  std::swap(dct.rc.resp, connection->resp);
  dct.rc.dct.serving = connection;
  dct.rc.dct.serving_failed = false;
  handle_request(dctn, dct, packet);
  dct.rc.dct.serving = nullptr;
  std::swap(dct.rc.resp, connection->resp);
  // A DCT does not go to ERR for one initiator's error (its NAK told the DCI, whose QP goes to
  // ERR): that connection closes, the DCI's next one opens afresh.
  if (dct.rc.dct.serving_failed) {
    std::erase_if(dct.rc.dct.connections, [&](const DcConnection& c) { return &c == connection; });
    ++counters_.dc_connections_failed;
  }
}

}  // namespace hcaemu::model
