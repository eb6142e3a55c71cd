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
#include "model/rdma/internal.h"

namespace hcaemu::model {

using namespace rdma_internal;

namespace {

constexpr uint32_t kRetryForever = 7;

// IBA table 45: the RNR NAK timer field in microseconds.
uint32_t rnr_timer_us(uint32_t code) {
  static constexpr std::array<uint32_t, 32> kTable{
      655360, 10,   20,   30,   40,   60,    80,    120,   160,   240,   320,   480,    640,    960,    1280,   1920,
      2560,   3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return kTable[code & 31];
}

uint8_t requester_opcode(uint8_t wqe_opcode, bool first, bool last) {
  const bool only = first && last;
  switch (wqe_opcode) {
    case wqe_op::kSend:
      return only ? op::kRcSendOnly : first ? op::kRcSendFirst : last ? op::kRcSendLast : op::kRcSendMiddle;
    case wqe_op::kSendImm:
      return only ? op::kRcSendOnlyImm : first ? op::kRcSendFirst : last ? op::kRcSendLastImm : op::kRcSendMiddle;
    case wqe_op::kSendInval:
      return only ? op::kRcSendOnlyInvalidate : first ? op::kRcSendFirst : last ? op::kRcSendLastInvalidate : op::kRcSendMiddle;
    case wqe_op::kRdmaWrite:
      return only ? op::kRcRdmaWriteOnly : first ? op::kRcRdmaWriteFirst : last ? op::kRcRdmaWriteLast : op::kRcRdmaWriteMiddle;
    case wqe_op::kRdmaWriteImm:
      return only ? op::kRcRdmaWriteOnlyImm
                  : first ? op::kRcRdmaWriteFirst : last ? op::kRcRdmaWriteLastImm : op::kRcRdmaWriteMiddle;
    case wqe_op::kRdmaRead: return op::kRcRdmaReadRequest;
    case wqe_op::kAtomicCs: return op::kRcCompareSwap;
    case wqe_op::kAtomicFa: return op::kRcFetchAdd;
  }
  return 0xff;
}

uint8_t nak_syndrome_to_cqe(transport::NakCode code) {
  switch (code) {
    case transport::NakCode::kInvalidRequest: return syndrome::kRemoteInvalidRequest;
    case transport::NakCode::kRemoteAccessError: return syndrome::kRemoteAccess;
    case transport::NakCode::kRemoteOperationalError: return syndrome::kRemoteOperation;
    default: return syndrome::kBadResponse;
  }
}

}  // namespace

uint32_t SendMessage::last_psn() const { return psn_add(first_psn, npsn - 1); }

// ---------------------------------------------------------------------------------------------
// Requester

bool RdmaEngine::doorbell(std::span<const uint8_t> data) {
  if (data.size() < 8) return false;
  const uint32_t qpn = load_be32(data.data() + 4) >> 8;
  QueuePair* qp = f_.resources.qps.find(qpn);
  if (qp == nullptr) return false;
  ++counters_.sq_doorbells;
  process_sq(qpn, *qp);
  return true;
}

bool RdmaEngine::fetch_wqe(pcie::HostMemory& memory, QueuePair& qp, uint32_t block, std::vector<uint8_t>& out,
                           uint8_t& ds) {
  // The SQ is a ring of WQEBBs after the RQ in the QP buffer; a WQE running past its end
  // continues at WQEBB 0.
  const uint64_t ring = qp.sq_bytes();
  if (ring == 0) return false;
  auto read = [&](uint64_t at, std::span<uint8_t> dst) {
    const uint64_t start = at % ring;
    const uint64_t first = std::min<uint64_t>(dst.size(), ring - start);
    return qp.buffer.read(memory, qp.sq_offset + start, dst.first(first)) &&
           (first == dst.size() || qp.buffer.read(memory, qp.sq_offset, dst.subspan(first)));
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

void RdmaEngine::process_sq(uint32_t qpn, QueuePair& qp) {
  if (qp.st == qp_st::kRegUmr) return process_umr_sq(qpn, qp);
  if (!reliable_connected(qp.st) && qp.st != qp_st::kUc && !is_datagram(qp)) {
    if (counters_.unsupported_service++ == 0)
      log().warn("function {}: SQ doorbell for QP {:#x} of service type {:#x}: only RC, UC, UD, XRC, QP1 and UMR are modelled",
                 f_.identity.vhca_id, qpn, qp.st);
    return;
  }
  if (qp.state != QpState::kRts && !send_queue_stopped(qp)) return;  // SQD/RTR: hold the WQEs
  RcRequester& req = qp.rc.req;
  if (req.yielding) {  // called again from a frame handled between this QP's messages: the loop goes on
    req.sq_again = true;
    return;
  }
  uint32_t producer = 0;
  if (!read_doorbell_record(f_.memory, qp.dbr_addr + kSqDbrOffset, producer)) {
    ++counters_.dma_faults;
    return;
  }
  const uint32_t sq_blocks = 1u << qp.log_sq_size;
  const uint64_t doorbell_ps = now_ps();
  std::vector<uint8_t> bytes;
  while (((producer - qp.sq_consumer) & kCounterMask16) != 0) {
    const uint32_t available = (producer - qp.sq_consumer) & kCounterMask16;
    if (available > sq_blocks) {  // the producer claims more than the ring holds
      ++counters_.bad_wqes;
      SendWqe none;
      none.wqe_index = uint16_t(qp.sq_consumer);
      qp.sq_consumer = producer & kCounterMask16;  // nothing up to it can be trusted: one error CQE, no flushes
      if (!send_queue_stopped(qp)) requester_error(qpn, qp, none, syndrome::kLocalQpOperation);
      return;
    }
    uint8_t ds = 0;
    SendWqe wqe;
    // The WQE is prefetched: its read leaves at the doorbell, or once the message before it has
    // started on the wire; the engine waits only if it has not arrived yet.
    pcie::PipelinedReads prefetch(*f_.memory, std::max(doorbell_ps, prefetch_floor_ps_));
    const bool fetched = fetch_wqe(prefetch, qp, qp.sq_consumer, bytes, ds);
    const uint64_t parsed_ps = prefetch.ready_ps() + timing_.wqe_parse_ps;
    wait_until(parsed_ps);
    if (!fetched) {
      ++counters_.dma_faults;
      wqe.wqe_index = uint16_t(qp.sq_consumer);
      qp.sq_consumer = producer & kCounterMask16;
      if (!send_queue_stopped(qp)) requester_error(qpn, qp, wqe, syndrome::kLocalQpOperation);
      return;
    }
    const WqeError parsed = parse_send_wqe(bytes, qp.st, qpn, wqe);
    // A WQE takes its WQEBBs: at least one (ds 0), at most what the producer covers.
    const uint32_t blocks = std::clamp<uint32_t>(wqe.wqebbs(), 1, available);
    if (send_queue_stopped(qp)) {  // WQEs posted after the error are flushed one by one
      qp.sq_consumer = (qp.sq_consumer + blocks) & kCounterMask16;
      ++counters_.flushed_wqes;
      error_cqe(qp.cqn_snd, qpn, wqe.opcode, wqe.wqe_index, syndrome::kWrFlushed, false);
      continue;
    }
    if (parsed != WqeError::kNone || wqe.wqebbs() > available) {
      ++counters_.bad_wqes;
      log().debug("function {}: QP {:#x} WQE {:#x}: {}", f_.identity.vhca_id, qpn, wqe.wqe_index,
                  parsed != WqeError::kNone ? wqe_error_name(parsed) : "ds beyond the producer");
      wqe.wqe_index = uint16_t(qp.sq_consumer);
      qp.sq_consumer = (qp.sq_consumer + blocks) & kCounterMask16;  // consumed: the flush starts behind it
      requester_error(qpn, qp, wqe, parsed == WqeError::kTooLong ? syndrome::kLocalLength : syndrome::kLocalQpOperation);
      return;
    }
    // A fenced WQE waits until every READ and atomic before it has its response.
    if (wqe.fence != 0 && std::any_of(req.outstanding.begin(), req.outstanding.end(),
                                      [](const SendMessage& m) { return m.needs_response && !m.responded; })) {
      req.fence_blocked = true;
      return;
    }
    req.fence_blocked = false;
    ++counters_.wqes;
    SendMessage message;
    message.wqe = std::move(wqe);
    message.length = message.wqe.length();
    message.doorbell_ps = doorbell_ps;
    const uint64_t fetched_ps = parsed_ps;
    // Local keys are checked before anything goes on the wire.
    if (!message.wqe.has_inline && message.wqe.opcode != wqe_op::kNop) {
      const uint8_t need = is_read(message.wqe.opcode) || is_atomic(message.wqe.opcode) ? access::kLocalWrite : access::kLocalRead;
      std::vector<DmaChunk> chunks;
      uint64_t total = 0;
      const ProtectionError error = translate_sges(f_.resources, message.wqe.sges, qp.pd, need, chunks, total);
      if (error != ProtectionError::kNone) {
        ++counters_.local_protection_errors;
        log().debug("function {}: QP {:#x} WQE {:#x}: local key: {}", f_.identity.vhca_id, qpn, message.wqe.wqe_index,
                    protection_error_name(error));
        qp.sq_consumer = (qp.sq_consumer + message.wqe.wqebbs()) & kCounterMask16;
        requester_error(qpn, qp, message.wqe, syndrome::kLocalProtection);
        return;
      }
    }
    qp.sq_consumer = (qp.sq_consumer + message.wqe.wqebbs()) & kCounterMask16;
    const uint32_t pmtu = pmtu_of(qp);
    // A datagram is one packet: at most the path MTU (mlx5_ib gives UD QPs 4096 in their qpc).
    if (is_datagram(qp) && message.length > (get(qp.context, qpc::kMtu) != 0 ? pmtu : kMaxDatagram)) {
      ++counters_.bad_wqes;
      requester_error(qpn, qp, message.wqe, syndrome::kLocalLength);
      return;
    }
    if (message.wqe.opcode == wqe_op::kNop) {
      message.npsn = 0;
      message.first_psn = req.next_psn;
    } else {
      message.needs_response = is_read(message.wqe.opcode) || is_atomic(message.wqe.opcode);
      message.npsn = is_atomic(message.wqe.opcode) || is_datagram(qp) ? 1 : packets_for(message.length, pmtu);
      message.first_psn = req.next_psn;
      message.read_next_psn = message.first_psn;
      req.next_psn = psn_add(req.next_psn, message.npsn);
    }
    // Trace id: QPN and last PSN, which the responder can name too (remote delivery).
    message.id = message.npsn != 0 ? (uint64_t(qpn) << 24) | message.last_psn() : (uint64_t(1) << 63) | next_message_id_++;
    stamp(qpn, message, RdmaStage::kDoorbell, message.doorbell_ps);
    stamp(qpn, message, RdmaStage::kWqeFetch, fetched_ps);
    req.outstanding.push_back(std::move(message));
    SendMessage& queued = req.outstanding.back();
    if (queued.npsn != 0) transmit(qpn, qp, queued, queued.first_psn, parsed_ps);
    if (send_queue_stopped(qp)) return;
    // Between messages, frames that have arrived (ACKs above all) are handled, as the completer
    // and responder of a real HCA run beside its requester. Whatever they did to this QP (an error
    // and its flush, new WQEs) the loop picks up with a fresh producer index.
    if (yield_hook_) {
      req.yielding = true;
      const bool handled = yield_hook_();
      req.yielding = false;
      if (handled && (req.sq_again || send_queue_stopped(qp))) {
        pcie::PipelinedReads reread(*f_.memory, now_ps());  // the doorbell record, no time spent
        if (!read_doorbell_record(&reread, qp.dbr_addr + kSqDbrOffset, producer)) {
          ++counters_.dma_faults;
          return;
        }
      }
      req.sq_again = false;
    }
  }
  retire(qpn, qp);
  arm_timer(qp);
}

void RdmaEngine::transmit(uint32_t qpn, QueuePair& qp, SendMessage& message, uint32_t from_psn, uint64_t issue_ps) {
  if (is_datagram(qp)) {
    transmit_datagram(qpn, qp, message, issue_ps);
    return;
  }
  const SendWqe& wqe = message.wqe;
  const uint32_t pmtu = pmtu_of(qp);
  RocePacket packet;
  if (!address(qp, packet)) {
    requester_error(qpn, qp, wqe, syndrome::kLocalQpOperation);
    return;
  }
  const uint32_t skip = uint32_t(psn_diff(from_psn, message.first_psn));
  const bool unreliable = qp.st == qp_st::kUc;  // UC: same packets, opcodes at 0x20, never an ACK
  const uint8_t base = opcode_base(qp.st);
  packet.xrc_srqn = wqe.xrc_srqn;  // XRC: every request names the SRQ at the target
  if (is_read(wqe.opcode) || is_atomic(wqe.opcode)) {
    // One request; a resent READ asks only for the responses still missing.
    packet.opcode = uint8_t(requester_opcode(wqe.opcode, true, true) | base);
    packet.psn = from_psn;
    packet.ack_req = true;
    if (is_read(wqe.opcode)) {
      const uint64_t done = uint64_t(skip) * pmtu;
      packet.reth = {.va = wqe.remote_va + done, .rkey = wqe.rkey, .dma_length = uint32_t(message.length - done)};
    } else {
      packet.atomic = {.va = wqe.remote_va, .rkey = wqe.rkey, .swap_add = wqe.swap_add, .compare = wqe.compare};
    }
    send_frame(packet);
    prefetch_floor_ps_ = now_ps();
    if (skip == 0) stamp(qpn, message, RdmaStage::kWireFirstPacket);
    return;
  }
  std::vector<DmaChunk> chunks;
  uint64_t total = 0;
  if (!wqe.has_inline && translate_sges(f_.resources, wqe.sges, qp.pd, access::kLocalRead, chunks, total) !=
                             ProtectionError::kNone) {
    ++counters_.local_protection_errors;
    requester_error(qpn, qp, wqe, syndrome::kLocalProtection);
    return;
  }
  // Payload is read packet by packet, all reads pipelined from issue_ps: a packet waits only for
  // its own bytes, so the reads overlap the wire.
  if (f_.memory == nullptr) {  // the host went away
    ++counters_.dma_faults;
    return;
  }
  pcie::PipelinedReads reads(*f_.memory, issue_ps);
  std::vector<uint8_t> payload;
  for (uint32_t i = skip; i < message.npsn; ++i) {
    const uint64_t offset = uint64_t(i) * pmtu;
    const uint32_t size = uint32_t(std::min<uint64_t>(pmtu, message.length - std::min(offset, message.length)));
    const bool first = i == 0, last = i + 1 == message.npsn;
    uint64_t ready_ps = 0;
    if (!wqe.has_inline && size != 0) {
      payload.resize(size);
      if (!read_chunks(reads, chunks, offset, payload)) {
        ++counters_.dma_faults;
        requester_error(qpn, qp, wqe, syndrome::kLocalProtection);
        return;
      }
      ready_ps = reads.ready_ps();
      if (i == 0) stamp(qpn, message, RdmaStage::kPayloadDma, ready_ps);
    }
    packet.opcode = uint8_t(requester_opcode(wqe.opcode, first, last) | base);
    packet.psn = psn_add(message.first_psn, i);
    packet.ack_req = last && !unreliable;
    packet.solicited = last && wqe.solicited;
    if (first && (wqe.opcode == wqe_op::kRdmaWrite || wqe.opcode == wqe_op::kRdmaWriteImm))
      packet.reth = {.va = wqe.remote_va, .rkey = wqe.rkey, .dma_length = uint32_t(message.length)};
    packet.immediate = wqe.imm;
    packet.invalidate_rkey = wqe.imm;
    if (wqe.has_inline)
      packet.payload = std::span<const uint8_t>(wqe.inline_data).subspan(size_t(offset), size);
    else
      packet.payload = std::span<const uint8_t>(payload).first(size);
    send_frame(packet, ready_ps);
    if (i == skip) prefetch_floor_ps_ = now_ps();
    if (i == 0) stamp(qpn, message, RdmaStage::kWireFirstPacket);
    if (send_queue_stopped(qp)) return;
  }
}

void RdmaEngine::retransmit_from(uint32_t qpn, QueuePair& qp, uint32_t psn) {
  RcRequester& req = qp.rc.req;
  for (SendMessage& message : req.outstanding) {
    if (message.npsn == 0 || (message.needs_response && message.responded)) continue;
    if (psn_diff(message.last_psn(), psn) < 0) continue;  // entirely before the resend point
    uint32_t from = psn_diff(psn, message.first_psn) > 0 ? psn : message.first_psn;
    if (is_read(message.wqe.opcode) && psn_diff(message.read_next_psn, from) > 0) from = message.read_next_psn;
    ++counters_.retransmits;
    transmit(qpn, qp, message, from, now_ps());
    if (send_queue_stopped(qp)) return;
  }
}

uint32_t RdmaEngine::resend_point(const RcRequester& req, uint32_t psn) {
  for (const SendMessage& m : req.outstanding)
    if (m.needs_response && !m.responded && psn_diff(m.first_psn, psn) < 0)
      return is_read(m.wqe.opcode) ? m.read_next_psn : m.first_psn;
  return psn;
}

bool RdmaEngine::implied_nak(uint32_t qpn, QueuePair& qp, uint32_t psn, bool plain_ack) {
  RcRequester& req = qp.rc.req;
  for (const SendMessage& m : req.outstanding) {
    if (!m.needs_response || m.responded) continue;
    const int32_t past = psn_diff(psn, m.last_psn());
    if (past < 0 || (past == 0 && !plain_ack)) return false;  // the first one waiting is not overtaken
    const uint32_t from = is_read(m.wqe.opcode) ? m.read_next_psn : m.first_psn;
    if (req.implied_resend && req.implied_psn == from) return true;  // resent already: wait for it
    ++counters_.sequence_errors;
    count(qp, q_counter::kImpliedNakSeqErr);
    if (req.retries_left == 0) {
      requester_error(qpn, qp, m.wqe, syndrome::kRetryExceeded);
      return true;
    }
    --req.retries_left;
    req.implied_resend = true;
    req.implied_psn = from;
    retransmit_from(qpn, qp, from);
    return true;
  }
  return false;
}

void RdmaEngine::retire(uint32_t qpn, QueuePair& qp) {
  RcRequester& req = qp.rc.req;
  bool progressed = false;
  while (!req.outstanding.empty()) {
    SendMessage& front = req.outstanding.front();
    // A UC message or a datagram is complete once it is on the wire (IBA 9.7.7: no acknowledgement).
    const bool unreliable = qp.st == qp_st::kUc || is_datagram(qp);
    const bool done = front.npsn == 0 || unreliable ||
                      (front.needs_response ? front.responded : psn_diff(front.last_psn(), req.acked_psn) <= 0);
    if (!done) break;
    if (!front.needs_response && front.npsn != 0 && !unreliable) stamp(qpn, front, RdmaStage::kAck);
    if (front.wqe.signalled) requester_cqe(qpn, qp, front);
    ++counters_.messages_completed;
    req.outstanding.pop_front();
    progressed = true;
  }
  if (progressed) {
    req.retries_left = get(qp.context, qpc::kRetryCount);
    req.implied_resend = false;
    if (req.fence_blocked) process_sq(qpn, qp);
  }
}

void RdmaEngine::requester_cqe(uint32_t qpn, QueuePair& qp, const SendMessage& message) {
  ++counters_.requester_cqes;
  const SendWqe& wqe = message.wqe;
  const CompletionQueue* cq = f_.resources.cqs.find(qp.cqn_snd);
  const uint64_t events_before = cq != nullptr ? cq->completion_events : 0;
  write_cqe(f_, qp.cqn_snd, [&](std::span<uint8_t> cqe) {
    if (is_read(wqe.opcode) || is_atomic(wqe.opcode)) store_be32(&cqe[cqe::kByteCount], uint32_t(message.length));
    fill_requester_cqe(cqe, qpn, wqe.opcode, wqe.wqe_index);
  });
  stamp(qpn, message, RdmaStage::kCqeWrite);
  cq = f_.resources.cqs.find(qp.cqn_snd);  // an armed CQ raised its completion event
  if (cq != nullptr && cq->completion_events != events_before) stamp(qpn, message, RdmaStage::kInterrupt);
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
    RcRequester& req = qp->rc.req;
    req.timer_armed = false;
    if (req.rnr_wait) {
      req.rnr_wait = false;
      retransmit_from(qpn, *qp, req.rnr_psn);
    } else if (!req.outstanding.empty()) {
      ++counters_.timeouts;
      count(*qp, q_counter::kLocalAckTimeoutErr);
      if (req.retries_left == 0) {
        requester_error(qpn, *qp, req.outstanding.front().wqe, syndrome::kRetryExceeded);
        continue;
      }
      --req.retries_left;
      retransmit_from(qpn, *qp, resend_point(req, psn_add(req.acked_psn, 1)));
    }
    if (qp->state == QpState::kRts) arm_timer(*qp);
  }
  // Timers still pending (other QPs) are re-announced so the owner keeps one deadline.
  for (auto& [qpn, qp] : f_.resources.qps)
    if (qp.rc.req.timer_armed && timer_hook_) timer_hook_(qp.rc.req.deadline);
}

void RdmaEngine::handle_response(uint32_t qpn, QueuePair& qp, const RocePacket& packet) {
  RcRequester& req = qp.rc.req;
  const uint8_t opcode = uint8_t(packet.opcode & ~opcode_base(qp.st));  // XRC responses are RC's at 0xa0
  const bool has_aeth = transport::carries(opcode, transport::hdr::kAeth);
  // A response for a PSN we never sent (or long retired) is dropped.
  if (psn_diff(packet.psn, req.next_psn) >= 0) {
    ++counters_.duplicates;
    return;
  }
  if (opcode == op::kRcAcknowledge) {
    const uint8_t syn = packet.aeth.syndrome;
    switch (transport::aeth_type(syn)) {
      case transport::AethType::kAck:
        ++counters_.acks_received;
        if (psn_diff(packet.psn, req.acked_psn) > 0) {
          req.acked_psn = packet.psn;
          req.retries_left = get(qp.context, qpc::kRetryCount);  // forward progress (IBA 9.7.6.1.3)
        }
        req.rnr_retries_left = get(qp.context, qpc::kRnrRetry);
        implied_nak(qpn, qp, packet.psn, true);
        if (send_queue_stopped(qp)) return;
        break;
      case transport::AethType::kRnrNak: {
        ++counters_.rnr_naks_received;
        count(qp, q_counter::kRnrNakRetryErr);
        req.acked_psn = psn_add(packet.psn, transport::kPsnMask);  // everything before it arrived
        retire(qpn, qp);
        if (req.rnr_retries_left != kRetryForever) {
          if (req.rnr_retries_left == 0) {
            if (!req.outstanding.empty()) requester_error(qpn, qp, req.outstanding.front().wqe, syndrome::kRnrRetryExceeded);
            return;
          }
          --req.rnr_retries_left;
        }
        req.rnr_wait = true;
        req.rnr_psn = packet.psn;
        const auto wait = std::chrono::microseconds(rnr_timer_us(transport::aeth_value(syn)));
        req.deadline = make_deadline(timer_policy_, timer_now_ps(), wait, timer_policy_.min_rnr_wait);
        req.timer_armed = true;
        if (timer_hook_) timer_hook_(req.deadline);
        return;
      }
      case transport::AethType::kNak: {
        ++counters_.naks_received;
        const auto code = transport::NakCode(transport::aeth_value(syn));
        if (psn_diff(psn_add(packet.psn, transport::kPsnMask), req.acked_psn) > 0) {
          req.acked_psn = psn_add(packet.psn, transport::kPsnMask);
          req.retries_left = get(qp.context, qpc::kRetryCount);  // everything before it arrived: progress
        }
        retire(qpn, qp);
        if (code == transport::NakCode::kPsnSequenceError) {
          ++counters_.sequence_errors;
          count(qp, q_counter::kPacketSeqErr);
          if (req.retries_left == 0) {
            if (!req.outstanding.empty()) requester_error(qpn, qp, req.outstanding.front().wqe, syndrome::kRetryExceeded);
            return;
          }
          --req.retries_left;
          // A READ or atomic before the NAK's PSN that still waits for its response was received
          // (the NAK says so) but its response was lost: the resend starts there, not at the NAK.
          retransmit_from(qpn, qp, resend_point(req, packet.psn));
          arm_timer(qp);
          return;
        }
        // Invalid request, remote access or remote operational error: the WQE at that PSN fails.
        auto failed = std::find_if(req.outstanding.begin(), req.outstanding.end(), [&](const SendMessage& m) {
          return m.npsn != 0 && psn_diff(packet.psn, m.first_psn) >= 0 && psn_diff(packet.psn, m.last_psn()) <= 0;
        });
        const SendWqe wqe = failed != req.outstanding.end() ? failed->wqe
                            : req.outstanding.empty()         ? SendWqe{}
                                                              : req.outstanding.front().wqe;
        requester_error(qpn, qp, wqe, nak_syndrome_to_cqe(code));
        return;
      }
      default:
        ++counters_.invalid_requests;
        return;
    }
    retire(qpn, qp);
    arm_timer(qp);
    return;
  }
  // READ responses and atomic ACKs belong to the message whose PSN range holds their PSN.
  auto it = std::find_if(req.outstanding.begin(), req.outstanding.end(), [&](const SendMessage& m) {
    return m.needs_response && !m.responded && psn_diff(packet.psn, m.first_psn) >= 0 &&
           psn_diff(packet.psn, m.last_psn()) <= 0;
  });
  if (it == req.outstanding.end()) {
    ++counters_.duplicates;
    return;
  }
  // A response for a later READ or atomic than one still waiting: the earlier one's was lost.
  if (implied_nak(qpn, qp, packet.psn, false)) return;
  SendMessage& message = *it;
  // Everything before this message is implicitly acknowledged by its response.
  if (psn_diff(psn_add(message.first_psn, transport::kPsnMask), req.acked_psn) > 0)
    req.acked_psn = psn_add(message.first_psn, transport::kPsnMask);
  const bool read_response = opcode >= op::kRcRdmaReadResponseFirst && opcode <= op::kRcRdmaReadResponseOnly;
  if (read_response != is_read(message.wqe.opcode) ||
      (opcode == op::kRcAtomicAcknowledge) != is_atomic(message.wqe.opcode)) {
    ++counters_.invalid_requests;
    requester_error(qpn, qp, message.wqe, syndrome::kBadResponse);
    return;
  }
  if (has_aeth && transport::aeth_type(packet.aeth.syndrome) != transport::AethType::kAck) {
    ++counters_.invalid_requests;
    return;
  }
  std::vector<DmaChunk> chunks;
  uint64_t total = 0;
  if (translate_sges(f_.resources, message.wqe.sges, qp.pd, access::kLocalWrite, chunks, total) != ProtectionError::kNone) {
    ++counters_.local_protection_errors;
    requester_error(qpn, qp, message.wqe, syndrome::kLocalProtection);
    return;
  }
  if (read_response) {
    if (packet.psn != message.read_next_psn) {  // a response went missing: ask again from there
      ++counters_.sequence_errors;
      retransmit_from(qpn, qp, message.read_next_psn);
      return;
    }
    const uint32_t pmtu = pmtu_of(qp);
    const uint64_t offset = uint64_t(psn_diff(packet.psn, message.first_psn)) * pmtu;
    const bool last = opcode == op::kRcRdmaReadResponseLast || opcode == op::kRcRdmaReadResponseOnly;
    const uint64_t expected = last ? message.length - offset : pmtu;
    if (offset > message.length || packet.payload.size() != expected) {
      requester_error(qpn, qp, message.wqe, syndrome::kBadResponse);
      return;
    }
    if (!packet.payload.empty() && (f_.memory == nullptr || !write_chunks(*f_.memory, chunks, offset, packet.payload))) {
      ++counters_.dma_faults;
      requester_error(qpn, qp, message.wqe, syndrome::kLocalProtection);
      return;
    }
    message.read_next_psn = psn_add(message.read_next_psn, 1);
    if (last) message.responded = true;
  } else {
    // The original value, in host byte order (the driver asked for host-endian atomics).
    std::array<uint8_t, 8> original{};
    for (int i = 0; i < 8; ++i) original[i] = uint8_t(packet.atomic_ack >> (8 * i));
    if (f_.memory == nullptr || !write_chunks(*f_.memory, chunks, 0, original)) {
      ++counters_.dma_faults;
      requester_error(qpn, qp, message.wqe, syndrome::kLocalProtection);
      return;
    }
    message.responded = true;
  }
  if (message.responded) {
    stamp(qpn, message, RdmaStage::kAck);
    if (psn_diff(message.last_psn(), req.acked_psn) > 0) req.acked_psn = message.last_psn();
  }
  retire(qpn, qp);
  arm_timer(qp);
}

}  // namespace hcaemu::model
