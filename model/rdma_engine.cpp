#include "model/rdma_engine.h"

#include <algorithm>
#include <array>

#include "common/endian.h"
#include "common/log.h"
#include "model/bits.h"
#include "model/completion_queue.h"
#include "model/doorbell_unit.h"
#include "model/function_context.h"
#include "model/memory_protection.h"
#include "model/rdma_internal.h"
#include "model/recv_wqe.h"
#include "pcie/model_time.h"
#include "transport/ib_opcodes.h"

namespace hcaemu::model {

namespace op = transport::opcode;
using transport::psn_add;
using transport::psn_diff;
using transport::RocePacket;
using namespace rdma_internal;

namespace {

constexpr uint32_t kRetryForever = 7;
// Timers run on the wall clock: model time races ahead whenever the kernel is idle, while the
// peer that has to post a receive or answer is a guest running at emulation speed.
constexpr auto kMinRetransmitWait = std::chrono::milliseconds(200);
constexpr auto kMinRnrWait = std::chrono::milliseconds(1);

uint32_t pmtu_of(const QueuePair& qp) {
  const uint32_t mtu = get(qp.context, qpc::kMtu);
  return mtu >= 1 && mtu <= 5 ? 256u << (mtu - 1) : 1024u;
}

uint32_t packets_for(uint64_t length, uint32_t pmtu) { return length == 0 ? 1 : uint32_t((length + pmtu - 1) / pmtu); }

bool is_read(uint8_t opcode) { return opcode == wqe_op::kRdmaRead; }
bool is_atomic(uint8_t opcode) { return opcode == wqe_op::kAtomicCs || opcode == wqe_op::kAtomicFa; }

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
// Shared helpers

void RdmaEngine::stamp(uint32_t qpn, const SendMessage& message, RdmaStage stage, uint64_t time_ps) {
  if (stage_hook_)
    stage_hook_({.time_ps = time_ps, .qpn = qpn, .message = message.id, .opcode = message.wqe.opcode,
                 .bytes = uint32_t(message.length), .stage = stage});
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
  ack.opcode = op::kRcAtomicAcknowledge;
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

bool RdmaEngine::address(QueuePair& qp, RocePacket& packet) {
  if (!source_address(get(qp.context, qpc::kSrcAddrIndex), packet)) return false;
  std::copy_n(qp.context.begin() + qpc::kRgid, 16, packet.dst_gid.begin());
  const uint64_t rmac = (uint64_t(get(qp.context, qpc::kRmacHigh)) << 32) | get(qp.context, qpc::kRmacLow);
  for (int i = 0; i < 6; ++i) packet.dst_mac[i] = uint8_t(rmac >> (40 - 8 * i));
  const uint32_t dscp = get(qp.context, qpc::kDscp);
  packet.traffic_class = uint8_t(dscp != 0 ? dscp << 2 : get(qp.context, qpc::kTclass));
  const uint32_t hop_limit = get(qp.context, qpc::kHopLimit);
  packet.hop_limit = uint8_t(hop_limit != 0 ? hop_limit : 64);
  packet.flow_label = get(qp.context, qpc::kFlowLabel);
  const uint32_t sport = get(qp.context, qpc::kUdpSport);
  packet.udp_sport = uint16_t(sport != 0 ? sport : transport::kDefaultUdpSourcePort);
  packet.dest_qp = get(qp.context, qpc::kRemoteQpn);
  return true;
}

bool RdmaEngine::send_frame(RocePacket& packet, uint64_t inputs_ready_ps) {
  std::vector<uint8_t> frame = transport::build_frame(packet);
  // The pipeline builds a packet while the one before it is on the wire: it leaves when the wire
  // is free (this thread's now) or when its inputs are there plus the pipeline's time, the later.
  const uint64_t now = now_ps();
  const uint64_t depart = std::max(now, (inputs_ready_ps != 0 ? inputs_ready_ps : now) + timing_.per_packet_tx_ps);
  pcie::consume_model_time(sc_core::sc_time(double(depart - now), sc_core::SC_PS));
  // Serialisation at the port rate (preamble, SFD, FCS and inter-frame gap included).
  const double wire_ns = double(frame.size() + 24) * 8.0 / timing_.link_gbps;
  pcie::consume_model_time(sc_core::sc_time(wire_ns, sc_core::SC_NS));
  if (port_ == nullptr) {
    ++counters_.tx_no_port;
    return false;
  }
  ++counters_.tx_packets;
  counters_.tx_bytes += frame.size();
  port_->transmit(frame);
  return true;
}

void RdmaEngine::error_cqe(uint32_t cqn, uint32_t qpn, uint8_t opcode, uint16_t wqe_index, uint8_t syn,
                           bool responder) {
  ++counters_.error_cqes;
  write_cqe(
      f_, cqn,
      [&](std::span<uint8_t> cqe) {
        cqe[cqe::kErrSyndrome] = syn;
        cqe[cqe::kVendorErrSyndrome] = syn == syndrome::kWrFlushed ? 0xf9 : 0x00;
        store_be32(&cqe[cqe::kSopDropQpn], (uint32_t(opcode) << 24) | (qpn & 0xffffff));
        store_be16(&cqe[cqe::kWqeCounter], wqe_index);
        cqe[cqe::kOpOwn] = uint8_t((responder ? cqe::kResponderError : cqe::kRequesterError) << 4);
      },
      true);
}

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
  if (qp.st != qp_st::kRc && qp.st != qp_st::kUc && !is_datagram(qp)) {
    // The XRC data path is not modelled: its WQEs stay unconsumed (logged once).
    if (counters_.unsupported_service++ == 0)
      log().warn("function {}: SQ doorbell for QP {:#x} of service type {:#x}: only RC, UC, UD and QP1 are modelled",
                 f_.identity.vhca_id, qpn, qp.st);
    return;
  }
  if (qp.state != QpState::kRts && qp.state != QpState::kError) return;  // SQD/RTR: hold the WQEs
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
      if (qp.state != QpState::kError) requester_error(qpn, qp, none, syndrome::kLocalQpOperation);
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
      if (qp.state != QpState::kError) requester_error(qpn, qp, wqe, syndrome::kLocalQpOperation);
      return;
    }
    const WqeError parsed = parse_send_wqe(bytes, qp.st, qpn, wqe);
    // A WQE takes its WQEBBs: at least one (ds 0), at most what the producer covers.
    const uint32_t blocks = std::clamp<uint32_t>(wqe.wqebbs(), 1, available);
    if (qp.state == QpState::kError) {  // WQEs posted after the error are flushed one by one
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
    if (qp.state == QpState::kError) return;
    // Between messages, frames that have arrived (ACKs above all) are handled, as the completer
    // and responder of a real HCA run beside its requester. Whatever they did to this QP (an error
    // and its flush, new WQEs) the loop picks up with a fresh producer index.
    if (yield_hook_) {
      req.yielding = true;
      const bool handled = yield_hook_();
      req.yielding = false;
      if (handled && (req.sq_again || qp.state == QpState::kError)) {
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
  if (is_read(wqe.opcode) || is_atomic(wqe.opcode)) {
    // One request; a resent READ asks only for the responses still missing.
    packet.opcode = requester_opcode(wqe.opcode, true, true);
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
    packet.opcode = uint8_t(requester_opcode(wqe.opcode, first, last) | (unreliable ? kUcOpcodeBase : 0));
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
    if (qp.state == QpState::kError) return;
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
    if (qp.state == QpState::kError) return;
  }
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
    store_be32(&cqe[cqe::kSopDropQpn], (uint32_t(wqe.opcode) << 24) | (qpn & 0xffffff));
    store_be16(&cqe[cqe::kWqeCounter], wqe.wqe_index);
    cqe[cqe::kOpOwn] = uint8_t(cqe::kRequester << 4);
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
  req.deadline = WallClock::now() + std::max<WallClock::duration>(ib, kMinRetransmitWait);
  req.timer_armed = true;
  if (timer_hook_) timer_hook_(req.deadline);
}

void RdmaEngine::on_timer() {
  const auto now = WallClock::now();
  std::vector<uint32_t> due;
  for (auto& [qpn, qp] : f_.resources.qps)
    if (qp.rc.req.timer_armed && qp.rc.req.deadline <= now) due.push_back(qpn);
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
      if (req.retries_left == 0) {
        requester_error(qpn, *qp, req.outstanding.front().wqe, syndrome::kRetryExceeded);
        continue;
      }
      --req.retries_left;
      retransmit_from(qpn, *qp, psn_add(req.acked_psn, 1));
    }
    if (qp->state == QpState::kRts) arm_timer(*qp);
  }
  // Timers still pending (other QPs) are re-announced so the owner keeps one deadline.
  for (auto& [qpn, qp] : f_.resources.qps)
    if (qp.rc.req.timer_armed && timer_hook_) timer_hook_(qp.rc.req.deadline);
}

void RdmaEngine::handle_response(uint32_t qpn, QueuePair& qp, const RocePacket& packet) {
  RcRequester& req = qp.rc.req;
  const uint8_t opcode = packet.opcode;
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
        if (psn_diff(packet.psn, req.acked_psn) > 0) req.acked_psn = packet.psn;
        req.rnr_retries_left = get(qp.context, qpc::kRnrRetry);
        break;
      case transport::AethType::kRnrNak: {
        ++counters_.rnr_naks_received;
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
        req.deadline = WallClock::now() + std::max<WallClock::duration>(wait, kMinRnrWait);
        req.timer_armed = true;
        if (timer_hook_) timer_hook_(req.deadline);
        return;
      }
      case transport::AethType::kNak: {
        ++counters_.naks_received;
        const auto code = transport::NakCode(transport::aeth_value(syn));
        req.acked_psn = psn_add(packet.psn, transport::kPsnMask);
        retire(qpn, qp);
        if (code == transport::NakCode::kPsnSequenceError) {
          ++counters_.sequence_errors;
          if (req.retries_left == 0) {
            if (!req.outstanding.empty()) requester_error(qpn, qp, req.outstanding.front().wqe, syndrome::kRetryExceeded);
            return;
          }
          --req.retries_left;
          retransmit_from(qpn, qp, packet.psn);
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

bool RdmaEngine::take_srq_wqe(QueuePair& qp) {
  RcResponder& resp = qp.rc.resp;
  SharedReceiveQueue* srq = f_.resources.srqs.find(qp.srqn);
  if (srq == nullptr || srq->kind == SrqKind::kXrcSrq) return false;
  const uint32_t index = srq->head & ((1u << srq->log_size) - 1);
  std::vector<uint8_t> bytes;
  if (!read_posted_receive(srq->dbr_addr, srq->consumed, srq->buffer, srq->log_stride, index, bytes)) return false;
  srq = f_.resources.srqs.find(qp.srqn);  // the read spent model time
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
  if (qp.rq_type == rq_type::kSrq) return take_srq_wqe(qp);
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
  packet.opcode = op::kRcAcknowledge;
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
      translate(f_.resources, rkey, qp.pd, va, length, access::kRemoteRead, chunks) != ProtectionError::kNone)
    return;  // checked by the caller for new requests; a duplicate whose MR went is dropped
  RocePacket packet;
  if (!address(qp, packet) || f_.memory == nullptr) return;
  pcie::PipelinedReads reads(*f_.memory, now_ps());  // responses stream as their bytes arrive
  std::vector<uint8_t> payload;
  for (uint32_t i = 0; i < count; ++i) {
    const bool first = i == 0, last = i + 1 == count;
    packet.opcode = first && last ? op::kRcRdmaReadResponseOnly
                    : first       ? op::kRcRdmaReadResponseFirst
                    : last        ? op::kRcRdmaReadResponseLast
                                  : op::kRcRdmaReadResponseMiddle;
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
  // UC opcodes are RC's SEND/WRITE ones plus 0x20: the checks below speak RC.
  const uint8_t opcode = unreliable ? uint8_t(packet.opcode & ~kUcOpcodeBase) : packet.opcode;
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
    if (!resp.sequence_nak_sent) {
      resp.sequence_nak_sent = true;
      reply(resp.epsn, transport::aeth_nak(transport::NakCode::kPsnSequenceError));
    }
    return;
  }
  if (distance < 0) {  // a duplicate: answer again, change nothing
    ++counters_.duplicates;
    if (opcode == op::kRcRdmaReadRequest) {
      send_read_responses(qpn, qp, packet.psn, packet.reth.va, packet.reth.rkey, packet.reth.dma_length);
    } else if (opcode == op::kRcCompareSwap || opcode == op::kRcFetchAdd) {
      if (resp.atomic_valid && resp.atomic_psn == packet.psn) send_atomic_ack(qp, packet.psn, resp.atomic_original);
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
        allowed ? translate(f_.resources, rkey, qp.pd, va, length, read ? access::kRemoteRead : access::kAtomic, chunks)
                : ProtectionError::kAccess;
    if (error != ProtectionError::kNone) {
      ++counters_.remote_access_errors;
      reply(packet.psn, transport::aeth_nak(transport::NakCode::kRemoteAccessError));
      responder_error(qpn, qp, syndrome::kRemoteAccess, false);
      return;
    }
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
    resp.atomic_valid = true;
    resp.atomic_psn = packet.psn;
    resp.atomic_original = original;
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
    resp.write_va = packet.reth.va;
    resp.write_rkey = packet.reth.rkey;
    resp.write_length = packet.reth.dma_length;
    resp.offset = 0;
    resp.have_wqe = false;
  }
  // A receive WQE is needed before anything lands for a SEND (and at the end of a WRITE with
  // immediate): none posted means RNR NAK, and the requester sends the same packet again.
  if (needs_wqe && !resp.have_wqe && !take_receive_wqe(qp)) {
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
        translate(f_.resources, resp.write_rkey, qp.pd, resp.write_va + resp.offset, packet.payload.size(),
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
    const ProtectionError error = translate_sges(f_.resources, resp.sges, qp.pd, access::kLocalWrite, chunks, total);
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
    const ProtectionError error = invalidate_remotely(f_.resources, packet.invalidate_rkey, qp.pd);
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
      write_cqe(
          f_, qp.cqn_rcv,
          [&](std::span<uint8_t> cqe) {
            if (with_imm) store_be32(&cqe[cqe::kImmediate], packet.immediate);
            if (headers & transport::hdr::kIeth) store_be32(&cqe[cqe::kImmediate], packet.invalidate_rkey);
            store_be32(&cqe[cqe::kByteCount], bytes);
            if (qp.rq_type == rq_type::kSrq) store_be32(&cqe[cqe::kSrqnUserIndex], qp.srqn & 0xffffff);
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

// ---------------------------------------------------------------------------------------------
// Errors

void RdmaEngine::requester_error(uint32_t qpn, QueuePair& qp, const SendWqe& wqe, uint8_t syn) {
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
    error_cqe(qp.cqn_snd, qpn, it->wqe.opcode, it->wqe.wqe_index, syndrome::kWrFlushed, false);
  }
  req.outstanding.erase(req.outstanding.begin(), failing == req.outstanding.end() ? failing : std::next(failing));
  error_cqe(qp.cqn_snd, qpn, opcode, index, syn, false);
  enter_error(qpn, qp);
}

void RdmaEngine::responder_error(uint32_t qpn, QueuePair& qp, uint8_t syn, bool consumed_wqe) {
  RcResponder& resp = qp.rc.resp;
  if (consumed_wqe && resp.have_wqe) error_cqe(qp.cqn_rcv, qpn, 0, resp.wqe_index, syn, true);
  resp.have_wqe = false;
  resp.incoming = RcResponder::Incoming::kNone;
  enter_error(qpn, qp);
}

void RdmaEngine::enter_error(uint32_t qpn, QueuePair& qp) {
  if (qp.state == QpState::kError) return;
  qp.state = QpState::kError;
  set(qp.context, qpc::kState, uint32_t(QpState::kError));
  flush(qpn, qp);
}

void RdmaEngine::qp_moved_to_error(uint32_t qpn) {
  QueuePair* qp = f_.resources.qps.find(qpn);
  if (qp == nullptr || qp->state != QpState::kError || (qp->st != qp_st::kRc && qp->st != qp_st::kUc && !is_datagram(*qp)))
    return;
  // A receive WQE the responder was filling completes as flushed too (IBA 10.3.1: every WQE
  // outstanding when the QP enters ERR).
  RcResponder& resp = qp->rc.resp;
  if (resp.have_wqe) {
    ++counters_.flushed_wqes;
    error_cqe(qp->cqn_rcv, qpn, 0, resp.wqe_index, syndrome::kWrFlushed, true);
  }
  resp.have_wqe = false;
  resp.incoming = RcResponder::Incoming::kNone;
  flush(qpn, *qp);
}

void RdmaEngine::flush(uint32_t qpn, QueuePair& qp) {
  RcRequester& req = qp.rc.req;
  req.timer_armed = false;
  req.rnr_wait = false;
  // Everything still outstanding or posted completes with "flushed" (one CQE per WQE).
  for (const SendMessage& message : req.outstanding) {
    ++counters_.flushed_wqes;
    error_cqe(qp.cqn_snd, qpn, message.wqe.opcode, message.wqe.wqe_index, syndrome::kWrFlushed, false);
  }
  req.outstanding.clear();
  process_sq(qpn, qp);  // WQEs posted but not fetched yet
  if (qp.rq_type == rq_type::kRegular && qp.rq_bytes() != 0) {
    uint32_t producer = 0;
    if (read_doorbell_record(f_.memory, qp.dbr_addr + kRqDbrOffset, producer)) {
      while (((producer - qp.rq_consumer) & kCounterMask16) != 0 &&
             ((producer - qp.rq_consumer) & kCounterMask16) <= (1u << qp.log_rq_size)) {
        ++counters_.flushed_wqes;
        error_cqe(qp.cqn_rcv, qpn, 0, uint16_t(qp.rq_consumer), syndrome::kWrFlushed, true);
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
  const transport::ParseResult parsed = transport::parse_frame(frame);
  if (parsed.error != transport::ParseError::kNone) {
    if (parsed.error == transport::ParseError::kBadIcrc)
      ++counters_.rx_bad_icrc;
    else
      ++counters_.rx_parse_errors;
    return true;
  }
  const RocePacket& packet = parsed.packet;
  const bool to_gsi = packet.dest_qp == kGsiQpn;
  uint32_t qpn = packet.dest_qp;
  QueuePair* qp = to_gsi ? gsi_qp(qpn) : f_.resources.qps.find(qpn);
  if (qp == nullptr || (qp->st != qp_st::kRc && qp->st != qp_st::kUc && !is_datagram(*qp)) ||
      (qp->st == qp_st::kQp1 && !to_gsi)) {
    ++counters_.rx_unknown_qp;
    return true;
  }
  if (is_datagram(*qp)) {
    if (qp->state != QpState::kRtr && qp->state != QpState::kRts) {
      ++counters_.rx_qp_not_ready;
      return true;
    }
    receive_datagram(qpn, *qp, packet, frame);
    return true;
  }
  // The opcode's top bits name the service (IBA table 38): RC 0x00-0x1f, UC 0x20-0x3f.
  if ((packet.opcode & 0xe0) != (qp->st == qp_st::kUc ? kUcOpcodeBase : 0)) {
    ++counters_.rx_wrong_service;
    return true;
  }
  const bool response = transport::carries(packet.opcode, transport::hdr::kResponse);
  if (response ? qp->state != QpState::kRts : (qp->state != QpState::kRtr && qp->state != QpState::kRts)) {
    ++counters_.rx_qp_not_ready;
    return true;
  }
  if (response)
    handle_response(packet.dest_qp, *qp, packet);
  else
    handle_request(packet.dest_qp, *qp, packet);
  return true;
}

}  // namespace hcaemu::model
