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
                                     uint32_t slot, std::vector<uint8_t>& bytes, uint32_t& posted) {
  posted = 0;
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
  uint32_t posted = 0;
  if (!read_posted_receive(srq->dbr_addr, srq->consumed, srq->buffer, srq->log_stride, index, bytes, posted))
    return false;
  srq = f_.resources.srqs.find(srqn);  // the read spent model time
  if (srq == nullptr) return false;
  uint16_t next = 0;
  resp.sges.clear();
  if (parse_srq_wqe(bytes, next, resp.sges) != WqeError::kNone) resp.sges.clear();
  resp.wqe_index = uint16_t(index);
  resp.have_wqe = true;
  srq->head = next;
  srq->consumed = (srq->consumed + 1) & kCounterMask16;
  if (srq->lwm != 0 && ((posted - srq->consumed) & kCounterMask16) < srq->lwm) srq_limit_reached(srqn, *srq);
  return true;
}

void RdmaEngine::srq_limit_reached(uint32_t srqn, SharedReceiveQueue& srq) {
  srq.set_limit(0);  // one event per arming (IBA 11.5.2.5)
  if (eq_post_qp_srq(f_, eqe::kSrqRqLimit, eqe::kResourceSrq, srqn) != 0) ++counters_.srq_limit_events;
}

bool RdmaEngine::take_receive_wqe(QueuePair& qp) {
  RcResponder& resp = qp.rc.resp;
  if (qp.st == qp_st::kXrc) return take_srq_wqe(qp, resp.xrc_srqn);
  if (qp.rq_type == rq_type::kSrq) return take_srq_wqe(qp, qp.srqn);
  if (qp.rq_type != rq_type::kRegular) return false;  // zero-length RQ: nothing to receive into
  const uint32_t index = qp.rq_consumer & ((1u << qp.log_rq_size) - 1);
  std::vector<uint8_t> bytes;
  uint32_t posted = 0;
  if (!read_posted_receive(qp.dbr_addr + kRqDbrOffset, qp.rq_consumer, qp.buffer, qp.log_rq_stride, index, bytes,
                           posted))
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
      translate(f_.resources, rkey, responder_pd(qp), va, length, access::kRemoteRead, chunks, qpn) !=
          ProtectionError::kNone)
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

// The HCA's side of the transport responder (transport/rc/responder.h): receive WQEs, MKEY checks
// and DMA into this function's memory, CQEs, frames, counters, for one request packet.
class RdmaEngine::ResponderPort final : public transport::rc::ResponderHost {
 public:
  using HostResult = transport::rc::HostResult;
  using RemoteAccess = transport::rc::RemoteAccess;
  using MessageKind = transport::rc::MessageKind;

  ResponderPort(RdmaEngine& engine, uint32_t qpn, QueuePair& qp, const RocePacket& packet)
      : e_(engine), qpn_(qpn), qp_(qp), packet_(packet) {}

  bool xrc_srq_valid(uint32_t srqn) override { return e_.xrc_srq_for(qp_, srqn) != nullptr; }
  bool take_receive_wqe() override { return e_.take_receive_wqe(qp_); }

  HostResult check_remote(uint64_t va, uint32_t rkey, uint64_t length, RemoteAccess kind) override {
    checked_.clear();  // kept for the atomic that follows the check (one packet per port)
    return translate_remote(va, rkey, length, kind, checked_);
  }

  HostResult write_remote(uint64_t va, uint32_t rkey, std::span<const uint8_t> data) override {
    std::vector<DmaChunk>& chunks = e_.rx_chunks_;
    chunks.clear();
    // A fault names the rest of the WRITE (rdma_op_len), so the driver maps it all at once.
    const RcResponder& s = qp_.rc.resp;
    const uint64_t end = s.write_va + s.write_length;
    const uint64_t rest = va >= s.write_va && va < end ? end - va : data.size();
    if (const HostResult r = translate_remote(va, rkey, data.size(), RemoteAccess::kWrite, chunks, rest);
        r != HostResult::kOk)
      return r;
    return write(chunks, 0, data);
  }

  HostResult write_receive(uint64_t offset, std::span<const uint8_t> data) override {
    std::vector<DmaChunk>& chunks = e_.rx_chunks_;
    chunks.clear();
    uint64_t total = 0;
    const ProtectionError error =
        translate_sges(e_.f_.resources, qp_.rc.resp.sges, e_.responder_pd(qp_), access::kLocalWrite, chunks, total);
    if (error == ProtectionError::kNotPresent) {  // the receive WQE's buffers: a WQE fault names it
      const uint32_t srqn = e_.receive_target(qp_).srqn;
      const PageFault fault{.subtype = page_fault::kWqe,
                            .type = srqn != 0 ? page_fault::kSrq : page_fault::kResponderRq,
                            .wq_number = srqn != 0 ? srqn : qpn_,
                            .qpn = qpn_,
                            .wqe_index = qp_.rc.resp.wqe_index};
      if (e_.raise_page_fault(fault, qp_.rc.resp.page_fault)) return HostResult::kPageFault;
    }
    if (error != ProtectionError::kNone || !pages_were_present()) return HostResult::kProtection;
    if (any_signature_key(e_.f_.resources, qp_.rc.resp.sges)) return write_signature_receive(offset, data);
    if (offset + data.size() > total) return HostResult::kLength;
    return write(chunks, offset, data);
  }
  // Through signature keys: the buffers hold the wire domain's bytes (objects/signature_path.h).
  HostResult write_signature_receive(uint64_t offset, std::span<const uint8_t> data) {
    SignatureList list;
    if (list.open(e_.f_.resources, qp_.rc.resp.sges, e_.responder_pd(qp_), access::kLocalWrite) != ProtectionError::kNone)
      return HostResult::kProtection;
    if (offset + data.size() > list.wire_length()) return HostResult::kLength;
    if (e_.f_.memory == nullptr || !list.write(*e_.f_.memory, offset, data, qp_.rc.resp.signature_pi)) {
      ++e_.counters_.dma_faults;
      return HostResult::kDmaFault;
    }
    if (auto error = list.take_error()) e_.signature_error(qpn_, qp_, e_.receive_target(qp_).cqn, *error);
    return HostResult::kOk;
  }

  HostResult atomic(const transport::AtomicEth& atomic, bool fetch_add, uint64_t& original) override {
    // The responder checked the key (check_remote) just before: its translation is the target.
    const std::vector<DmaChunk>& chunks = checked_;
    // Atomics run on 8 bytes of responder memory in host byte order (little-endian).
    std::array<uint8_t, 8> word{};
    if (chunks.empty() || e_.f_.memory == nullptr || !read_chunks(*e_.f_.memory, chunks, 0, word))
      return HostResult::kDmaFault;
    original = 0;
    for (int i = 0; i < 8; ++i) original |= uint64_t(word[i]) << (8 * i);
    const uint64_t result = fetch_add                      ? original + atomic.swap_add
                            : original == atomic.compare ? atomic.swap_add
                                                         : original;
    for (int i = 0; i < 8; ++i) word[i] = uint8_t(result >> (8 * i));
    if (result != original && !write_chunks(*e_.f_.memory, chunks, 0, word)) ++e_.counters_.dma_faults;
    return HostResult::kOk;
  }

  HostResult invalidate(uint32_t rkey) override {
    const ProtectionError error = invalidate_remotely(e_.f_.resources, rkey, e_.responder_pd(qp_));
    if (error == ProtectionError::kNone) return HostResult::kOk;
    log().debug("function {}: QP {:#x}: SEND with Invalidate of key {:#x}: {}", e_.f_.identity.vhca_id, qpn_, rkey,
                protection_error_name(error));
    return HostResult::kProtection;
  }

  void send_ack(uint32_t psn, uint8_t syndrome, uint32_t) override { e_.send_ack(qpn_, qp_, psn, syndrome); }
  void send_atomic_ack(uint32_t psn, uint64_t original, uint32_t) override { e_.send_atomic_ack(qp_, psn, original); }
  void send_read_responses(uint32_t psn, const transport::Reth& reth, uint32_t) override {
    e_.send_read_responses(qpn_, qp_, psn, reth.va, reth.rkey, reth.dma_length);
  }
  void complete_receive(const transport::rc::ReceiveCompletion& done) override;
  void fail(transport::rc::ResponderError error, bool wqe_taken) override {
    e_.responder_error(qpn_, qp_, syndrome_of(error), wqe_taken);
  }
  void pipeline() override { wait_until(e_.rx_arrival_ps_ + e_.timing_.per_packet_rx_ps); }
  void delivered(uint32_t last_psn, MessageKind kind, uint32_t bytes) override {
    e_.stamp_remote_delivery(qp_, packet_.src_mac, last_psn, wqe_opcode_of(kind), bytes);
  }
  void count(transport::rc::ResponderEvent event) override;

 private:
  // fault_length: the bytes a page fault names from va on (the rest of the message; 0: length).
  HostResult translate_remote(uint64_t va, uint32_t rkey, uint64_t length, RemoteAccess kind,
                              std::vector<DmaChunk>& chunks, uint64_t fault_length = 0) {
    const uint32_t need = kind == RemoteAccess::kRead    ? access::kRemoteRead
                          : kind == RemoteAccess::kWrite ? access::kRemoteWrite
                                                         : access::kAtomic;
    const ProtectionError error = translate(e_.f_.resources, rkey, e_.responder_pd(qp_), va, length, need, chunks, qpn_);
    if (error == ProtectionError::kNotPresent) {  // an RDMA fault names the remote range
      const PageFault fault{.subtype = page_fault::kRdma,
                            .type = kind == RemoteAccess::kRead ? page_fault::kRdmaRead : page_fault::kRdmaWrite,
                            .qpn = qpn_,
                            .rkey = rkey,
                            .length = uint32_t(std::min<uint64_t>(fault_length != 0 ? fault_length : length,
                                                                  UINT32_MAX)),
                            .va = va};
      if (e_.raise_page_fault(fault, qp_.rc.resp.page_fault)) return HostResult::kPageFault;
    }
    if (error != ProtectionError::kNone) {
      log().debug("function {}: QP {:#x}: remote key {:#x}: {}", e_.f_.identity.vhca_id, qpn_, rkey,
                  protection_error_name(error));
      return HostResult::kProtection;
    }
    // Remote access through a signature key (a READ or WRITE transformed block by block) is not
    // modelled: refused as a key the access may not use.
    if (signature_key(e_.f_.resources, rkey) != nullptr) return HostResult::kProtection;
    return pages_were_present() ? HostResult::kOk : HostResult::kProtection;
  }
  // The request's memory translated (PageFaultWait::progressed); a fault resumed with the error
  // bit fails it, counted as the requester counts it.
  bool pages_were_present() {
    if (qp_.rc.resp.page_fault.progressed()) return true;
    ++e_.counters_.page_fault_failures;
    return false;
  }
  HostResult write(const std::vector<DmaChunk>& chunks, uint64_t offset, std::span<const uint8_t> data) {
    if (data.empty()) return HostResult::kOk;
    return e_.f_.memory != nullptr && write_chunks(*e_.f_.memory, chunks, offset, data) ? HostResult::kOk
                                                                                          : HostResult::kDmaFault;
  }
  static uint8_t syndrome_of(transport::rc::ResponderError error) {
    using E = transport::rc::ResponderError;
    switch (error) {
      case E::kLocalLength: return syndrome::kLocalLength;
      case E::kLocalProtection: return syndrome::kLocalProtection;
      case E::kRemoteInvalidRequest: return syndrome::kRemoteInvalidRequest;
      case E::kRemoteAccess: return syndrome::kRemoteAccess;
      case E::kRemoteOperation: return syndrome::kRemoteOperation;
    }
    return syndrome::kRemoteOperation;
  }
  static uint8_t wqe_opcode_of(MessageKind kind) {
    switch (kind) {
      case MessageKind::kSend: return wqe_op::kSend;
      case MessageKind::kSendImm: return wqe_op::kSendImm;
      case MessageKind::kSendInvalidate: return wqe_op::kSendInval;
      case MessageKind::kWrite: return wqe_op::kRdmaWrite;
      case MessageKind::kWriteImm: return wqe_op::kRdmaWriteImm;
      case MessageKind::kRead: return wqe_op::kRdmaRead;
      case MessageKind::kCompareSwap: return wqe_op::kAtomicCs;
      case MessageKind::kFetchAdd: return wqe_op::kAtomicFa;
    }
    return wqe_op::kSend;
  }

  RdmaEngine& e_;
  uint32_t qpn_;
  QueuePair& qp_;
  const RocePacket& packet_;
  std::vector<DmaChunk> checked_;  // the remote range check_remote translated
};

void RdmaEngine::ResponderPort::complete_receive(const transport::rc::ReceiveCompletion& done) {
  const uint8_t cqe_opcode = done.kind == MessageKind::kWriteImm         ? cqe::kRespWriteImm
                             : done.kind == MessageKind::kSendImm        ? cqe::kRespSendImm
                             : done.kind == MessageKind::kSendInvalidate ? cqe::kRespSendInv
                                                                         : cqe::kRespSend;
  const bool carries_word = done.kind != MessageKind::kSend;
  const uint16_t index = qp_.rc.resp.wqe_index;
  const ReceiveTarget target = e_.receive_target(qp_);
  write_cqe(
      e_.f_, target.cqn,
      [&](std::span<uint8_t> cqe) {
        if (carries_word) store_be32(&cqe[cqe::kImmediate], done.immediate);
        store_be32(&cqe[cqe::kByteCount], done.bytes);
        store_be32(&cqe[cqe::kSrqnUserIndex], target.user_index & 0xffffff);
        store_be32(&cqe[cqe::kSopDropQpn], qpn_ & 0xffffff);
        store_be16(&cqe[cqe::kWqeCounter], index);
        cqe[cqe::kOpOwn] = uint8_t(cqe_opcode << 4);
      },
      done.solicited);
}

void RdmaEngine::ResponderPort::count(transport::rc::ResponderEvent event) {
  using E = transport::rc::ResponderEvent;
  RdmaCounters& c = e_.counters_;
  switch (event) {
    case E::kWriteRequest: e_.count(qp_, q_counter::kRxWriteRequests); break;
    case E::kReadRequest: e_.count(qp_, q_counter::kRxReadRequests); break;
    case E::kAtomicRequest: e_.count(qp_, q_counter::kRxAtomicRequests); break;
    case E::kDuplicate:
      ++c.duplicates;
      e_.count(qp_, q_counter::kDuplicateRequest);
      break;
    case E::kOutOfSequence: e_.count(qp_, q_counter::kOutOfSequence); break;
    case E::kUcResync: ++c.sequence_errors; break;
    case E::kInvalidXrcSrq:
    case E::kOpcodeSequence:
    case E::kUnsupportedOpcode:
    case E::kMisalignedAtomic:
    case E::kWriteBeyondLength:
    case E::kReceiveTooLong:
    case E::kInvalidateFailed: ++c.invalid_requests; break;
    case E::kRemoteAccess: ++c.remote_access_errors; break;
    case E::kNoReceiveWqe: e_.count(qp_, q_counter::kOutOfBuffer); break;
    case E::kLocalProtection: ++c.local_protection_errors; break;
    case E::kDmaFault: ++c.dma_faults; break;
    case E::kUcMessageDropped: ++c.uc_packets_dropped; break;
    case E::kRemoteInvalidation: ++c.remote_invalidations; break;
    case E::kCompletion: ++c.responder_cqes; break;
    case E::kPageFault: break;  // counted where raised (rdma/odp.cpp)
    case E::kCount: break;
  }
}

transport::rc::ResponderQp RdmaEngine::responder_qp(const QueuePair& qp) {
  return {.service = service_of(qp.st),
          .remote_read = get(qp.context, qpc::kRre) != 0,
          .remote_write = get(qp.context, qpc::kRwe) != 0,
          .remote_atomic = get(qp.context, qpc::kRae) != 0,
          .pmtu = pmtu_of(qp),
          .min_rnr_timer = uint8_t(get(qp.context, qpc::kMinRnrNak))};
}

void RdmaEngine::handle_request(uint32_t qpn, QueuePair& qp, const RocePacket& packet) {
  ResponderPort port(*this, qpn, qp, packet);
  responder_.receive(qp.rc.resp, responder_qp(qp), packet, port);
}

}  // namespace hcaemu::model
