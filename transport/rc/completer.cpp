// The completer's states (completer.h). Each state function handles one step of a response or a
// timeout and names the state that follows; run() loops until kDone.
#include "transport/rc/completer.h"

namespace hcaemu::transport::rc {

namespace op = opcode;
using Step = CompleterStep;

const char* event_name(CompleterEvent event) {
  static constexpr std::array<const char*, size_t(CompleterEvent::kCount)> kNames{
      "ACKs", "RNR NAKs", "NAKs", "responses beyond the sent PSNs", "duplicate responses", "reserved AETH",
      "implied NAKs", "PSN sequence NAKs", "READ response gaps", "wrong response kinds", "NAKs in READ responses",
      "timeouts", "responses into pages not present"};
  return name_in(kNames, event);
}

const char* step_name(CompleterStep step) {
  static constexpr std::array<const char*, size_t(Step::kCount)> kNames{
      "GET_RESPONSE", "CHECK_ACK", "ACK", "RNR_NAK", "NAK", "GET_MESSAGE", "CHECK_RESPONSE", "READ", "ATOMIC",
      "UPDATE", "RETIRE", "CHECK_IMPLIED", "RETRY", "ARM_TIMER", "RNR_WAIT", "TIMEOUT", "DROP",
      "ERR_RETRY_EXCEEDED", "ERR_RNR_RETRY_EXCEEDED", "ERR_BAD_RESPONSE", "ERR_LOCAL_PROTECTION", "ERR_REMOTE",
      "DONE"};
  return name_in(kNames, step);
}

// One response (or timeout) on its way through the states.
struct Completer::Work {
  RequesterState& state;
  const CompleterQp& qp;
  CompleterHost& host;
  const RocePacket* packet = nullptr;  // null for a timeout
  uint8_t opcode = 0;                  // RC's form
  size_t index = 0;                    // the message a response belongs to, or the one that fails
  uint32_t resend_psn = 0;
  bool implied = false;                // the resend is for an implied NAK
  bool plain_ack = false;              // the implied-NAK check follows a plain ACK
  Step after_implied = Step::kDone;    // where the packet goes when nothing was overtaken
  Step after_retry = Step::kDone;
  CompleterError error = CompleterError::kBadResponse;
  uint32_t psn() const { return packet->psn; }
};

void Completer::response(RequesterState& state, const CompleterQp& qp, const RocePacket& packet, CompleterHost& host) {
  Work w{.state = state, .qp = qp, .host = host, .packet = &packet};
  run(Step::kGetResponse, w);
}

void Completer::timeout(RequesterState& state, const CompleterQp& qp, CompleterHost& host) {
  Work w{.state = state, .qp = qp, .host = host};
  run(Step::kTimeout, w);
}

void Completer::retire(RequesterState& state, const CompleterQp& qp, CompleterHost& host) {
  retire_messages(state, qp, host);
}

void Completer::run(Step step, Work& w) {
  run_steps(step, trace_, [&](Step s) { return dispatch(s, w); });
}

Step Completer::dispatch(Step step, Work& w) {
  switch (step) {
    case Step::kGetResponse: return get_response(w);
    case Step::kCheckAck: return check_ack(w);
    case Step::kAck: return ack(w);
    case Step::kRnrNak: return rnr_nak(w);
    case Step::kNak: return nak(w);
    case Step::kGetMessage: return get_message(w);
    case Step::kCheckResponse: return check_response(w);
    case Step::kRead: return read(w);
    case Step::kAtomic: return atomic(w);
    case Step::kUpdate: return update(w);
    case Step::kRetire: return retire_step(w);
    case Step::kCheckImplied: return check_implied(w);
    case Step::kRetry: return retry(w);
    case Step::kArmTimer: return arm_timer(w);
    case Step::kRnrWait: return rnr_wait(w);
    case Step::kTimeout: return timeout_step(w);
    case Step::kDrop: return Step::kDone;
    case Step::kErrRetryExceeded: return fail(w, CompleterError::kRetryExceeded);
    case Step::kErrRnrRetryExceeded: return fail(w, CompleterError::kRnrRetryExceeded);
    case Step::kErrBadResponse: return fail(w, CompleterError::kBadResponse);
    case Step::kErrLocalProtection: return fail(w, CompleterError::kLocalProtection);
    case Step::kErrRemote: return fail(w, w.error);
    case Step::kDone:
    case Step::kCount: break;
  }
  return Step::kDone;
}

Step Completer::note(Work& w, CompleterEvent event, Step next) {
  events_.add(event);
  w.host.count(event);
  return next;
}

Step Completer::get_response(Work& w) {
  w.opcode = uint8_t(w.packet->opcode & ~opcode_base(w.qp.service));  // XRC responses are RC's at 0xa0
  if (psn_diff(w.psn(), w.state.next_psn) >= 0) return note(w, CompleterEvent::kUnexpectedPsn, Step::kDrop);
  return w.opcode == op::kRcAcknowledge ? Step::kCheckAck : Step::kGetMessage;
}

Step Completer::check_ack(Work& w) {
  switch (aeth_type(w.packet->aeth.syndrome)) {
    case AethType::kAck: return note(w, CompleterEvent::kAck, Step::kAck);
    case AethType::kRnrNak: return note(w, CompleterEvent::kRnrNak, Step::kRnrNak);
    case AethType::kNak: return note(w, CompleterEvent::kNak, Step::kNak);
    default: return note(w, CompleterEvent::kReservedSyndrome, Step::kDrop);
  }
}

Step Completer::ack(Work& w) {
  if (psn_diff(w.psn(), w.state.acked_psn) > 0) {
    w.state.acked_psn = w.psn();
    w.state.retries_left = w.qp.retry_count;  // forward progress (IBA 9.7.6.1.3)
  }
  w.state.rnr_retries_left = w.qp.rnr_retry;
  w.plain_ack = true;
  w.after_implied = Step::kRetire;
  return Step::kCheckImplied;
}

Step Completer::rnr_nak(Work& w) {
  w.state.acked_psn = psn_add(w.psn(), kPsnMask);  // everything before it arrived
  retire_messages(w.state, w.qp, w.host);
  if (w.state.rnr_retries_left != 7) {  // 7 = retry for ever
    if (w.state.rnr_retries_left == 0) {
      w.index = 0;
      return w.host.outstanding() != 0 ? Step::kErrRnrRetryExceeded : Step::kDone;
    }
    --w.state.rnr_retries_left;
  }
  return Step::kRnrWait;
}

Step Completer::rnr_wait(Work& w) {
  w.state.rnr_wait = true;
  w.state.rnr_psn = w.psn();
  w.host.arm_rnr_timer(aeth_value(w.packet->aeth.syndrome));
  return Step::kDone;
}

Step Completer::nak(Work& w) {
  const uint32_t before = psn_add(w.psn(), kPsnMask);
  if (psn_diff(before, w.state.acked_psn) > 0) {
    w.state.acked_psn = before;
    w.state.retries_left = w.qp.retry_count;  // everything before it arrived: progress
  }
  retire_messages(w.state, w.qp, w.host);
  const auto code = NakCode(aeth_value(w.packet->aeth.syndrome));
  w.index = 0;
  if (code == NakCode::kPsnSequenceError) {
    // A READ or atomic before the NAK's PSN still waiting for its response was received (the NAK
    // says so) but its response was lost: the resend starts there, not at the NAK.
    w.resend_psn = resend_point(w.host, w.psn());
    w.after_retry = Step::kArmTimer;
    return note(w, CompleterEvent::kSequenceNak, Step::kRetry);
  }
  // Invalid request, remote access or remote operational error: the message at that PSN fails.
  for (size_t i = 0; i < w.host.outstanding(); ++i) {
    const OutstandingMessage& m = w.host.message(i);
    if (m.holds(w.psn())) {
      w.index = i;
      break;
    }
  }
  w.error = code == NakCode::kInvalidRequest          ? CompleterError::kRemoteInvalidRequest
            : code == NakCode::kRemoteAccessError      ? CompleterError::kRemoteAccess
            : code == NakCode::kRemoteOperationalError ? CompleterError::kRemoteOperation
                                                       : CompleterError::kBadResponse;
  return Step::kErrRemote;
}

Step Completer::get_message(Work& w) {
  // READ responses and atomic ACKs belong to the message whose PSN range holds their PSN.
  for (size_t i = 0; i < w.host.outstanding(); ++i) {
    const OutstandingMessage& m = w.host.message(i);
    if (m.needs_response && !m.responded && psn_diff(w.psn(), m.first_psn) >= 0 &&
        psn_diff(w.psn(), m.last_psn()) <= 0) {
      w.index = i;
      w.after_implied = Step::kCheckResponse;
      return Step::kCheckImplied;
    }
  }
  return note(w, CompleterEvent::kDuplicateResponse, Step::kDrop);
}

Step Completer::check_implied(Work& w) {
  // IBA 9.7.6.1: an ACK or response for a PSN past a READ or atomic still waiting for its response
  // says that response was lost. An ACK is never a READ's or atomic's own response, so one at such
  // a message's last PSN already says so.
  for (size_t i = 0; i < w.host.outstanding(); ++i) {
    const OutstandingMessage& m = w.host.message(i);
    if (!m.needs_response || m.responded) continue;
    const int32_t past = psn_diff(w.psn(), m.last_psn());
    if (past < 0 || (past == 0 && !w.plain_ack)) return w.after_implied;  // the first one waiting is not overtaken
    const Step after = w.plain_ack ? Step::kRetire : Step::kDone;
    if (w.state.implied_resend && w.state.implied_psn == m.resend_psn()) return after;  // resent: wait for it
    w.index = i;
    w.resend_psn = m.resend_psn();
    w.implied = true;
    w.after_retry = after;
    return note(w, CompleterEvent::kImpliedNak, Step::kRetry);
  }
  return w.after_implied;
}

Step Completer::check_response(Work& w) {
  OutstandingMessage& m = w.host.message(w.index);
  // Everything before this message is implicitly acknowledged by its response.
  const uint32_t before = psn_add(m.first_psn, kPsnMask);
  if (psn_diff(before, w.state.acked_psn) > 0) w.state.acked_psn = before;
  const bool read_response = w.opcode >= op::kRcRdmaReadResponseFirst && w.opcode <= op::kRcRdmaReadResponseOnly;
  if (read_response != (m.request.kind == RequestKind::kRead) ||
      (w.opcode == op::kRcAtomicAcknowledge) != (m.request.kind == RequestKind::kAtomic))
    return note(w, CompleterEvent::kWrongResponse, Step::kErrBadResponse);
  if (carries(w.opcode, hdr::kAeth) && aeth_type(w.packet->aeth.syndrome) != AethType::kAck)
    return note(w, CompleterEvent::kNakInResponse, Step::kDrop);
  return read_response ? Step::kRead : Step::kAtomic;
}

Step Completer::read(Work& w) {
  OutstandingMessage& m = w.host.message(w.index);
  if (w.psn() != m.read_next_psn) {  // a response went missing: ask again from there, once
    // The rest of the lost packet's stream (and of the READs behind it) keeps arriving out of
    // sequence: asking again for each of them would send a READ per packet and have the responder
    // stream the tail again each time. Once per missing PSN, until it arrives or the timer fires.
    if (w.state.implied_resend && w.state.implied_psn == m.read_next_psn)
      return note(w, CompleterEvent::kReadResponseGap, Step::kDone);
    w.state.implied_resend = true;
    w.state.implied_psn = m.read_next_psn;
    w.host.resend_from(m.read_next_psn);
    return note(w, CompleterEvent::kReadResponseGap, Step::kDone);
  }
  const uint64_t offset = uint64_t(psn_diff(w.psn(), m.first_psn)) * w.qp.pmtu;
  const bool last = w.opcode == op::kRcRdmaReadResponseLast || w.opcode == op::kRcRdmaReadResponseOnly;
  const uint64_t expected = last ? m.length - offset : w.qp.pmtu;
  if (offset > m.length || w.packet->payload.size() != expected) return Step::kErrBadResponse;
  switch (w.host.place_read_response(w.index, offset, w.packet->payload)) {
    case HostResult::kOk: break;
    case HostResult::kPageFault: return note(w, CompleterEvent::kPageFault, Step::kDone);
    default: return Step::kErrLocalProtection;
  }
  OutstandingMessage& placed = w.host.message(w.index);
  placed.read_next_psn = psn_add(placed.read_next_psn, 1);
  if (last) placed.responded = true;
  return Step::kUpdate;
}

Step Completer::atomic(Work& w) {
  switch (w.host.place_atomic_result(w.index, w.packet->atomic_ack)) {
    case HostResult::kOk: break;
    case HostResult::kPageFault: return note(w, CompleterEvent::kPageFault, Step::kDone);
    default: return Step::kErrLocalProtection;
  }
  w.host.message(w.index).responded = true;
  return Step::kUpdate;
}

Step Completer::update(Work& w) {
  const OutstandingMessage& m = w.host.message(w.index);
  if (m.responded) {
    if (psn_diff(m.last_psn(), w.state.acked_psn) > 0) w.state.acked_psn = m.last_psn();
    w.host.responded(w.index);
  }
  return Step::kRetire;
}

Step Completer::retire_step(Work& w) {
  if (w.host.stopped()) return Step::kDone;
  retire_messages(w.state, w.qp, w.host);
  w.host.arm_ack_timer();
  return Step::kDone;
}

Step Completer::retry(Work& w) {
  if (w.state.retries_left == 0) return Step::kErrRetryExceeded;
  --w.state.retries_left;
  if (w.implied) {  // once until progress
    w.state.implied_resend = true;
    w.state.implied_psn = w.resend_psn;
  }
  w.host.resend_from(w.resend_psn);
  return w.after_retry;
}

Step Completer::arm_timer(Work& w) {
  if (!w.host.stopped()) w.host.arm_ack_timer();
  return Step::kDone;
}

Step Completer::timeout_step(Work& w) {
  if (w.state.rnr_wait) {  // the RNR wait is over: the NAKed packet goes again
    w.state.rnr_wait = false;
    w.host.resend_from(w.state.rnr_psn);
    return Step::kArmTimer;
  }
  if (w.host.outstanding() == 0) return Step::kArmTimer;
  w.index = 0;
  w.resend_psn = resend_point(w.host, psn_add(w.state.acked_psn, 1));
  w.after_retry = Step::kArmTimer;
  w.state.implied_resend = false;  // everything goes again: a loss found after this is a new one
  return note(w, CompleterEvent::kTimeout, Step::kRetry);
}

Step Completer::fail(Work& w, CompleterError error) {
  // Retry budgets end on the oldest message, if there is still one; a NAK names its own.
  const bool none = w.index >= w.host.outstanding();
  if (none && (error == CompleterError::kRetryExceeded || error == CompleterError::kRnrRetryExceeded)) return Step::kDone;
  w.host.fail(w.index, error);
  return Step::kDone;
}

uint32_t Completer::resend_point(CompleterHost& host, uint32_t psn) {
  for (size_t i = 0; i < host.outstanding(); ++i) {
    const OutstandingMessage& m = host.message(i);
    if (m.needs_response && !m.responded && psn_diff(m.first_psn, psn) < 0) return m.resend_psn();
  }
  return psn;
}

void Completer::retire_messages(RequesterState& state, const CompleterQp& qp, CompleterHost& host) {
  bool progressed = false;
  while (host.outstanding() != 0) {
    const OutstandingMessage& m = host.message(0);
    const bool done = m.npsn == 0 || !qp.acknowledged ||
                      (m.needs_response ? m.responded : psn_diff(m.last_psn(), state.acked_psn) <= 0);
    if (!done) break;
    host.complete_oldest(qp.acknowledged && !m.needs_response && m.npsn != 0);
    progressed = true;
  }
  if (!progressed) return;
  state.retries_left = qp.retry_count;
  state.implied_resend = false;
  if (state.fence_blocked) host.resume_sends();
}

}  // namespace hcaemu::transport::rc
