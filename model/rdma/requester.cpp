// The RC/UC requester and completer: SQ doorbells, WQE fetch and checks, packetisation with
// pipelined payload reads, ACK/NAK/RNR handling, retransmission, completions.
#include "model/rdma/engine.h"

#include <algorithm>
#include <array>

#include "common/endian.h"
#include "common/log.h"
#include "model/queues/completion_queue.h"
#include "model/queues/doorbell_unit.h"
#include "model/function_context.h"
#include "model/objects/memory_protection.h"
#include "model/objects/umr.h"
#include "model/rdma/internal.h"
#include "model/rdma/payload_reader.h"

namespace hcaemu::model {

using namespace rdma_internal;

namespace {

// IBA table 45: the RNR NAK timer field in microseconds.
uint32_t rnr_timer_us(uint32_t code) {
  static constexpr std::array<uint32_t, 32> kTable{
      655360, 10,   20,   30,   40,   60,    80,    120,   160,   240,   320,   480,    640,    960,    1280,   1920,
      2560,   3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return kTable[code & 31];
}

transport::rc::RequestKind kind_of(uint8_t wqe_opcode) {
  using transport::rc::RequestKind;
  switch (wqe_opcode) {
    case wqe_op::kNop:
    case wqe_op::kSetPsv:
    case wqe_op::kUmr: return RequestKind::kNop;  // local: nothing goes on the wire
    case wqe_op::kRdmaRead: return RequestKind::kRead;
    case wqe_op::kAtomicCs:
    case wqe_op::kAtomicFa: return RequestKind::kAtomic;
    case wqe_op::kRdmaWrite:
    case wqe_op::kRdmaWriteImm: return RequestKind::kWrite;
    default: return RequestKind::kSend;
  }
}

// What the transport needs of a parsed send WQE.
transport::rc::WorkRequest work_request(const SendWqe& wqe) {
  return {.kind = kind_of(wqe.opcode),
          .with_imm = wqe.opcode == wqe_op::kSendImm || wqe.opcode == wqe_op::kRdmaWriteImm,
          .invalidate = wqe.opcode == wqe_op::kSendInval,
          .fetch_add = wqe.opcode == wqe_op::kAtomicFa,
          .solicited = wqe.solicited,
          .fenced = wqe.fence != 0,
          .remote_va = wqe.remote_va,
          .rkey = wqe.rkey,
          .swap_add = wqe.swap_add,
          .compare = wqe.compare,
          .immediate = wqe.imm,
          .xrc_srqn = wqe.xrc_srqn,
          .has_inline = wqe.has_inline};
}

}  // namespace

// The HCA's side of the transport completer (transport/rc/completer.h) for one QP: its outstanding
// WQEs, their buffers and CQEs, resends, timers and counters.
class RdmaEngine::CompleterPort final : public transport::rc::CompleterHost {
 public:
  using HostResult = transport::rc::HostResult;

  CompleterPort(RdmaEngine& engine, uint32_t qpn, QueuePair& qp) : e_(engine), qpn_(qpn), qp_(qp) {}

  size_t outstanding() override { return qp_.rc.req.outstanding.size(); }
  transport::rc::OutstandingMessage& message(size_t index) override { return qp_.rc.req.outstanding[index]; }
  void complete_oldest(bool acknowledged) override {
    SendMessage& front = qp_.rc.req.outstanding.front();
    if (acknowledged) e_.stamp(qpn_, front, RdmaStage::kAck);
    if (front.wqe.signalled) e_.requester_cqe(qpn_, qp_, front);
    ++e_.counters_.messages_completed;
    qp_.rc.req.outstanding.pop_front();
  }
  HostResult place_read_response(size_t index, uint64_t offset, std::span<const uint8_t> data) override {
    const SendMessage& message = qp_.rc.req.outstanding[index];
    return place(message, message.read_next_psn, offset, data);
  }
  HostResult place_atomic_result(size_t index, uint64_t original) override {
    // The original value, in host byte order (the driver asked for host-endian atomics).
    std::array<uint8_t, 8> bytes{};
    for (int i = 0; i < 8; ++i) bytes[i] = uint8_t(original >> (8 * i));
    const SendMessage& message = qp_.rc.req.outstanding[index];
    return place(message, message.first_psn, 0, bytes);
  }
  void responded(size_t index) override { e_.stamp(qpn_, qp_.rc.req.outstanding[index], RdmaStage::kAck); }
  void fail(size_t index, transport::rc::CompleterError error) override {
    auto& outstanding = qp_.rc.req.outstanding;
    e_.requester_error(qpn_, qp_, index < outstanding.size() ? outstanding[index].wqe : SendWqe{}, syndrome_of(error));
  }
  bool stopped() override { return send_queue_stopped(qp_); }
  void resend_from(uint32_t psn) override {
    // While a message waits for its pages, a resend joins the one its resume makes.
    if (!qp_.rc.req.fault_resend_psn) return e_.retransmit_from(qpn_, qp_, psn);
    qp_.rc.req.resend_after_fault_from(psn);
  }
  void arm_ack_timer() override { e_.arm_timer(qp_); }
  void arm_rnr_timer(uint8_t code) override {
    RcRequester& req = qp_.rc.req;
    const auto wait = std::chrono::microseconds(rnr_timer_us(code));
    req.deadline = make_deadline(e_.timer_policy_, e_.timer_now_ps(), wait, e_.timer_policy_.min_rnr_wait);
    req.timer_armed = true;
    if (e_.timer_hook_) e_.timer_hook_(req.deadline);
  }
  void resume_sends() override { e_.process_sq(qpn_, qp_); }
  void count(transport::rc::CompleterEvent event) override;

 private:
  // Into the WQE's local buffers (READ data, atomic original): its lkeys are checked again, as the
  // MR may have gone since the request left, or its pages (ODP: the response at `psn` is asked
  // for again once they are in).
  HostResult place(const SendMessage& message, uint32_t psn, uint64_t offset, std::span<const uint8_t> data) {
    std::vector<DmaChunk> chunks;
    uint64_t total = 0;
    const ProtectionError error = translate_sges(e_.f_.resources, message.wqe.sges, qp_.pd, access::kLocalWrite, chunks, total);
    if (error == ProtectionError::kNotPresent && e_.hold_message_for_pages(qpn_, qp_, message.wqe, psn))
      return HostResult::kPageFault;
    if (error != ProtectionError::kNone) {
      ++e_.counters_.local_protection_errors;
      return HostResult::kProtection;
    }
    qp_.rc.req.page_fault.translated();
    if (!data.empty() && (e_.f_.memory == nullptr || !write_chunks(*e_.f_.memory, chunks, offset, data))) {
      ++e_.counters_.dma_faults;
      return HostResult::kDmaFault;
    }
    return HostResult::kOk;
  }
  static uint8_t syndrome_of(transport::rc::CompleterError error) {
    using E = transport::rc::CompleterError;
    switch (error) {
      case E::kRetryExceeded: return syndrome::kRetryExceeded;
      case E::kRnrRetryExceeded: return syndrome::kRnrRetryExceeded;
      case E::kBadResponse: return syndrome::kBadResponse;
      case E::kLocalProtection: return syndrome::kLocalProtection;
      case E::kRemoteInvalidRequest: return syndrome::kRemoteInvalidRequest;
      case E::kRemoteAccess: return syndrome::kRemoteAccess;
      case E::kRemoteOperation: return syndrome::kRemoteOperation;
    }
    return syndrome::kBadResponse;
  }

  RdmaEngine& e_;
  uint32_t qpn_;
  QueuePair& qp_;
};

void RdmaEngine::CompleterPort::count(transport::rc::CompleterEvent event) {
  using E = transport::rc::CompleterEvent;
  RdmaCounters& c = e_.counters_;
  switch (event) {
    case E::kAck: ++c.acks_received; break;
    case E::kRnrNak:
      ++c.rnr_naks_received;
      e_.count(qp_, q_counter::kRnrNakRetryErr);
      break;
    case E::kNak: ++c.naks_received; break;
    case E::kUnexpectedPsn:
    case E::kDuplicateResponse: ++c.duplicates; break;
    case E::kReservedSyndrome:
    case E::kWrongResponse:
    case E::kNakInResponse: ++c.invalid_requests; break;
    case E::kImpliedNak:
      ++c.sequence_errors;
      e_.count(qp_, q_counter::kImpliedNakSeqErr);
      break;
    case E::kSequenceNak:
      ++c.sequence_errors;
      e_.count(qp_, q_counter::kPacketSeqErr);
      break;
    case E::kReadResponseGap: ++c.sequence_errors; break;
    case E::kTimeout:
      ++c.timeouts;
      e_.count(qp_, q_counter::kLocalAckTimeoutErr);
      break;
    case E::kPageFault:  // counted with the fault it raised (page_faults)
    case E::kCount: break;
  }
}

transport::rc::CompleterQp RdmaEngine::completer_qp(const QueuePair& qp) {
  return {.service = service_of(qp.st),
          .acknowledged = reliable_connected(qp.st),
          .retry_count = get(qp.context, qpc::kRetryCount),
          .rnr_retry = get(qp.context, qpc::kRnrRetry),
          .pmtu = pmtu_of(qp)};
}

// The HCA's side of the transport requester (transport/rc/requester.h) for one QP: its path, the
// payload reads of its WQEs (pipelined from issue_ps; 0: from when each message starts), the
// port, trace stamps and errors.
class RdmaEngine::RequesterPort final : public transport::rc::RequesterHost {
 public:
  using HostResult = transport::rc::HostResult;

  RequesterPort(RdmaEngine& engine, uint32_t qpn, QueuePair& qp, uint64_t issue_ps)
      : e_(engine), qpn_(qpn), qp_(qp), issue_ps_(issue_ps) {}

  size_t outstanding() override { return qp_.rc.req.outstanding.size(); }
  transport::rc::OutstandingMessage& message(size_t index) override { return qp_.rc.req.outstanding[index]; }
  bool address(RocePacket& packet) override { return e_.address(qp_, packet); }
  HostResult open_payload(size_t index, uint32_t from_psn) override {
    const SendWqe& wqe = qp_.rc.req.outstanding[index].wqe;
    if (wqe.has_inline) return HostResult::kOk;
    // Payload is read packet by packet, all reads pipelined from issue_ps: a packet waits only
    // for its own bytes, so the reads overlap the wire. Its pages were present at the post; the
    // driver may have invalidated them since (ODP): the packet then waits for them.
    const ProtectionError error = reader_.open(e_.f_.resources, e_.f_.memory, wqe, qp_.pd, issue_ps_ != 0 ? issue_ps_ : now_ps());
    if (error == ProtectionError::kNone) {
      qp_.rc.req.page_fault.translated();
      return HostResult::kOk;
    }
    if (error == ProtectionError::kNotPresent && e_.hold_message_for_pages(qpn_, qp_, wqe, from_psn))
      return HostResult::kPageFault;
    ++e_.counters_.local_protection_errors;
    return HostResult::kProtection;
  }
  HostResult payload(size_t index, uint64_t offset, uint32_t size, const RocePacket& packet,
                     std::span<const uint8_t>& bytes, uint64_t& ready_ps) override {
    SendMessage& message = qp_.rc.req.outstanding[index];
    if (message.wqe.has_inline) {
      bytes = std::span<const uint8_t>(message.wqe.inline_data).subspan(size_t(offset), size);
      return HostResult::kOk;
    }
    // Read straight to where the frame carries it: send_frame builds the headers around it.
    const size_t at = transport::payload_offset(packet);
    std::vector<uint8_t>& frame = e_.tx_frame_;
    frame.reserve(at + size + 8);  // pad and ICRC: building the frame must not move the payload
    frame.resize(at + size);
    const std::span<uint8_t> buffer(frame.data() + at, size);
    if (!reader_.read(offset, buffer)) {
      ++e_.counters_.dma_faults;
      return HostResult::kDmaFault;
    }
    // A signature error is reported ahead of the WQE's completion; the data goes on.
    if (auto error = reader_.take_signature_error()) e_.signature_error(qpn_, qp_, qp_.cqn_snd, *error);
    ready_ps = reader_.ready_ps();
    if (offset == 0) e_.stamp(qpn_, message, RdmaStage::kPayloadDma, ready_ps);
    bytes = buffer;
    return HostResult::kOk;
  }
  void send(RocePacket& packet, uint64_t ready_ps) override {
    const uint64_t start_ps = now_ps();
    if (qp_.st == qp_st::kDci) dc_request_header(qp_, packet);
    e_.send_frame(packet, ready_ps);
    e_.paced_packet(qpn_, packet.payload.size() + kPacketWireOverhead, start_ps);
  }
  void sent(size_t index, uint32_t number, bool first_of_burst) override {
    // The next message's WQE and payload reads may start once this one is on the wire.
    if (first_of_burst) e_.prefetch_floor_ps_ = now_ps();
    if (number == 0) e_.stamp(qpn_, qp_.rc.req.outstanding[index], RdmaStage::kWireFirstPacket);
  }
  void fail(size_t index, transport::rc::RequesterError error) override {
    const uint8_t syn = error == transport::rc::RequesterError::kNoAddress ? syndrome::kLocalQpOperation
                                                                           : syndrome::kLocalProtection;
    e_.requester_error(qpn_, qp_, qp_.rc.req.outstanding[index].wqe, syn);
  }
  bool stopped() override { return send_queue_stopped(qp_); }
  bool paced() override { return e_.packet_paced_until(qpn_) != 0; }
  void pause_at(uint32_t psn) override { qp_.rc.req.paced_psn = psn; }
  void count(transport::rc::RequesterEvent event) override {
    if (event == transport::rc::RequesterEvent::kResent) ++e_.counters_.retransmits;
  }

 private:
  RdmaEngine& e_;
  uint32_t qpn_;
  QueuePair& qp_;
  uint64_t issue_ps_;
  PayloadReader reader_;
};

transport::rc::RequesterQp RdmaEngine::requester_qp(const QueuePair& qp) {
  return {.service = service_of(qp.st), .pmtu = pmtu_of(qp), .datagram = is_datagram(qp)};
}

// ---------------------------------------------------------------------------------------------
// Requester

bool RdmaEngine::doorbell(std::span<const uint8_t> data, uint64_t rung_ps) {
  if (data.size() < 8) return false;
  const uint32_t qpn = load_be32(data.data() + 4) >> 8;
  QueuePair* qp = f_.resources.qps.find(qpn);
  if (qp == nullptr) return false;
  ++counters_.sq_doorbells;
  if (const auto producer = SqDoorbells::announced_producer(data)) qp->rc.req.doorbells.rang(*producer, rung_ps != 0 ? rung_ps : now_ps());
  process_sq(qpn, *qp, rung_ps);
  return true;
}

bool RdmaEngine::fetch_wqe(pcie::HostMemory& memory, QueuePair& qp, uint32_t block, std::vector<uint8_t>& out,
                           uint8_t& ds) {
  // The SQ is a ring of WQEBBs after the RQ in the QP buffer; a WQE running past its end
  // continues at WQEBB 0.
  auto read = [&](uint64_t at, std::span<uint8_t> dst) {
    return qp.buffer.read_ring(memory, qp.sq_offset, qp.sq_bytes(), at, dst);
  };
  // One WQEBB first (one DMA read for the common small WQE), the rest only when ds says so.
  out.resize(wqe_format::kBasicBlock);
  if (!read(uint64_t(block) * wqe_format::kBasicBlock, out)) return false;
  ds = peek_ds(std::span<const uint8_t>(out).first(wqe_format::kSegment));
  const uint32_t bytes = (uint32_t(ds) + 3) / 4 * wqe_format::kBasicBlock;
  if (bytes <= wqe_format::kBasicBlock) return true;
  out.resize(bytes);
  return read(uint64_t(block + 1) * wqe_format::kBasicBlock, std::span<uint8_t>(out).subspan(wqe_format::kBasicBlock));
}

void RdmaEngine::process_sq(uint32_t qpn, QueuePair& qp, uint64_t rung_ps) {
  if (qp.st == qp_st::kRegUmr) return process_umr_sq(qpn, qp);
  if (!reliable_connected(qp.st) && qp.st != qp_st::kUc && !is_datagram(qp)) {
    if (counters_.unsupported_service++ == 0)
      log().warn("function {}: SQ doorbell for QP {:#x} of service type {:#x}: only RC, UC, UD, XRC, QP1 and UMR are modelled",
                 f_.identity.vhca_id, qpn, qp.st);
    return;
  }
  if (qp.state != QpState::kRts && !send_queue_stopped(qp)) return;  // SQD/RTR: hold the WQEs
  // A resumption already queued for this SQ picks the new WQEs up where it stands.
  if (sq_scheduler_ != nullptr && sq_scheduler_->reread_queued(qpn)) return;
  SqResume cursor{.qpn = qpn};
  // The doorbell unit reads the record from the doorbell's arrival on: one that waited behind
  // other work (a burst of them, one per WQE) has it by the time it is taken.
  const uint64_t now = now_ps();
  if (f_.memory == nullptr) return void(++counters_.dma_faults);
  pcie::PipelinedReads record(*f_.memory, rung_ps != 0 ? std::min(rung_ps, now) : now);
  if (!read_doorbell_record(&record, qp.dbr_addr + kSqDbrOffset, cursor.producer)) {
    ++counters_.dma_faults;
    return;
  }
  wait_until(record.ready_ps());
  if (!send_queue_stopped(qp)) cursor.producer = qp.rc.req.doorbells.producer(qp.sq_consumer, cursor.producer);
  // The WQE fetches may start once the record was in (and the fetch engine free: next_wqe).
  cursor.doorbell_ps = record.ready_ps();
  run_sq(qpn, qp, cursor);
}

void RdmaEngine::resume_sq(const SqResume& resume) {
  QueuePair* qp = f_.resources.qps.find(resume.qpn);
  if (qp == nullptr || (qp->state != QpState::kRts && !send_queue_stopped(*qp))) return;  // gone, or held
  SqResume cursor = resume;
  // Whatever happened meanwhile (an error and its flush, new WQEs) shows in a fresh producer index.
  if (cursor.reread || send_queue_stopped(*qp)) {
    pcie::PipelinedReads record(*f_.memory, now_ps());  // the doorbell record, no time spent
    if (!read_doorbell_record(&record, qp->dbr_addr + kSqDbrOffset, cursor.producer)) {
      ++counters_.dma_faults;
      return;
    }
    // An SQ in error flushes all that is posted, rung or not.
    if (!send_queue_stopped(*qp)) cursor.producer = qp->rc.req.doorbells.producer(qp->sq_consumer, cursor.producer);
  }
  run_sq(resume.qpn, *qp, cursor);
}

// Takes WQEs up to the producer index: one message, then the rest after a resumption the
// scheduler queues (or, without one, all of them now).
void RdmaEngine::run_sq(uint32_t qpn, QueuePair& qp, SqResume cursor) {
  // The WQE at the head waits for its pages (ODP); a stopped SQ flushes it all the same.
  if (!send_queue_stopped(qp)) {
    if (qp.rc.req.page_fault.token != 0) return;
    if (qp.rc.req.fault_resend_psn) resend_after_fault(qpn, qp);  // a message's pages came back
    if (qp.rc.req.page_fault.token != 0 || send_queue_stopped(qp)) return;
  }
  // Every resumption queued from here reads the producer index this cursor carries. The rest of a
  // message DCQCN held goes first, when its rate allows; nothing new before it.
  cursor.reread = false;
  if (hold_for_pace(qpn, qp, cursor)) return;
  std::vector<uint8_t> bytes;
  while (((cursor.producer - qp.sq_consumer) & kCounterMask16) != 0) {
    // DCQCN's rate limit, the queue group's rates or a paused port: the next message waits (other
    // work goes on meanwhile).
    if (const uint64_t paced = paced_until(qpn, qp); paced != 0 && !send_queue_stopped(qp)) {
      cursor.not_before_ps = paced;
      sq_scheduler_->resume_later(cursor);
      return;
    }
    const uint64_t start_ps = now_ps();
    const uint16_t consumer_before = uint16_t(qp.sq_consumer);
    const SqStep step = next_wqe(qpn, qp, cursor.producer, cursor.doorbell_ps, bytes);
    if (step == SqStep::kStop || qp.rc.req.page_fault.token != 0) return;  // its payload faulted on the way
    if (step != SqStep::kPosted) continue;
    if (qp.sched_group_requester != 0 && !qp.rc.req.outstanding.empty() && qp.rc.req.outstanding.back().wqe.wqe_index == consumer_before)
      paced_message(qp, qp.rc.req.outstanding.back().length, start_ps);
    if (send_queue_stopped(qp)) return;
    if (hold_for_pace(qpn, qp, cursor)) return;
    if (sq_scheduler_ != nullptr && ((cursor.producer - qp.sq_consumer) & kCounterMask16) != 0) {
      sq_scheduler_->resume_later(cursor);
      return;
    }
  }
  retire(qpn, qp);
  arm_timer(qp);
}

RdmaEngine::SqStep RdmaEngine::next_wqe(uint32_t qpn, QueuePair& qp, uint32_t producer, uint64_t doorbell_ps,
                                        std::vector<uint8_t>& bytes) {
  const uint32_t available = (producer - qp.sq_consumer) & kCounterMask16;
  SendWqe wqe;
  wqe.wqe_index = uint16_t(qp.sq_consumer);
  if (available > (1u << qp.log_sq_size)) {  // the producer claims more than the ring holds
    ++counters_.bad_wqes;
    qp.sq_consumer = producer & kCounterMask16;  // nothing up to it can be trusted: one error CQE, no flushes
    if (!send_queue_stopped(qp)) requester_error(qpn, qp, wqe, syndrome::kLocalQpOperation);
    return SqStep::kStop;
  }
  // The WQE is prefetched: its read leaves at the doorbell, or once the message before it has
  // started on the wire; the engine waits only if it has not arrived yet.
  // Its doorbell: when the driver rang for it (the trace's doorbell stage, so a replay rings at the
  // same moment), and the fetch not before that ring nor before the doorbell record was read.
  const uint64_t rung_ps = qp.rc.req.doorbells.time_of(qp.sq_consumer);
  uint8_t ds = 0;
  pcie::PipelinedReads prefetch(*f_.memory, std::max({doorbell_ps, rung_ps, prefetch_floor_ps_}));
  const bool fetched = fetch_wqe(prefetch, qp, qp.sq_consumer, bytes, ds);
  const uint64_t parsed_ps = prefetch.ready_ps() + timing_.wqe_parse_ps;
  wait_until(parsed_ps);
  if (!fetched) {
    ++counters_.dma_faults;
    qp.sq_consumer = producer & kCounterMask16;
    if (!send_queue_stopped(qp)) requester_error(qpn, qp, wqe, syndrome::kLocalQpOperation);
    return SqStep::kStop;
  }
  const WqeError parsed = parse_send_wqe(bytes, qp.st, qpn, wqe);
  // A WQE takes its WQEBBs: at least one (ds 0), at most what the producer covers.
  const uint32_t blocks = std::clamp<uint32_t>(wqe.wqebbs(), 1, available);
  if (send_queue_stopped(qp)) {  // WQEs posted after the error are flushed one by one
    qp.sq_consumer = (qp.sq_consumer + blocks) & kCounterMask16;
    ++counters_.flushed_wqes;
    error_cqe(qp.cqn_snd, qpn, wqe.opcode, wqe.wqe_index, syndrome::kWrFlushed, false, user_index_of(qp));
    return SqStep::kFlushed;
  }
  if (parsed != WqeError::kNone || wqe.wqebbs() > available) {
    ++counters_.bad_wqes;
    log().debug("function {}: QP {:#x} WQE {:#x}: {}", f_.identity.vhca_id, qpn, wqe.wqe_index,
                parsed != WqeError::kNone ? wqe_error_name(parsed) : "ds beyond the producer");
    wqe.wqe_index = uint16_t(qp.sq_consumer);
    qp.sq_consumer = (qp.sq_consumer + blocks) & kCounterMask16;  // consumed: the flush starts behind it
    requester_error(qpn, qp, wqe, parsed == WqeError::kTooLong ? syndrome::kLocalLength : syndrome::kLocalQpOperation);
    return SqStep::kStop;
  }
  RequesterPort port(*this, qpn, qp, 0);
  const uint32_t consumed_from = qp.sq_consumer;
  const transport::rc::RequestKind kind = kind_of(wqe.opcode);
  const bool needs_response = kind == transport::rc::RequestKind::kRead || kind == transport::rc::RequestKind::kAtomic;
  const uint32_t depth = 1u << get(qp.context, qpc::kLogSraMax);
  if (qp.st == qp_st::kDci && kind != transport::rc::RequestKind::kNop && !dci_ready_for(qpn, qp, wqe))
    return qp.sq_consumer != consumed_from ? SqStep::kFlushed  // its stream is in error
                                           : SqStep::kStop;    // another DCT: waits for the connection before it
  if (drains_for_signature_error(qpn, qp, wqe)) return SqStep::kStop;
  if (!requester_.admit(qp.rc.req, wqe.fence != 0, port, needs_response, depth))
    return SqStep::kStop;  // fenced, or at its initiator depth: waits for responses
  if (wqe.opcode == wqe_op::kUmr) {  // a memory window bound or a key invalidated, in SQ order
    const BindError error = apply_bind_umr(f_.resources, bytes, qp.pd, qpn);
    if (error != BindError::kNone) {
      ++counters_.mw_bind_errors;
      log().debug("function {}: QP {:#x} WQE {:#x}: memory window bind: {}", f_.identity.vhca_id, qpn, wqe.wqe_index,
                  bind_error_name(error));
      qp.sq_consumer = (qp.sq_consumer + blocks) & kCounterMask16;
      requester_error(qpn, qp, wqe, syndrome::kMwBind);
      return SqStep::kStop;
    }
    ++counters_.mw_binds;
  }
  if (wqe.opcode == wqe_op::kSetPsv && !set_psv(qp, bytes)) {
    qp.sq_consumer = (qp.sq_consumer + blocks) & kCounterMask16;
    requester_error(qpn, qp, wqe, syndrome::kLocalProtection);
    return SqStep::kStop;
  }
  if (post_message(qpn, qp, std::move(wqe), rung_ps != 0 ? rung_ps : doorbell_ps, parsed_ps)) return SqStep::kPosted;
  // Failed and consumed, yet the SQ goes on: only a DCI stream's error does that (rdma/dc.cpp).
  return qp.sq_consumer != consumed_from && !send_queue_stopped(qp) ? SqStep::kFlushed : SqStep::kStop;
}

bool RdmaEngine::post_message(uint32_t qpn, QueuePair& qp, SendWqe&& wqe, uint64_t doorbell_ps, uint64_t parsed_ps) {
  // Local keys are checked before anything goes on the wire. A page of an ODP MR that is not
  // present holds the WQE at the head of the SQ (not consumed) until the driver resumes the fault.
  ProtectionError error = ProtectionError::kNone;
  if (!wqe.has_inline && wqe.opcode != wqe_op::kNop) {
    const uint8_t need = is_read(wqe.opcode) || is_atomic(wqe.opcode) ? access::kLocalWrite : access::kLocalRead;
    std::vector<DmaChunk> chunks;
    uint64_t total = 0;
    error = translate_sges(f_.resources, wqe.sges, qp.pd, need, chunks, total);
  }
  if (error == ProtectionError::kNotPresent && hold_sq_for_pages(qpn, qp, wqe)) return false;
  ++counters_.wqes;
  qp.sq_consumer = (qp.sq_consumer + wqe.wqebbs()) & kCounterMask16;
  if (error != ProtectionError::kNone) {
    ++counters_.local_protection_errors;
    log().debug("function {}: QP {:#x} WQE {:#x}: local key: {}", f_.identity.vhca_id, qpn, wqe.wqe_index,
                protection_error_name(error));
    requester_error(qpn, qp, wqe, syndrome::kLocalProtection);
    return false;
  }
  if (!qp.rc.req.page_fault.progressed()) {
    ++counters_.page_fault_failures;
    requester_error(qpn, qp, wqe, syndrome::kLocalProtection);
    return false;
  }
  // A datagram is one packet: at most the path MTU (mlx5_ib gives UD QPs 4096 in their qpc).
  if (is_datagram(qp) && wqe.length() > (get(qp.context, qpc::kMtu) != 0 ? pmtu_of(qp) : kMaxDatagram)) {
    ++counters_.bad_wqes;
    requester_error(qpn, qp, wqe, syndrome::kLocalLength);
    return false;
  }
  RcRequester& req = qp.rc.req;
  SendMessage message;
  message.wqe = std::move(wqe);
  message.request = work_request(message.wqe);
  message.length = message.wqe.length();
  if (!message.wqe.has_inline && any_signature_key(f_.resources, message.wqe.sges)) {
    SignatureList list;  // its keys were checked above: only its layout can be refused here
    if (list.open(f_.resources, message.wqe.sges, qp.pd, access::kLocalRead) != ProtectionError::kNone ||
        is_read(message.wqe.opcode) || is_atomic(message.wqe.opcode)) {
      ++counters_.local_protection_errors;
      requester_error(qpn, qp, message.wqe, syndrome::kLocalProtection);
      return false;
    }
    message.length = list.wire_length();
  }
  message.doorbell_ps = doorbell_ps;
  requester_.assign_psns(req, requester_qp(qp), message);
  // Trace id: QPN and last PSN, which the responder can name too (remote delivery).
  message.id = message.npsn != 0 ? (uint64_t(qpn) << 24) | message.last_psn() : (uint64_t(1) << 63) | next_message_id_++;
  stamp(qpn, message, RdmaStage::kDoorbell, message.doorbell_ps);
  stamp(qpn, message, RdmaStage::kWqeFetch, parsed_ps);
  req.outstanding.push_back(std::move(message));
  const SendMessage& queued = req.outstanding.back();
  if (queued.npsn != 0) transmit(qpn, qp, req.outstanding.size() - 1, queued.first_psn, parsed_ps);
  return true;
}

void RdmaEngine::transmit(uint32_t qpn, QueuePair& qp, size_t index, uint32_t from_psn, uint64_t issue_ps) {
  if (is_datagram(qp)) {
    transmit_datagram(qpn, qp, qp.rc.req.outstanding[index], issue_ps);
    return;
  }
  RequesterPort port(*this, qpn, qp, issue_ps);
  requester_.transmit(qp.rc.req, requester_qp(qp), index, from_psn, port);
}

void RdmaEngine::retransmit_from(uint32_t qpn, QueuePair& qp, uint32_t psn) {
  qp.rc.req.paced_psn.reset();  // the resend goes over what a pause held, and may pause again
  RequesterPort port(*this, qpn, qp, 0);  // each resent message's reads leave when it starts
  requester_.resend_from(qp.rc.req, requester_qp(qp), psn, port);
  hold_for_pace(qpn, qp, {.qpn = qpn, .reread = true});
}

bool RdmaEngine::hold_for_pace(uint32_t qpn, QueuePair& qp, SqResume cursor) {
  RcRequester& req = qp.rc.req;
  while (req.paced_psn && !send_queue_stopped(qp)) {
    if (const uint64_t until = packet_paced_until(qpn); until != 0) {
      cursor.not_before_ps = until;
      if (!sq_scheduler_->reread_queued(qpn)) sq_scheduler_->resume_later(cursor);
      return true;
    }
    const uint32_t psn = *std::exchange(req.paced_psn, std::nullopt);
    RequesterPort port(*this, qpn, qp, 0);
    requester_.continue_from(req, requester_qp(qp), psn, port);
  }
  req.paced_psn.reset();  // all of it sent, or an error flushes the rest
  return false;
}

void RdmaEngine::requester_cqe(uint32_t qpn, QueuePair& qp, const SendMessage& message) {
  ++counters_.requester_cqes;
  const SendWqe& wqe = message.wqe;
  const CompletionQueue* cq = f_.resources.cqs.find(qp.cqn_snd);
  const uint64_t events_before = cq != nullptr ? cq->completion_events : 0;
  write_cqe(f_, qp.cqn_snd, [&](std::span<uint8_t> cqe) {
    if (is_read(wqe.opcode) || is_atomic(wqe.opcode)) store_be32(&cqe[cqe::kByteCount], uint32_t(message.length));
    fill_requester_cqe(cqe, qpn, wqe.opcode, wqe.wqe_index, user_index_of(qp));
  });
  stamp(qpn, message, RdmaStage::kCqeWrite);
  if (cq != nullptr && cq->completion_events != events_before)  // an armed CQ raised its completion event
    stamp(qpn, message, RdmaStage::kInterrupt);
}

void RdmaEngine::arm_timer(QueuePair& qp) {
  RcRequester& req = qp.rc.req;
  const bool waiting = std::any_of(req.outstanding.begin(), req.outstanding.end(), [](const SendMessage& m) {
    return m.npsn != 0 && !(m.needs_response && m.responded);
  });
  if (!waiting && !req.rnr_wait) {
    req.timer_armed = false;
    return;
  }
  if (req.rnr_wait) return;  // the RNR deadline is already set
  const uint32_t timeout = get(qp.context, qpc::kAckTimeout);
  if (timeout == 0) return;  // 0 = wait for ever (IBA 9.7.6.1.3)
  const auto ib = std::chrono::nanoseconds(uint64_t(4096) << std::min<uint32_t>(timeout, 31));
  req.deadline = make_deadline(timer_policy_, timer_now_ps(), ib, timer_policy_.min_retransmit_wait);
  req.timer_armed = true;
  if (timer_hook_) timer_hook_(req.deadline);
}

uint64_t RdmaEngine::timer_now_ps() const { return timer_clock_ ? timer_clock_() : now_ps(); }

void RdmaEngine::on_timer() {
  const uint64_t now = timer_now_ps();
  const auto wall_now = WallClock::now();
  std::vector<uint32_t> due;
  for (auto& [qpn, qp] : f_.resources.qps)
    if (qp.rc.req.timer_armed && qp.rc.req.deadline.passed(now, wall_now)) due.push_back(qpn);
  for (uint32_t qpn : due) {
    QueuePair* qp = f_.resources.qps.find(qpn);
    if (qp == nullptr || qp->state != QpState::kRts) continue;
    qp->rc.req.timer_armed = false;
    // A message waiting for its pages (ODP) is not lost: the timer waits with it, no retry spent.
    if (qp->rc.req.fault_resend_psn) {
      arm_timer(*qp);
      continue;
    }
    CompleterPort port(*this, qpn, *qp);
    completer_.timeout(qp->rc.req, completer_qp(*qp), port);
  }
  // Timers still pending (other QPs) are re-announced so the owner keeps one deadline.
  for (auto& [qpn, qp] : f_.resources.qps)
    if (qp.rc.req.timer_armed && timer_hook_) timer_hook_(qp.rc.req.deadline);
}

void RdmaEngine::handle_response(uint32_t qpn, QueuePair& qp, const RocePacket& packet) {
  CompleterPort port(*this, qpn, qp);
  completer_.response(qp.rc.req, completer_qp(qp), packet, port);
}

void RdmaEngine::retire(uint32_t qpn, QueuePair& qp) {
  CompleterPort port(*this, qpn, qp);
  completer_.retire(qp.rc.req, completer_qp(qp), port);
}

}  // namespace hcaemu::model
