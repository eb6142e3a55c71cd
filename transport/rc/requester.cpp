// The requester's states (requester.h): admission with fences, PSN assignment, packetisation and
// go-back-N resends. Each state function does one step and names the state that follows.
#include "transport/rc/requester.h"

#include <algorithm>

namespace hcaemu::transport::rc {

namespace op = opcode;
using Step = RequesterStep;

const char* event_name(RequesterEvent event) {
  static constexpr std::array<const char*, size_t(RequesterEvent::kCount)> kNames{
      "fenced requests", "request packets", "messages resent", "no source address", "payload faults",
      "READ/atomic at initiator depth", "payload page faults"};
  return name_in(kNames, event);
}

const char* step_name(RequesterStep step) {
  static constexpr std::array<const char*, size_t(Step::kCount)> kNames{
      "CHECK_FENCE", "FENCED", "ASSIGN_PSN", "ADDRESS", "REQUEST_PACKET", "OPEN_PAYLOAD", "DATA_PACKET",
      "SELECT_RESEND", "ERR_NO_ADDRESS", "ERR_PAYLOAD", "PAGE_FAULT", "DONE"};
  return name_in(kNames, step);
}

uint8_t request_opcode(const WorkRequest& r, bool first, bool last) {
  const bool only = first && last;
  auto pick = [&](uint8_t only_op, uint8_t first_op, uint8_t middle_op, uint8_t last_op) {
    return only ? only_op : first ? first_op : last ? last_op : middle_op;
  };
  switch (r.kind) {
    case RequestKind::kSend:
      if (r.with_imm) return pick(op::kRcSendOnlyImm, op::kRcSendFirst, op::kRcSendMiddle, op::kRcSendLastImm);
      if (r.invalidate)
        return pick(op::kRcSendOnlyInvalidate, op::kRcSendFirst, op::kRcSendMiddle, op::kRcSendLastInvalidate);
      return pick(op::kRcSendOnly, op::kRcSendFirst, op::kRcSendMiddle, op::kRcSendLast);
    case RequestKind::kWrite:
      if (r.with_imm)
        return pick(op::kRcRdmaWriteOnlyImm, op::kRcRdmaWriteFirst, op::kRcRdmaWriteMiddle, op::kRcRdmaWriteLastImm);
      return pick(op::kRcRdmaWriteOnly, op::kRcRdmaWriteFirst, op::kRcRdmaWriteMiddle, op::kRcRdmaWriteLast);
    case RequestKind::kRead: return op::kRcRdmaReadRequest;
    case RequestKind::kAtomic: return r.fetch_add ? op::kRcFetchAdd : op::kRcCompareSwap;
    case RequestKind::kNop: break;
  }
  return 0xff;
}

struct Requester::Work {
  RequesterState& state;
  const RequesterQp& qp;
  RequesterHost* host = nullptr;
  OutstandingMessage* admitted = nullptr;  // assign_psns
  bool fenced = false;                     // admit
  bool needs_response = false;             // admit: a READ or atomic
  uint32_t initiator_depth = 0;            // admit: 0 = no limit
  bool allowed = false;
  size_t index = 0;          // the message being sent
  uint32_t from_psn = 0;
  uint32_t next_packet = 0;  // its packet to send next
  RocePacket packet = {};
  bool resending = false;
  bool continuing = false;   // a resend that continues after a pause, not a retransmission
  uint32_t resend_psn = 0;
  size_t resend_index = 0;   // the next message to consider for the resend
  OutstandingMessage& message() const { return host->message(index); }
  uint8_t base() const { return opcode_base(qp.service); }
  // Where a transmission goes when it has ended (or stopped on an error).
  Step finished() const { return resending && !host->stopped() ? Step::kSelectResend : Step::kDone; }
};

void Requester::run(Step step, Work& w) {
  run_steps(step, trace_, [&](Step s) { return dispatch(s, w); });
}

Step Requester::dispatch(Step step, Work& w) {
  switch (step) {
    case Step::kCheckFence: return check_fence(w);
    case Step::kFenced: return Step::kDone;
    case Step::kAssignPsn: return assign_psn(w);
    case Step::kAddress: return address(w);
    case Step::kRequestPacket: return request_packet(w);
    case Step::kOpenPayload: return open_payload(w);
    case Step::kDataPacket: return data_packet(w);
    case Step::kSelectResend: return select_resend(w);
    case Step::kErrNoAddress: return fail(w, RequesterError::kNoAddress);
    case Step::kErrPayload: return fail(w, RequesterError::kLocalProtection);
    case Step::kPageFault:
    case Step::kDone:
    case Step::kCount: break;
  }
  return Step::kDone;
}

Step Requester::note(Work& w, RequesterEvent event, Step next) {
  events_.add(event);
  if (w.host != nullptr) w.host->count(event);
  return next;
}

bool Requester::admit(RequesterState& state, bool fenced, RequesterHost& host, bool needs_response,
                      uint32_t initiator_depth) {
  const RequesterQp qp;
  Work w{.state = state, .qp = qp, .host = &host, .fenced = fenced, .needs_response = needs_response,
         .initiator_depth = initiator_depth};
  run(Step::kCheckFence, w);
  return w.allowed;
}

Step Requester::check_fence(Work& w) {
  bool waiting = false;
  for (size_t i = 0; w.fenced && i < w.host->outstanding() && !waiting; ++i) {
    const OutstandingMessage& m = w.host->message(i);
    waiting = m.needs_response && !m.responded;
  }
  w.state.fence_blocked = waiting;
  if (waiting) return note(w, RequesterEvent::kFenced, Step::kFenced);
  if (w.needs_response && w.initiator_depth != 0) {
    // The responder keeps the state of only so many READs and atomics (its max_dest_rd_atomic,
    // which the QP's max_rd_atomic must not exceed): more in flight and a resent one finds its
    // saved result gone.
    uint32_t in_flight = 0;
    for (size_t i = 0; i < w.host->outstanding(); ++i) {
      const OutstandingMessage& m = w.host->message(i);
      in_flight += m.needs_response && !m.responded;
    }
    if (in_flight >= w.initiator_depth) {
      w.state.fence_blocked = true;
      return note(w, RequesterEvent::kInitiatorDepth, Step::kFenced);
    }
  }
  w.allowed = true;
  return Step::kDone;
}

void Requester::assign_psns(RequesterState& state, const RequesterQp& qp, OutstandingMessage& message) {
  Work w{.state = state, .qp = qp, .admitted = &message};
  run(Step::kAssignPsn, w);
}

Step Requester::assign_psn(Work& w) {
  OutstandingMessage& m = *w.admitted;
  m.first_psn = w.state.next_psn;
  m.read_next_psn = m.first_psn;
  const RequestKind kind = m.request.kind;
  if (kind == RequestKind::kNop) {
    m.npsn = 0;
    return Step::kDone;
  }
  m.needs_response = kind == RequestKind::kRead || kind == RequestKind::kAtomic;
  const bool one_packet = kind == RequestKind::kAtomic || w.qp.datagram;
  m.npsn = one_packet || m.length == 0 ? 1 : uint32_t((m.length + w.qp.pmtu - 1) / w.qp.pmtu);
  w.state.next_psn = psn_add(w.state.next_psn, m.npsn);
  return Step::kDone;
}

void Requester::transmit(RequesterState& state, const RequesterQp& qp, size_t index, uint32_t from_psn,
                         RequesterHost& host) {
  Work w{.state = state, .qp = qp, .host = &host, .index = index, .from_psn = from_psn};
  run(Step::kAddress, w);
}

Step Requester::address(Work& w) {
  w.packet = RocePacket{};
  if (!w.host->address(w.packet)) return note(w, RequesterEvent::kNoAddress, Step::kErrNoAddress);
  const OutstandingMessage& m = w.message();
  w.packet.xrc_srqn = m.request.xrc_srqn;  // XRC: every request names the SRQ at the target
  w.next_packet = uint32_t(psn_diff(w.from_psn, m.first_psn));
  const RequestKind kind = m.request.kind;
  return kind == RequestKind::kRead || kind == RequestKind::kAtomic ? Step::kRequestPacket : Step::kOpenPayload;
}

Step Requester::request_packet(Work& w) {
  // One request; a resent READ asks only for the responses still missing.
  const OutstandingMessage& m = w.message();
  const WorkRequest& r = m.request;
  RocePacket& p = w.packet;
  p.opcode = uint8_t(request_opcode(r, true, true) | w.base());
  p.psn = w.from_psn;
  p.ack_req = true;
  if (r.kind == RequestKind::kRead) {
    const uint64_t done = uint64_t(w.next_packet) * w.qp.pmtu;
    p.reth = {.va = r.remote_va + done, .rkey = r.rkey, .dma_length = uint32_t(m.length - done)};
  } else {
    p.atomic = {.va = r.remote_va, .rkey = r.rkey, .swap_add = r.swap_add, .compare = r.compare};
  }
  w.host->send(p, 0);
  w.host->sent(w.index, w.next_packet, true);
  return note(w, RequesterEvent::kPackets, w.finished());
}

Step Requester::open_payload(Work& w) {
  switch (w.host->open_payload(w.index, psn_add(w.message().first_psn, w.next_packet))) {
    case HostResult::kOk: return Step::kDataPacket;
    case HostResult::kPageFault: return note(w, RequesterEvent::kPageFault, Step::kPageFault);
    default: return note(w, RequesterEvent::kPayloadFault, Step::kErrPayload);
  }
}

Step Requester::data_packet(Work& w) {
  const OutstandingMessage& m = w.message();
  const uint32_t i = w.next_packet;
  if (i >= m.npsn) return w.finished();
  const WorkRequest& r = m.request;
  const uint64_t offset = uint64_t(i) * w.qp.pmtu;
  const uint32_t size = uint32_t(std::min<uint64_t>(w.qp.pmtu, m.length - std::min(offset, m.length)));
  const bool first = i == 0, last = i + 1 == m.npsn;
  RocePacket& p = w.packet;
  p.opcode = uint8_t(request_opcode(r, first, last) | w.base());
  p.psn = psn_add(m.first_psn, i);
  p.ack_req = last && w.qp.service != Service::kUc;  // UC: never an ACK
  p.solicited = last && r.solicited;
  if (first && r.kind == RequestKind::kWrite)
    p.reth = {.va = r.remote_va, .rkey = r.rkey, .dma_length = uint32_t(m.length)};
  p.immediate = r.immediate;
  p.invalidate_rkey = r.immediate;
  std::span<const uint8_t> bytes;
  uint64_t ready_ps = 0;
  if (size != 0 && w.host->payload(w.index, offset, size, p, bytes, ready_ps) != HostResult::kOk)
    return note(w, RequesterEvent::kPayloadFault, Step::kErrPayload);
  p.payload = bytes;
  const uint32_t from = uint32_t(psn_diff(w.from_psn, m.first_psn));
  w.host->send(p, ready_ps);
  w.host->sent(w.index, i, i == from);
  ++w.next_packet;
  note(w, RequesterEvent::kPackets, Step::kDataPacket);
  if (w.host->stopped()) return Step::kDone;
  if (w.next_packet < m.npsn && w.host->paced()) {  // the rest of the message waits for the rate
    w.host->pause_at(psn_add(m.first_psn, w.next_packet));
    return Step::kDone;
  }
  return Step::kDataPacket;
}

void Requester::resend_from(RequesterState& state, const RequesterQp& qp, uint32_t psn, RequesterHost& host) {
  Work w{.state = state, .qp = qp, .host = &host, .resending = true, .resend_psn = psn};
  run(Step::kSelectResend, w);
}

void Requester::continue_from(RequesterState& state, const RequesterQp& qp, uint32_t psn, RequesterHost& host) {
  Work w{.state = state, .qp = qp, .host = &host, .resending = true, .continuing = true, .resend_psn = psn};
  run(Step::kSelectResend, w);
}

Step Requester::select_resend(Work& w) {
  while (w.resend_index < w.host->outstanding()) {
    const size_t i = w.resend_index++;
    const OutstandingMessage& m = w.host->message(i);
    if (m.npsn == 0 || (m.needs_response && m.responded)) continue;
    if (psn_diff(m.last_psn(), w.resend_psn) < 0) continue;  // entirely before the resend point
    uint32_t from = psn_diff(w.resend_psn, m.first_psn) > 0 ? w.resend_psn : m.first_psn;
    if (m.request.kind == RequestKind::kRead && psn_diff(m.read_next_psn, from) > 0) from = m.read_next_psn;
    w.index = i;
    w.from_psn = from;
    return w.continuing ? Step::kAddress : note(w, RequesterEvent::kResent, Step::kAddress);
  }
  return Step::kDone;
}

Step Requester::fail(Work& w, RequesterError error) {
  w.host->fail(w.index, error);
  return Step::kDone;
}

}  // namespace hcaemu::transport::rc
