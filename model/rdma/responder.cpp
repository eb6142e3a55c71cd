// The RC/UC/XRC responder: receive WQEs (RQ, SRQ, XRC SRQ), PSN checks, SEND/WRITE placement,
// READ responses, atomics, ACK/NAK/RNR NAK generation.
#include "model/rdma/engine.h"

#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "model/queues/completion_queue.h"
#include "model/queues/doorbell_unit.h"
#include "model/function_context.h"
#include "model/objects/memory_protection.h"
#include "model/rdma/internal.h"
#include "model/queues/recv_wqe.h"

namespace hcaemu::model {

using namespace rdma_internal;

// ---------------------------------------------------------------------------------------------
// Responder

bool RdmaEngine::read_posted_receive(uint64_t record, uint32_t consumed, const PageList& ring, uint32_t log_stride,
                                     uint32_t slot, std::vector<uint8_t>& bytes) {
  uint32_t posted = 0;
  if (!read_doorbell_record(f_.memory, record, posted)) {
    ++counters_.dma_faults;
    return false;
  }
  if (((posted - consumed) & kCounterMask16) == 0) return false;
  const uint32_t stride = 16u << log_stride;
  bytes.resize(stride);
  if (f_.memory == nullptr || !ring.read(*f_.memory, uint64_t(slot) * stride, bytes)) {
    ++counters_.dma_faults;
    return false;
  }
  return true;
}

bool RdmaEngine::take_srq_wqe(QueuePair& qp, uint32_t srqn) {
  RcResponder& resp = qp.rc.resp;
  SharedReceiveQueue* srq = f_.resources.srqs.find(srqn);
  // XRC SRQs serve XRC target QPs only (the caller checked the domain); others never.
  if (srq == nullptr || (srq->kind == SrqKind::kXrcSrq) != (qp.st == qp_st::kXrc)) return false;
  const uint32_t index = srq->head & ((1u << srq->log_size) - 1);
  std::vector<uint8_t> bytes;
  if (!read_posted_receive(srq->dbr_addr, srq->consumed, srq->buffer, srq->log_stride, index, bytes)) return false;
  srq = f_.resources.srqs.find(srqn);  // the read spent model time
  if (srq == nullptr) return false;
  uint16_t next = 0;
  resp.sges.clear();
  if (parse_srq_wqe(bytes, next, resp.sges) != WqeError::kNone) resp.sges.clear();
  resp.wqe_index = uint16_t(index);
  resp.have_wqe = true;
  srq->head = next;
  srq->consumed = (srq->consumed + 1) & kCounterMask16;
  return true;
}

bool RdmaEngine::take_receive_wqe(QueuePair& qp) {
  RcResponder& resp = qp.rc.resp;
  if (qp.st == qp_st::kXrc) return take_srq_wqe(qp, resp.xrc_srqn);
  if (qp.rq_type == rq_type::kSrq) return take_srq_wqe(qp, qp.srqn);
  if (qp.rq_type != rq_type::kRegular) return false;  // zero-length RQ: nothing to receive into
  const uint32_t index = qp.rq_consumer & ((1u << qp.log_rq_size) - 1);
  std::vector<uint8_t> bytes;
  if (!read_posted_receive(qp.dbr_addr + kRqDbrOffset, qp.rq_consumer, qp.buffer, qp.log_rq_stride, index, bytes))
    return false;
  resp.sges.clear();
  if (parse_recv_wqe(bytes, resp.sges) != WqeError::kNone) resp.sges.clear();
  resp.wqe_index = uint16_t(qp.rq_consumer);
  resp.have_wqe = true;  // resp.offset is the message's: a WRITE with immediate takes its WQE at the end
  qp.rq_consumer = (qp.rq_consumer + 1) & kCounterMask16;
  return true;
}

void RdmaEngine::send_ack(uint32_t qpn, QueuePair& qp, uint32_t psn, uint8_t syn) {
  RocePacket packet;
  if (!address(qp, packet)) return;
  packet.opcode = uint8_t(op::kRcAcknowledge | opcode_base(qp.st));
  packet.psn = psn;
  packet.aeth = {.syndrome = syn, .msn = qp.rc.resp.msn & transport::kPsnMask};
  switch (transport::aeth_type(syn)) {
    case transport::AethType::kAck: ++counters_.acks_sent; break;
    case transport::AethType::kRnrNak: ++counters_.rnr_naks_sent; break;
    default: ++counters_.naks_sent; break;
  }
  send_frame(packet);
}

void RdmaEngine::send_read_responses(uint32_t qpn, QueuePair& qp, uint32_t psn, uint64_t va, uint32_t rkey,
                                     uint32_t length) {
  const uint32_t pmtu = pmtu_of(qp);
  const uint32_t count = packets_for(length, pmtu);
  std::vector<DmaChunk> chunks;
  if (length != 0 &&
      translate(f_.resources, rkey, responder_pd(qp), va, length, access::kRemoteRead, chunks) != ProtectionError::kNone)
    return;  // checked by the caller for new requests; a duplicate whose MR went is dropped
  RocePacket packet;
  if (!address(qp, packet) || f_.memory == nullptr) return;
  pcie::PipelinedReads reads(*f_.memory, now_ps());  // responses stream as their bytes arrive
  std::vector<uint8_t> payload;
  for (uint32_t i = 0; i < count; ++i) {
    const bool first = i == 0, last = i + 1 == count;
    packet.opcode = uint8_t((first && last ? op::kRcRdmaReadResponseOnly
                             : first       ? op::kRcRdmaReadResponseFirst
                             : last        ? op::kRcRdmaReadResponseLast
                                           : op::kRcRdmaReadResponseMiddle) |
                            opcode_base(qp.st));
    packet.psn = psn_add(psn, i);
    packet.aeth = {.syndrome = transport::aeth_ack(transport::kAethCreditsInvalid),
                   .msn = qp.rc.resp.msn & transport::kPsnMask};
    const uint64_t offset = uint64_t(i) * pmtu;
    payload.resize(std::min<uint64_t>(pmtu, length - offset));
    if (!payload.empty() && !read_chunks(reads, chunks, offset, payload)) {
      ++counters_.dma_faults;
      return;
    }
    packet.payload = payload;
    send_frame(packet, payload.empty() ? 0 : reads.ready_ps());
  }
}

void RdmaEngine::handle_request(uint32_t qpn, QueuePair& qp, const RocePacket& packet) {
  RcResponder& resp = qp.rc.resp;
  const bool unreliable = qp.st == qp_st::kUc;
  // UC and XRC opcodes are RC's plus their service's base: the checks below speak RC.
  const uint8_t opcode = uint8_t(packet.opcode & ~opcode_base(qp.st));
  // UC answers nothing; on an error it drops the message and stays up (IBA 9.7.7 / 9.9.1.1).
  auto reply = [&](uint32_t psn, uint8_t syn) {
    if (!unreliable) send_ack(qpn, qp, psn, syn);
  };
  auto drop_message = [&]() {
    ++counters_.uc_packets_dropped;
    resp.incoming = RcResponder::Incoming::kNone;
    resp.offset = 0;
    resp.epsn = psn_add(packet.psn, 1);
  };
  if (qp.st == qp_st::kXrc) {
    // Every XRC request names an XRC SRQ of the target QP's domain (IBA A14), the same one for all
    // packets of a message: its WQEs, PD and CQ serve the message. Anything else is an invalid
    // request (answered when it is the expected packet, dropped otherwise).
    const bool switches = resp.incoming != RcResponder::Incoming::kNone && packet.xrc_srqn != resp.xrc_srqn;
    if (xrc_srq_for(qp, packet.xrc_srqn) == nullptr || switches) {
      ++counters_.invalid_requests;
      if (packet.psn == resp.epsn) {
        send_ack(qpn, qp, packet.psn, transport::aeth_nak(transport::NakCode::kInvalidRequest));
        responder_error(qpn, qp, syndrome::kRemoteInvalidRequest, false);
      }
      return;
    }
    resp.xrc_srqn = packet.xrc_srqn;
  }
  if (unreliable && packet.psn != resp.epsn) {
    // A lost packet loses its message: resynchronise on this PSN; only a first or only packet
    // starts a new message, and the receive WQE that was being filled is used again.
    ++counters_.sequence_errors;
    resp.incoming = RcResponder::Incoming::kNone;
    resp.offset = 0;
    resp.epsn = packet.psn;
  }
  const int32_t distance = psn_diff(packet.psn, resp.epsn);
  if (distance > 0) {  // a gap: one sequence NAK until the missing packet comes
    count(qp, q_counter::kOutOfSequence);
    if (!resp.sequence_nak_sent) {
      resp.sequence_nak_sent = true;
      reply(resp.epsn, transport::aeth_nak(transport::NakCode::kPsnSequenceError));
    }
    return;
  }
  if (distance < 0) {  // a duplicate: answer again, change nothing
    ++counters_.duplicates;
    count(qp, q_counter::kDuplicateRequest);
    if (opcode == op::kRcRdmaReadRequest) {
      send_read_responses(qpn, qp, packet.psn, packet.reth.va, packet.reth.rkey, packet.reth.dma_length);
    } else if (opcode == op::kRcCompareSwap || opcode == op::kRcFetchAdd) {
      for (const auto& done : resp.atomic_results)
        if (done.psn == packet.psn) send_atomic_ack(qp, packet.psn, done.original);
    } else {
      reply(psn_add(resp.epsn, transport::kPsnMask), transport::aeth_ack(transport::kAethCreditsInvalid));
    }
    return;
  }
  resp.sequence_nak_sent = false;
  const uint16_t headers = transport::headers_of(opcode);
  const bool first = headers & transport::hdr::kFirst, last = headers & transport::hdr::kLast;
  const bool is_send = opcode <= op::kRcSendOnlyImm || opcode == op::kRcSendLastInvalidate ||
                       opcode == op::kRcSendOnlyInvalidate;
  const bool is_write = opcode >= op::kRcRdmaWriteFirst && opcode <= op::kRcRdmaWriteOnlyImm;
  const uint8_t ack_ok = transport::aeth_ack(transport::kAethCreditsInvalid);

  auto invalid_request = [&]() {
    if (unreliable) return drop_message();
    ++counters_.invalid_requests;
    send_ack(qpn, qp, packet.psn, transport::aeth_nak(transport::NakCode::kInvalidRequest));
    responder_error(qpn, qp, syndrome::kRemoteInvalidRequest, false);
  };
  // The opcode sequence of IBA 9.8.3: middle/last only inside a message of the same kind.
  const RcResponder::Incoming kind = is_send ? RcResponder::Incoming::kSend : RcResponder::Incoming::kWrite;
  if ((is_send || is_write) && first != (resp.incoming == RcResponder::Incoming::kNone)) {
    invalid_request();
    return;
  }
  if ((is_send || is_write) && !first && resp.incoming != kind) {
    invalid_request();
    return;
  }
  // The receive pipeline works on a packet from its arrival on: one that waited in the queue
  // behind others has been through it already.
  wait_until(rx_arrival_ps_ + timing_.per_packet_rx_ps);

  if (unreliable && !is_send && !is_write) {
    invalid_request();
    return;
  }
  if (opcode == op::kRcRdmaReadRequest || opcode == op::kRcCompareSwap || opcode == op::kRcFetchAdd) {
    const bool read = opcode == op::kRcRdmaReadRequest;
    const uint64_t va = read ? packet.reth.va : packet.atomic.va;
    const uint32_t rkey = read ? packet.reth.rkey : packet.atomic.rkey;
    const uint64_t length = read ? packet.reth.dma_length : 8;
    if (!read && (va & 7) != 0) {
      invalid_request();
      return;
    }
    const bool allowed = read ? get(qp.context, qpc::kRre) : get(qp.context, qpc::kRae);
    std::vector<DmaChunk> chunks;
    const ProtectionError error =
        allowed ? translate(f_.resources, rkey, responder_pd(qp), va, length, read ? access::kRemoteRead : access::kAtomic, chunks)
                : ProtectionError::kAccess;
    if (error != ProtectionError::kNone) {
      ++counters_.remote_access_errors;
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteAccessError));
      responder_error(qpn, qp, syndrome::kRemoteAccess, false);
      return;
    }
    count(qp, read ? q_counter::kRxReadRequests : q_counter::kRxAtomicRequests);
    stamp_remote_delivery(qp, packet.src_mac, psn_add(packet.psn, read ? packets_for(length, pmtu_of(qp)) - 1 : 0),
                          read ? wqe_op::kRdmaRead : opcode == op::kRcFetchAdd ? wqe_op::kAtomicFa : wqe_op::kAtomicCs,
                          uint32_t(length));
    if (read) {
      const uint32_t count = packets_for(length, pmtu_of(qp));
      resp.epsn = psn_add(resp.epsn, count);
      ++resp.msn;
      send_read_responses(qpn, qp, packet.psn, va, rkey, uint32_t(length));
      return;
    }
    // Atomics run on 8 bytes of responder memory in host byte order (little-endian).
    std::array<uint8_t, 8> word{};
    if (f_.memory == nullptr || !read_chunks(*f_.memory, chunks, 0, word)) {
      ++counters_.dma_faults;
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteOperationalError));
      responder_error(qpn, qp, syndrome::kRemoteOperation, false);
      return;
    }
    uint64_t original = 0;
    for (int i = 0; i < 8; ++i) original |= uint64_t(word[i]) << (8 * i);
    const uint64_t result = opcode == op::kRcFetchAdd ? original + packet.atomic.swap_add
                            : original == packet.atomic.compare ? packet.atomic.swap_add
                                                                : original;
    for (int i = 0; i < 8; ++i) word[i] = uint8_t(result >> (8 * i));
    if (result != original && !write_chunks(*f_.memory, chunks, 0, word)) ++counters_.dma_faults;
    if (resp.atomic_results.size() == RcResponder::kAtomicResults) resp.atomic_results.pop_front();
    resp.atomic_results.push_back({packet.psn, original});
    resp.epsn = psn_add(resp.epsn, 1);
    ++resp.msn;
    send_atomic_ack(qp, packet.psn, original);
    return;
  }
  if (!is_send && !is_write) {
    invalid_request();
    return;
  }
  const bool with_imm = headers & transport::hdr::kImmDt;
  const bool needs_wqe = is_send || (is_write && with_imm && last);
  if (is_write && first) {
    if (!get(qp.context, qpc::kRwe)) {
      ++counters_.remote_access_errors;
      if (unreliable) return drop_message();
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteAccessError));
      responder_error(qpn, qp, syndrome::kRemoteAccess, false);
      return;
    }
    count(qp, q_counter::kRxWriteRequests);
    resp.write_va = packet.reth.va;
    resp.write_rkey = packet.reth.rkey;
    resp.write_length = packet.reth.dma_length;
    resp.offset = 0;
    resp.have_wqe = false;
  }
  // A receive WQE is needed before anything lands for a SEND (and at the end of a WRITE with
  // immediate): none posted means RNR NAK, and the requester sends the same packet again.
  if (needs_wqe && !resp.have_wqe && !take_receive_wqe(qp)) {
    count(qp, q_counter::kOutOfBuffer);
    if (unreliable) return drop_message();  // UC has no RNR: the message is lost
    // The packets behind it are dropped silently until it comes again: a sequence
    // NAK for them would make the requester resend at once and spend its retry count.
    resp.sequence_nak_sent = true;
    reply(packet.psn, transport::aeth_rnr_nak(uint8_t(get(qp.context, qpc::kMinRnrNak))));
    return;
  }
  if (is_write) {
    if (resp.offset + packet.payload.size() > resp.write_length) {
      invalid_request();
      return;
    }
    std::vector<DmaChunk> chunks;
    const ProtectionError error =
        translate(f_.resources, resp.write_rkey, responder_pd(qp), resp.write_va + resp.offset, packet.payload.size(),
                  access::kRemoteWrite, chunks);
    if (error != ProtectionError::kNone) {
      ++counters_.remote_access_errors;
      log().debug("function {}: QP {:#x}: RDMA WRITE rkey {:#x}: {}", f_.identity.vhca_id, qpn, resp.write_rkey,
                  protection_error_name(error));
      if (unreliable) return drop_message();
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteAccessError));
      responder_error(qpn, qp, syndrome::kRemoteAccess, resp.have_wqe);
      return;
    }
    if (!packet.payload.empty() && (f_.memory == nullptr || !write_chunks(*f_.memory, chunks, 0, packet.payload))) {
      ++counters_.dma_faults;
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteOperationalError));
      responder_error(qpn, qp, syndrome::kRemoteOperation, resp.have_wqe);
      return;
    }
  } else {
    std::vector<DmaChunk> chunks;
    uint64_t total = 0;
    const ProtectionError error = translate_sges(f_.resources, resp.sges, responder_pd(qp), access::kLocalWrite, chunks, total);
    if (error != ProtectionError::kNone) {
      ++counters_.local_protection_errors;
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteOperationalError));
      responder_error(qpn, qp, syndrome::kLocalProtection, true);
      return;
    }
    if (resp.offset + packet.payload.size() > total) {
      ++counters_.invalid_requests;
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kInvalidRequest));
      responder_error(qpn, qp, syndrome::kLocalLength, true);
      return;
    }
    if (!packet.payload.empty() &&
        (f_.memory == nullptr || !write_chunks(*f_.memory, chunks, resp.offset, packet.payload))) {
      ++counters_.dma_faults;
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteOperationalError));
      responder_error(qpn, qp, syndrome::kLocalProtection, true);
      return;
    }
  }
  resp.offset += packet.payload.size();
  resp.epsn = psn_add(resp.epsn, 1);
  resp.incoming = last ? RcResponder::Incoming::kNone : kind;
  if (last && (headers & transport::hdr::kIeth) != 0) {
    // The data is placed; the key the requester names is freed before the completion says so.
    const ProtectionError error = invalidate_remotely(f_.resources, packet.invalidate_rkey, responder_pd(qp));
    if (error != ProtectionError::kNone) {
      ++counters_.invalid_requests;
      log().debug("function {}: QP {:#x}: SEND with Invalidate of key {:#x}: {}", f_.identity.vhca_id, qpn,
                  packet.invalidate_rkey, protection_error_name(error));
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kInvalidRequest));
      responder_error(qpn, qp, syndrome::kRemoteInvalidRequest, true);
      return;
    }
    ++counters_.remote_invalidations;
  }
  if (last) {
    ++resp.msn;
    stamp_remote_delivery(qp, packet.src_mac, packet.psn,
                          is_write                              ? (with_imm ? wqe_op::kRdmaWriteImm : wqe_op::kRdmaWrite)
                          : with_imm                            ? wqe_op::kSendImm
                          : (headers & transport::hdr::kIeth) ? wqe_op::kSendInval
                                                                : wqe_op::kSend,
                          uint32_t(is_write ? resp.write_length : resp.offset));
    if (needs_wqe) {
      ++counters_.responder_cqes;
      const uint8_t cqe_opcode = is_write                                    ? cqe::kRespWriteImm
                                 : with_imm                                  ? cqe::kRespSendImm
                                 : (headers & transport::hdr::kIeth) != 0    ? cqe::kRespSendInv
                                                                             : cqe::kRespSend;
      const uint32_t bytes = uint32_t(is_write ? resp.write_length : resp.offset);
      const uint16_t index = resp.wqe_index;
      const ReceiveTarget target = receive_target(qp);
      write_cqe(
          f_, target.cqn,
          [&](std::span<uint8_t> cqe) {
            if (with_imm) store_be32(&cqe[cqe::kImmediate], packet.immediate);
            if (headers & transport::hdr::kIeth) store_be32(&cqe[cqe::kImmediate], packet.invalidate_rkey);
            store_be32(&cqe[cqe::kByteCount], bytes);
            if (target.srqn != 0) store_be32(&cqe[cqe::kSrqnUserIndex], target.srqn & 0xffffff);
            store_be32(&cqe[cqe::kSopDropQpn], qpn & 0xffffff);
            store_be16(&cqe[cqe::kWqeCounter], index);
            cqe[cqe::kOpOwn] = uint8_t(cqe_opcode << 4);
          },
          packet.solicited);
    }
    resp.have_wqe = false;
    resp.offset = 0;
  }
  if (packet.ack_req || last) reply(packet.psn, ack_ok);
}

}  // namespace hcaemu::model
