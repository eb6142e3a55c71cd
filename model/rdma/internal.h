#pragma once
// What the RDMA engine's translation units share (rdma/engine.cpp: frames, errors, receive dispatch;
// rdma/requester.cpp and rdma/responder.cpp: RC/UC/XRC; rdma/datagram.cpp: UD/QP1): CQE error syndromes,
// ring constants, opcode bases and model time (the qpc fields are in prm/qpc_fields.h).
#include <systemc>

#include <cstdint>

#include "common/endian.h"
#include "model/prm/bits.h"
#include "model/queues/completion_queue.h"
#include "model/prm/qpc_fields.h"
#include "model/objects/resources.h"
#include "model/queues/send_wqe.h"
#include "pcie/model_time.h"
#include "transport/ib_opcodes.h"
#include "transport/roce_packet.h"

namespace hcaemu::model::rdma_internal {

namespace op = transport::opcode;
using transport::psn_add;
using transport::psn_diff;
using transport::RocePacket;

namespace syndrome = cqe_syndrome;  // model/queues/completion_queue.h

inline constexpr uint32_t kCounterMask16 = 0xffff;
// What a RoCE packet takes on the wire besides its payload: Ethernet, IPv4, UDP, BTH, ICRC, FCS
// and the gap (the rate limits' charge; rdma/congestion.cpp).
inline constexpr uint64_t kPacketWireOverhead = 14 + 20 + 8 + 12 + 4 + 24;

// The transport machines' name for a connected QP's service (transport/rc/).
inline transport::rc::Service service_of(uint8_t st) {
  using transport::rc::Service;
  switch (st) {
    case qp_st::kUc: return Service::kUc;
    case qp_st::kXrc: return Service::kXrc;
    case qp_st::kDci:
    case qp_st::kDct: return Service::kDc;
    default: return Service::kRc;
  }
}
// The engine speaks RC's opcodes; on the wire a UC or XRC QP's are RC's plus its service's base,
// which is also what a received opcode's top three bits must be (UD and QP1: 0).
inline uint8_t opcode_base(uint8_t st) { return transport::rc::opcode_base(service_of(st)); }
// RC, XRC and DCI: acknowledged, and a send error takes the whole QP to ERR. (A DCT only answers:
// rdma/dc.cpp.)
inline bool reliable_connected(uint8_t st) { return st == qp_st::kRc || st == qp_st::kXrc || st == qp_st::kDci; }
inline constexpr uint32_t kRqDbrOffset = 0, kSqDbrOffset = 4;
inline constexpr uint32_t kGsiQpn = 1;          // the GSI QP's number on the wire, whatever QPN it has here
inline constexpr uint32_t kMulticastQpn = 0xffffff;  // IBA: a datagram for every QP attached to the group
inline constexpr uint32_t kMaxDatagram = 4096;  // the largest RoCE path MTU

inline uint32_t pmtu_of(const QueuePair& qp) {
  const uint32_t mtu = get(qp.context, qpc::kMtu);
  return mtu >= 1 && mtu <= 5 ? 256u << (mtu - 1) : 1024u;
}

inline uint32_t packets_for(uint64_t length, uint32_t pmtu) { return length == 0 ? 1 : uint32_t((length + pmtu - 1) / pmtu); }

inline bool is_read(uint8_t opcode) { return opcode == wqe_op::kRdmaRead; }
inline bool is_atomic(uint8_t opcode) { return opcode == wqe_op::kAtomicCs || opcode == wqe_op::kAtomicFa; }

inline uint64_t now_ps() { return pcie::model_time_ps(); }

// The fields every requester CQE carries: send opcode and QPN, WQE counter, owner/opcode byte.
inline void fill_requester_cqe(std::span<uint8_t> cqe, uint32_t qpn, uint8_t wqe_opcode, uint16_t wqe_index,
                               uint32_t user_index) {
  store_be32(&cqe[cqe::kSrqnUserIndex], user_index & 0xffffff);
  store_be32(&cqe[cqe::kSopDropQpn], (uint32_t(wqe_opcode) << 24) | (qpn & 0xffffff));
  store_be16(&cqe[cqe::kWqeCounter], wqe_index);
  cqe[cqe::kOpOwn] = uint8_t(cqe::kRequester << 4);
}
// cqe_version 1 (the caps say so): a CQE names its QP by the user index the driver gave it at
// CREATE_QP (libmlx5's uidx; the kernel's own QPs carry 0xffffff and are found by QPN).
inline uint32_t user_index_of(const QueuePair& qp) { return get(qp.context, qpc::kUserIndex); }
// A receive through an XRC SRQ names the SRQ: its xrc_srqc.user_index, or its number when
// user_index_equal_xrc_srqn is set.
inline uint32_t xrc_srq_user_index(const SharedReceiveQueue& srq, uint32_t srqn) {
  constexpr Field kUserIndexEqualSrqn{0x10, 31, 31}, kSrqUserIndex{0x10, 23, 0};
  if (srq.context.size() < 0x14) return srqn;
  return get(srq.context, kUserIndexEqualSrqn) != 0 ? srqn : get(srq.context, kSrqUserIndex);
}
// Spends model time until time_ps (nothing when it has passed).
inline void wait_until(uint64_t time_ps) {
  const uint64_t now = now_ps();
  if (time_ps > now) pcie::consume_model_time(pcie::from_ps(time_ps - now));
}

}  // namespace hcaemu::model::rdma_internal
