// DCQCN in the RDMA engine: ECN-marked packets answered with CNPs (the notification point) and
// CNPs turned into a rate limit on the sending QP (the reaction point), paced through the SQ
// scheduler. The algorithm itself is model/congestion/dcqcn.*. The same pacing serves the rate
// limits of a QP's queue group and its ancestors (objects/scheduling_elements.h).
#include "model/rdma/engine.h"
#include "model/function_context.h"
#include "model/rdma/internal.h"

#include <algorithm>
#include <array>

namespace hcaemu::model {

using namespace rdma_internal;

RdmaEngine::Congestion& RdmaEngine::congestion(uint32_t qpn) {
  auto it = congestion_.find(qpn);
  if (it == congestion_.end()) it = congestion_.emplace(qpn, Congestion(*dcqcn_, timing_.link_gbps)).first;
  return it->second;
}

void RdmaEngine::notify_congestion(uint32_t qpn, QueuePair& qp) {
  ++counters_.np_ecn_marked_roce_packets;
  // A connected QP knows its peer; a datagram's sender is left alone (its CNP would need the
  // packet's own addresses).
  if (is_datagram(qp) || !congestion(qpn).notification.should_notify(*dcqcn_, now_ps())) return;
  RocePacket cnp;
  if (!address(qp, cnp)) return;
  cnp.opcode = transport::opcode::kCnp;
  cnp.psn = 0;
  cnp.becn = true;
  cnp.traffic_class = uint8_t(dcqcn_->cnp_dscp << 2 | 2);  // ECT(0), as a ConnectX-4 Lx sends it (TOS 0xc2)
  static constexpr std::array<uint8_t, transport::opcode::kCnpPayloadSize> kReserved{};
  cnp.payload = kReserved;
  if (send_frame(cnp)) ++counters_.np_cnp_sent;
}

void RdmaEngine::receive_cnp(uint32_t qpn) {
  if (dcqcn_ == nullptr) {
    ++counters_.rp_cnp_ignored;
    return;
  }
  Congestion& c = congestion(qpn);
  const uint64_t now = now_ps();
  if (!c.reaction.on_cnp(now)) {
    ++counters_.rp_cnp_ignored;
    return;
  }
  ++counters_.rp_cnp_handled;
  if (congestion_observer_) congestion_observer_({.qpn = qpn, .time_ps = now, .rate_gbps = c.reaction.rate_gbps(now), .cnp = true});
}

uint64_t RdmaEngine::paced_until(uint32_t qpn, const QueuePair& qp) {
  if (sq_scheduler_ == nullptr) return 0;
  const uint64_t now = now_ps();
  uint64_t until = transmit_gate_ ? transmit_gate_(now) : 0;
  if (qp.sched_group_requester != 0) until = std::max(until, f_.resources.scheduling.ready_ps(qp.sched_group_requester));
  until = std::max(until, packet_paced_until(qpn));
  return until > now ? until : 0;
}

// The queue group's limits charge whole messages (DCQCN charges packets: paced_packet).
void RdmaEngine::paced_message(QueuePair& qp, uint64_t length, uint64_t start_ps) {
  if (qp.sched_group_requester == 0) return;
  const uint64_t mtu = is_datagram(qp) ? std::max<uint64_t>(length, 1) : pmtu_of(qp);
  const uint64_t packets = std::max<uint64_t>(1, (length + mtu - 1) / mtu);
  f_.resources.scheduling.charge(qp.sched_group_requester, length + packets * kPacketWireOverhead, start_ps);
}

void RdmaEngine::paced_packet(uint32_t qpn, uint64_t wire_bytes, uint64_t start_ps) {
  if (dcqcn_ == nullptr) return;
  const auto it = congestion_.find(qpn);
  if (it == congestion_.end() || !it->second.reaction.limited()) return;
  ReactionPoint& rp = it->second.reaction;
  rp.on_sent(wire_bytes, start_ps);
  if (congestion_observer_) congestion_observer_({.qpn = qpn, .time_ps = start_ps, .rate_gbps = rp.rate_gbps(start_ps)});
}

uint64_t RdmaEngine::packet_paced_until(uint32_t qpn) {
  if (sq_scheduler_ == nullptr || dcqcn_ == nullptr) return 0;  // without a scheduler nothing could resume it
  const auto it = congestion_.find(qpn);
  if (it == congestion_.end()) return 0;
  const uint64_t now = now_ps();
  const uint64_t until = it->second.reaction.next_send_ps(now);
  return until > now ? until : 0;
}

}  // namespace hcaemu::model
