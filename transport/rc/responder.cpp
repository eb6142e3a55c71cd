// The connected-service responder's states (responder.h). Each state function checks one thing or
// does one step and names the state that follows; receive() loops until kDone.
#include "transport/rc/responder.h"

namespace hcaemu::transport::rc {

namespace op = opcode;
using Step = ResponderStep;
using Incoming = ResponderState::Incoming;

const char* event_name(ResponderEvent event) {
  static constexpr std::array<const char*, size_t(ResponderEvent::kCount)> kNames{
      "write requests", "read requests", "atomic requests", "duplicates", "out of sequence", "UC resynchronised",
      "invalid XRC SRQ", "opcode sequence errors", "unsupported opcodes", "misaligned atomics",
      "remote access errors", "no receive WQE", "WRITE beyond its length", "SEND beyond its receive WQE",
      "local protection errors", "DMA faults", "invalidate refused", "UC messages dropped", "remote invalidations",
      "receive completions", "page faults"};
  return name_in(kNames, event);
}

const char* step_name(ResponderStep step) {
  static constexpr std::array<const char*, size_t(Step::kCount)> kNames{
      "GET_REQUEST", "CHECK_XRC_SRQ", "CHECK_PSN", "CHECK_OP_SEQUENCE", "CHECK_OP_VALID", "CHECK_RKEY",
      "CHECK_WRITE_ACCESS", "CHECK_RESOURCE", "EXECUTE_READ", "EXECUTE_ATOMIC", "WRITE_DATA", "RECEIVE_DATA",
      "COMPLETE", "ACKNOWLEDGE", "DUPLICATE", "ERR_SEQUENCE", "ERR_RNR", "ERR_INVALID_REQUEST",
      "ERR_REMOTE_ACCESS", "ERR_REMOTE_OPERATION", "ERR_LOCAL_PROTECTION", "ERR_LENGTH", "DROP_MESSAGE", "DONE"};
  return name_in(kNames, step);
}

// One request packet on its way through the states.
struct Responder::Request {
  ResponderState& state;
  const ResponderQp& qp;
  const RocePacket& packet;
  ResponderHost& host;
  uint8_t opcode = 0;  // RC's form: UC and XRC opcodes less their service's base
  uint16_t headers = 0;
  bool first = false, last = false, is_send = false, is_write = false, is_read = false, is_atomic = false;
  bool with_imm = false, invalidate = false;

  bool unreliable() const { return qp.service == Service::kUc; }
  bool needs_wqe() const { return is_send || (is_write && with_imm && last); }
  void reply(uint32_t psn, uint8_t syndrome) const {  // UC answers nothing
    if (!unreliable()) host.send_ack(psn, syndrome, state.msn & kPsnMask);
  }
  Incoming kind() const { return is_send ? Incoming::kSend : Incoming::kWrite; }
  MessageKind message_kind() const {
    if (is_write) return with_imm ? MessageKind::kWriteImm : MessageKind::kWrite;
    if (is_read) return MessageKind::kRead;
    if (is_atomic) return opcode == op::kRcFetchAdd ? MessageKind::kFetchAdd : MessageKind::kCompareSwap;
    return with_imm ? MessageKind::kSendImm : invalidate ? MessageKind::kSendInvalidate : MessageKind::kSend;
  }
};

void Responder::receive(ResponderState& state, const ResponderQp& qp, const RocePacket& packet, ResponderHost& host) {
  Request r{.state = state, .qp = qp, .packet = packet, .host = host};
  run_steps(Step::kGetRequest, trace_, [&](Step s) { return dispatch(s, r); });
}

Step Responder::dispatch(Step step, Request& r) {
  switch (step) {
    case Step::kGetRequest: return get_request(r);
    case Step::kCheckXrcSrq: return check_xrc_srq(r);
    case Step::kCheckPsn: return check_psn(r);
    case Step::kCheckOpSequence: return check_op_sequence(r);
    case Step::kCheckOpValid: return check_op_valid(r);
    case Step::kCheckRkey: return check_rkey(r);
    case Step::kCheckWriteAccess: return check_write_access(r);
    case Step::kCheckResource: return check_resource(r);
    case Step::kExecuteRead: return execute_read(r);
    case Step::kExecuteAtomic: return execute_atomic(r);
    case Step::kWriteData: return write_data(r);
    case Step::kReceiveData: return receive_data(r);
    case Step::kComplete: return complete(r);
    case Step::kAcknowledge: return acknowledge(r);
    case Step::kDuplicate: return duplicate(r);
    case Step::kErrSequence: return err_sequence(r);
    case Step::kErrRnr: return err_rnr(r);
    case Step::kErrInvalidRequest:
      return err_nak(r, NakCode::kInvalidRequest, ResponderError::kRemoteInvalidRequest, true);
    case Step::kErrRemoteAccess: return err_nak(r, NakCode::kRemoteAccessError, ResponderError::kRemoteAccess, true);
    case Step::kErrRemoteOperation:
      return err_nak(r, NakCode::kRemoteOperationalError, ResponderError::kRemoteOperation, false);
    case Step::kErrLocalProtection:
      return err_nak(r, NakCode::kRemoteOperationalError, ResponderError::kLocalProtection, false);
    case Step::kErrLength: return err_nak(r, NakCode::kInvalidRequest, ResponderError::kLocalLength, false);
    case Step::kDropMessage: return drop_message(r);
    case Step::kDone:
    case Step::kCount: break;
  }
  return Step::kDone;
}

Step Responder::note(Request& r, ResponderEvent event, Step next) {
  events_.add(event);
  r.host.count(event);
  return next;
}

Step Responder::get_request(Request& r) {
  r.opcode = uint8_t(r.packet.opcode & ~opcode_base(r.qp.service));
  r.headers = headers_of(r.opcode);
  r.first = r.headers & hdr::kFirst;
  r.last = r.headers & hdr::kLast;
  r.is_send = r.opcode <= op::kRcSendOnlyImm || r.opcode == op::kRcSendLastInvalidate ||
              r.opcode == op::kRcSendOnlyInvalidate;
  r.is_write = r.opcode >= op::kRcRdmaWriteFirst && r.opcode <= op::kRcRdmaWriteOnlyImm;
  r.is_read = r.opcode == op::kRcRdmaReadRequest;
  r.is_atomic = r.opcode == op::kRcCompareSwap || r.opcode == op::kRcFetchAdd;
  r.with_imm = r.headers & hdr::kImmDt;
  r.invalidate = r.headers & hdr::kIeth;
  return r.qp.service == Service::kXrc ? Step::kCheckXrcSrq : Step::kCheckPsn;
}

Step Responder::check_xrc_srq(Request& r) {
  // Every XRC request names an XRC SRQ of the target QP's domain, the same one for all packets of a
  // message: its WQEs, PD and CQ serve the message. Anything else is an invalid request, answered
  // when it is the expected packet and dropped otherwise.
  const bool switches = r.state.incoming != Incoming::kNone && r.packet.xrc_srqn != r.state.xrc_srqn;
  if (!r.host.xrc_srq_valid(r.packet.xrc_srqn) || switches)
    return note(r, ResponderEvent::kInvalidXrcSrq, r.packet.psn == r.state.epsn ? Step::kErrInvalidRequest : Step::kDone);
  r.state.xrc_srqn = r.packet.xrc_srqn;
  return Step::kCheckPsn;
}

Step Responder::check_psn(Request& r) {
  ResponderState& s = r.state;
  if (r.unreliable() && r.packet.psn != s.epsn) {
    // A lost packet loses its message: resynchronise on this PSN; only a FIRST or ONLY starts a new
    // message, and the receive WQE that was being filled is used again.
    s.incoming = Incoming::kNone;
    s.offset = 0;
    s.epsn = r.packet.psn;
    note(r, ResponderEvent::kUcResync, Step::kCheckPsn);
  }
  const int32_t distance = psn_diff(r.packet.psn, s.epsn);
  if (distance > 0) return Step::kErrSequence;
  if (distance < 0) return note(r, ResponderEvent::kDuplicate, Step::kDuplicate);
  s.sequence_nak_sent = false;
  return Step::kCheckOpSequence;
}

Step Responder::duplicate(Request& r) {
  // Answer again, change nothing: a READ is read again, an atomic answered from its kept result.
  if (r.is_read) {
    // Its pages may have gone since (ODP): it waits for them as a new READ would. A key that went
    // altogether answers nothing (the READ had its answer once).
    switch (r.host.check_remote(r.packet.reth.va, r.packet.reth.rkey, r.packet.reth.dma_length, RemoteAccess::kRead)) {
      case HostResult::kOk: r.host.send_read_responses(r.packet.psn, r.packet.reth, r.state.msn & kPsnMask); break;
      case HostResult::kPageFault: return note(r, ResponderEvent::kPageFault, Step::kErrRnr);
      default: break;
    }
  } else if (r.is_atomic) {
    for (const auto& done : r.state.atomic_results)
      if (done.psn == r.packet.psn) r.host.send_atomic_ack(r.packet.psn, done.original, r.state.msn & kPsnMask);
  } else {
    r.reply(psn_add(r.state.epsn, kPsnMask), aeth_ack(kAethCreditsInvalid));
  }
  return Step::kDone;
}

Step Responder::check_op_sequence(Request& r) {
  if (!r.is_send && !r.is_write) return Step::kCheckOpValid;
  const bool inside = r.state.incoming != Incoming::kNone;
  if (r.first == inside || (!r.first && r.state.incoming != r.kind()))
    return note(r, ResponderEvent::kOpcodeSequence, Step::kErrInvalidRequest);
  return Step::kCheckOpValid;
}

Step Responder::check_op_valid(Request& r) {
  // The receive pipeline works on the packet from here on (a packet that waited behind others has
  // been through it already: the host knows its arrival).
  r.host.pipeline();
  if (r.is_read || r.is_atomic) {
    if (r.unreliable()) return note(r, ResponderEvent::kUnsupportedOpcode, Step::kErrInvalidRequest);
    if (r.is_atomic && (r.packet.atomic.va & 7) != 0)
      return note(r, ResponderEvent::kMisalignedAtomic, Step::kErrInvalidRequest);
    return Step::kCheckRkey;
  }
  if (!r.is_send && !r.is_write) return note(r, ResponderEvent::kUnsupportedOpcode, Step::kErrInvalidRequest);
  return r.is_write && r.first ? Step::kCheckWriteAccess : Step::kCheckResource;
}

Step Responder::check_rkey(Request& r) {
  const uint64_t va = r.is_read ? r.packet.reth.va : r.packet.atomic.va;
  const uint32_t rkey = r.is_read ? r.packet.reth.rkey : r.packet.atomic.rkey;
  const uint64_t length = r.is_read ? r.packet.reth.dma_length : 8;
  const bool allowed = r.is_read ? r.qp.remote_read : r.qp.remote_atomic;
  const RemoteAccess access = r.is_read ? RemoteAccess::kRead : RemoteAccess::kAtomic;
  if (!allowed) return note(r, ResponderEvent::kRemoteAccess, Step::kErrRemoteAccess);
  switch (r.host.check_remote(va, rkey, length, access)) {
    case HostResult::kOk: break;
    case HostResult::kPageFault: return note(r, ResponderEvent::kPageFault, Step::kErrRnr);
    default: return note(r, ResponderEvent::kRemoteAccess, Step::kErrRemoteAccess);
  }
  return note(r, r.is_read ? ResponderEvent::kReadRequest : ResponderEvent::kAtomicRequest,
              r.is_read ? Step::kExecuteRead : Step::kExecuteAtomic);
}

Step Responder::execute_read(Request& r) {
  const uint32_t length = r.packet.reth.dma_length;
  const uint32_t packets = length == 0 ? 1 : (length + r.qp.pmtu - 1) / r.qp.pmtu;
  r.host.delivered(psn_add(r.packet.psn, packets - 1), MessageKind::kRead, length);
  r.state.epsn = psn_add(r.state.epsn, packets);
  ++r.state.msn;
  r.host.send_read_responses(r.packet.psn, r.packet.reth, r.state.msn & kPsnMask);
  return Step::kDone;
}

Step Responder::execute_atomic(Request& r) {
  r.host.delivered(r.packet.psn, r.message_kind(), 8);
  uint64_t original = 0;
  if (r.host.atomic(r.packet.atomic, r.opcode == op::kRcFetchAdd, original) != HostResult::kOk)
    return note(r, ResponderEvent::kDmaFault, Step::kErrRemoteOperation);
  auto& results = r.state.atomic_results;
  if (results.size() == ResponderState::kAtomicResults) results.pop_front();
  results.push_back({r.packet.psn, original});
  r.state.epsn = psn_add(r.state.epsn, 1);
  ++r.state.msn;
  r.host.send_atomic_ack(r.packet.psn, original, r.state.msn & kPsnMask);
  return Step::kDone;
}

Step Responder::check_write_access(Request& r) {
  if (!r.qp.remote_write) return note(r, ResponderEvent::kRemoteAccess, Step::kErrRemoteAccess);
  ResponderState& s = r.state;
  s.write_va = r.packet.reth.va;
  s.write_rkey = r.packet.reth.rkey;
  s.write_length = r.packet.reth.dma_length;
  s.offset = 0;
  s.have_wqe = false;
  return note(r, ResponderEvent::kWriteRequest, Step::kCheckResource);
}

Step Responder::check_resource(Request& r) {
  // A receive WQE is needed before anything of a SEND lands (and at the end of a WRITE with
  // immediate): none posted is an RNR NAK, and the requester sends the same packet again.
  if (r.needs_wqe() && !r.state.have_wqe) {
    if (!r.host.take_receive_wqe()) return note(r, ResponderEvent::kNoReceiveWqe, Step::kErrRnr);
    r.state.have_wqe = true;
  }
  return r.is_write ? Step::kWriteData : Step::kReceiveData;
}

Step Responder::write_data(Request& r) {
  ResponderState& s = r.state;
  if (s.offset + r.packet.payload.size() > s.write_length)
    return note(r, ResponderEvent::kWriteBeyondLength, Step::kErrInvalidRequest);
  switch (r.host.write_remote(s.write_va + s.offset, s.write_rkey, r.packet.payload)) {
    case HostResult::kOk: return Step::kComplete;
    case HostResult::kDmaFault: return note(r, ResponderEvent::kDmaFault, Step::kErrRemoteOperation);
    case HostResult::kPageFault: return note(r, ResponderEvent::kPageFault, Step::kErrRnr);
    default: return note(r, ResponderEvent::kRemoteAccess, Step::kErrRemoteAccess);
  }
}

Step Responder::receive_data(Request& r) {
  switch (r.host.write_receive(r.state.offset, r.packet.payload)) {
    case HostResult::kOk: return Step::kComplete;
    case HostResult::kLength: return note(r, ResponderEvent::kReceiveTooLong, Step::kErrLength);
    case HostResult::kDmaFault: return note(r, ResponderEvent::kDmaFault, Step::kErrLocalProtection);
    case HostResult::kPageFault: return note(r, ResponderEvent::kPageFault, Step::kErrRnr);
    default: return note(r, ResponderEvent::kLocalProtection, Step::kErrLocalProtection);
  }
}

Step Responder::complete(Request& r) {
  ResponderState& s = r.state;
  s.offset += r.packet.payload.size();
  s.epsn = psn_add(s.epsn, 1);
  s.incoming = r.last ? Incoming::kNone : r.kind();
  if (!r.last) return Step::kAcknowledge;
  if (r.invalidate) {  // the data is placed; the key is freed before the completion says so
    if (r.host.invalidate(r.packet.invalidate_rkey) != HostResult::kOk)
      return note(r, ResponderEvent::kInvalidateFailed, Step::kErrInvalidRequest);
    note(r, ResponderEvent::kRemoteInvalidation, Step::kComplete);
  }
  ++s.msn;
  const uint32_t bytes = uint32_t(r.is_write ? s.write_length : s.offset);
  r.host.delivered(r.packet.psn, r.message_kind(), bytes);
  if (r.needs_wqe()) {
    note(r, ResponderEvent::kCompletion, Step::kComplete);
    r.host.complete_receive({.kind = r.message_kind(),
                             .bytes = bytes,
                             .immediate = r.invalidate ? r.packet.invalidate_rkey : r.packet.immediate,
                             .solicited = r.packet.solicited});
  }
  s.have_wqe = false;
  s.offset = 0;
  return Step::kAcknowledge;
}

Step Responder::acknowledge(Request& r) {
  if (r.packet.ack_req || r.last) r.reply(r.packet.psn, aeth_ack(kAethCreditsInvalid));
  return Step::kDone;
}

Step Responder::err_sequence(Request& r) {
  // One sequence NAK per gap: the packets behind the missing one would only spend the
  // requester's retries.
  note(r, ResponderEvent::kOutOfSequence, Step::kDone);
  if (!r.state.sequence_nak_sent) {
    r.state.sequence_nak_sent = true;
    r.reply(r.state.epsn, aeth_nak(NakCode::kPsnSequenceError));
  }
  return Step::kDone;
}

Step Responder::err_rnr(Request& r) {
  if (r.unreliable()) return Step::kDropMessage;  // UC has no RNR: the message is lost
  // The packets behind it are dropped silently until it comes again: a sequence NAK for them would
  // make the requester resend at once and spend its retry count.
  r.state.sequence_nak_sent = true;
  r.reply(r.packet.psn, aeth_rnr_nak(r.qp.min_rnr_timer));
  return Step::kDone;
}

Step Responder::err_nak(Request& r, NakCode nak, ResponderError error, bool uc_drops) {
  // UC answers nothing; on a remote error it drops the message and stays up (IBA 9.7.7).
  if (r.unreliable() && uc_drops) return Step::kDropMessage;
  r.reply(r.packet.psn, aeth_nak(nak));
  r.host.fail(error, r.state.have_wqe);
  r.state.have_wqe = false;
  r.state.incoming = Incoming::kNone;
  return Step::kDone;
}

Step Responder::drop_message(Request& r) {
  note(r, ResponderEvent::kUcMessageDropped, Step::kDone);
  r.state.incoming = Incoming::kNone;
  r.state.offset = 0;
  r.state.epsn = psn_add(r.packet.psn, 1);
  return Step::kDone;
}

}  // namespace hcaemu::transport::rc
