#pragma once
// The responder of the connected services (RC, UC and XRC targets; IBA 9.7.5, 9.7.7, A14), written
// as a state machine the way Linux Soft-RoCE writes its own: a request packet runs through named
// states, one small function each returning the next, until kDone. It knows the wire
// (transport/roce_packet.h) and the protocol and nothing of the device: receive WQEs, key checks,
// memory, completions and frames go through ResponderHost, which the HCA model implements
// (model/rdma/responder.cpp) and the unit tests fake.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>

#include "transport/rc/steps.h"
#include "transport/roce_packet.h"

namespace hcaemu::transport::rc {

enum class Service : uint8_t { kRc, kUc, kXrc, kDc };

// A service's opcodes are RC's plus its base (IBA table 38): UC 0x20, XRC 0xa0, DC 0xc0 (hcaemu's
// encoding, ib_opcodes.h). The machines speak RC's numbering and add or strip the base at the wire.
constexpr uint8_t opcode_base(Service service) {
  switch (service) {
    case Service::kUc: return 0x20;
    case Service::kXrc: return opcode::kXrcBase;
    case Service::kDc: return opcode::kDcBase;
    default: return 0;
  }
}

// Per QP; the host keeps it with the QP so it goes with it (reset, destroy).
struct ResponderState {
  uint32_t epsn = 0;  // expected PSN
  uint32_t msn = 0;   // messages completed (AETH MSN)
  bool sequence_nak_sent = false;
  enum class Incoming : uint8_t { kNone, kSend, kWrite } incoming = Incoming::kNone;
  bool have_wqe = false;  // a receive WQE is taken for the message in progress
  uint64_t offset = 0;    // bytes of the message placed so far
  // WRITE: the remote range the first packet's RETH named.
  uint64_t write_va = 0;
  uint32_t write_rkey = 0;
  uint64_t write_length = 0;
  uint32_t xrc_srqn = 0;  // XRC target: the XRC SRQ the current request names
  // Duplicate atomics are answered from here, never executed twice. A go-back-N resend repeats
  // every atomic from the lost PSN on, so the results of as many recent atomics as the responder
  // has resources for are kept (IBA 9.4.5), not only the last one.
  struct AtomicResult {
    uint32_t psn = 0;
    uint64_t original = 0;
  };
  static constexpr size_t kAtomicResults = 16;  // the caps' log_max_ra_res_qp
  std::deque<AtomicResult> atomic_results;
};

// The QP attributes the responder acts on (the host reads them from its QP context).
struct ResponderQp {
  Service service = Service::kRc;
  bool remote_read = false, remote_write = false, remote_atomic = false;
  uint32_t pmtu = 1024;
  uint8_t min_rnr_timer = 0;  // IBA table 45 code, sent in RNR NAKs
};

enum class RemoteAccess : uint8_t { kRead, kWrite, kAtomic };
// kPageFault: the memory is not present yet (ODP); the host raised a page fault and the request is
// answered RNR NAK (UC: dropped) until the pages are in.
enum class HostResult : uint8_t { kOk, kProtection, kLength, kDmaFault, kPageFault };
// Completion statuses of a failed receive (the host maps them to its CQE syndromes).
enum class ResponderError : uint8_t { kLocalLength, kLocalProtection, kRemoteInvalidRequest, kRemoteAccess, kRemoteOperation };
enum class MessageKind : uint8_t { kSend, kSendImm, kSendInvalidate, kWrite, kWriteImm, kRead, kCompareSwap, kFetchAdd };

struct ReceiveCompletion {
  MessageKind kind = MessageKind::kSend;  // kSend, kSendImm, kSendInvalidate or kWriteImm
  uint32_t bytes = 0;
  uint32_t immediate = 0;  // ImmDt, or the invalidated rkey
  bool solicited = false;
};

// Every path a request can take that someone may want to count, with the IBA rule it follows.
enum class ResponderEvent : uint8_t {
  kWriteRequest, kReadRequest, kAtomicRequest,  // accepted requests by kind
  kDuplicate,          // 9.7.5.1: PSN before the expected one; answered again, nothing re-executed
  kOutOfSequence,      // 9.7.5.1: PSN past the expected one; one PSN sequence error NAK until it comes
  kUcResync,           // 9.7.7: UC lost a packet: resynchronise on this PSN, the message is lost
  kInvalidXrcSrq,      // A14: the XRCETH names no XRC SRQ of the QP's domain, or changes mid-message
  kOpcodeSequence,     // 9.8.3: MIDDLE/LAST outside a message of its kind, FIRST/ONLY inside one
  kUnsupportedOpcode,  // 9.7.7: UC carries no READ or atomic
  kMisalignedAtomic,   // 9.4.5: atomics name an 8-byte aligned address
  kRemoteAccess,       // 9.7.5.1.5-like: QP access bits, rkey, PD, bounds: remote access error NAK
  kNoReceiveWqe,       // 9.7.5.1: RNR NAK (RC), the message is lost (UC)
  kWriteBeyondLength,  // 9.7.5.1: more WRITE payload than the RETH's DMA length: invalid request
  kReceiveTooLong,     // 9.7.5.1: the SEND is longer than its receive WQE: local length error
  kLocalProtection,    // the receive WQE's buffers fail their keys: local protection error
  kDmaFault,           // host memory failed: remote operational error
  kInvalidateFailed,   // 10.6.7: SEND with Invalidate of a key that cannot be invalidated
  kUcMessageDropped,   // 9.7.7: UC drops a message on an error and stays up
  kRemoteInvalidation, kCompletion,
  kPageFault,          // ODP: the request's memory is not present yet: RNR NAK, sent again later
  kCount
};
const char* event_name(ResponderEvent);

class ResponderHost {
 public:
  virtual ~ResponderHost() = default;
  virtual bool xrc_srq_valid(uint32_t srqn) = 0;  // an XRC SRQ of the target QP's domain
  // Takes the next posted receive WQE (RQ, SRQ, or for XRC the SRQ in state.xrc_srqn).
  virtual bool take_receive_wqe() = 0;
  virtual HostResult check_remote(uint64_t va, uint32_t rkey, uint64_t length, RemoteAccess access) = 0;
  virtual HostResult write_remote(uint64_t va, uint32_t rkey, std::span<const uint8_t> data) = 0;
  // Into the taken receive WQE's buffers at `offset`; kLength when they are too short.
  virtual HostResult write_receive(uint64_t offset, std::span<const uint8_t> data) = 0;
  // On the range check_remote() has just accepted for this packet.
  virtual HostResult atomic(const AtomicEth& atomic, bool fetch_add, uint64_t& original) = 0;
  virtual HostResult invalidate(uint32_t rkey) = 0;
  virtual void send_ack(uint32_t psn, uint8_t syndrome, uint32_t msn) = 0;
  virtual void send_atomic_ack(uint32_t psn, uint64_t original, uint32_t msn) = 0;
  virtual void send_read_responses(uint32_t psn, const Reth& reth, uint32_t msn) = 0;
  virtual void complete_receive(const ReceiveCompletion& completion) = 0;
  // The QP fails (IBA 10.3.1): an error completion for the taken WQE if any, the QP to ERR.
  virtual void fail(ResponderError error, bool wqe_taken) = 0;
  virtual void pipeline() = 0;  // the receive pipeline's time for this packet
  virtual void delivered(uint32_t last_psn, MessageKind kind, uint32_t bytes) = 0;  // latency trace
  virtual void count(ResponderEvent event) = 0;
};

enum class ResponderStep : uint8_t {
  kGetRequest, kCheckXrcSrq, kCheckPsn, kCheckOpSequence, kCheckOpValid, kCheckRkey, kCheckWriteAccess,
  kCheckResource, kExecuteRead, kExecuteAtomic, kWriteData, kReceiveData, kComplete, kAcknowledge, kDuplicate,
  kErrSequence, kErrRnr, kErrInvalidRequest, kErrRemoteAccess, kErrRemoteOperation, kErrLocalProtection,
  kErrLength, kDropMessage, kDone,
  kCount
};
const char* step_name(ResponderStep);

class Responder {
 public:
  // Runs one request packet (its QP's service already checked by the caller) to kDone.
  void receive(ResponderState& state, const ResponderQp& qp, const RocePacket& packet, ResponderHost& host);
  // Called with every state entered (tests, debug logs).
  void set_trace(std::function<void(ResponderStep)> trace) { trace_ = std::move(trace); }
  uint64_t events(ResponderEvent event) const { return events_[event]; }

 private:
  struct Request;
  ResponderStep get_request(Request& r);
  ResponderStep check_xrc_srq(Request& r);
  ResponderStep check_psn(Request& r);
  ResponderStep duplicate(Request& r);
  ResponderStep check_op_sequence(Request& r);
  ResponderStep check_op_valid(Request& r);
  ResponderStep check_rkey(Request& r);
  ResponderStep check_write_access(Request& r);
  ResponderStep check_resource(Request& r);
  ResponderStep execute_read(Request& r);
  ResponderStep execute_atomic(Request& r);
  ResponderStep write_data(Request& r);
  ResponderStep receive_data(Request& r);
  ResponderStep complete(Request& r);
  ResponderStep acknowledge(Request& r);
  ResponderStep err_sequence(Request& r);
  ResponderStep err_rnr(Request& r);
  ResponderStep err_nak(Request& r, NakCode nak, ResponderError error, bool uc_drops);
  ResponderStep drop_message(Request& r);
  ResponderStep dispatch(ResponderStep step, Request& r);
  ResponderStep note(Request& r, ResponderEvent event, ResponderStep next);

  std::function<void(ResponderStep)> trace_;
  EventCounts<ResponderEvent> events_;
};

}  // namespace hcaemu::transport::rc
