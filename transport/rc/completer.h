#pragma once
// The completer of the connected services (IBA 9.7.6): ACKs, NAKs, RNR NAKs, READ responses and
// atomic ACKs retire the requester's outstanding messages, lost responses are found (implied NAK)
// and resent, retry budgets are spent and reloaded, and timeouts resend. Written like the responder
// (responder.h): named states, one small function each, one dispatch loop. It knows the protocol
// and nothing of the device: the outstanding messages' buffers, CQEs, resends and timers are
// CompleterHost's (model/rdma/requester.cpp implements it; the unit tests fake it).
#include <array>
#include <cstdint>
#include <functional>
#include <span>

#include "transport/rc/responder.h"
#include "transport/roce_packet.h"

namespace hcaemu::transport::rc {

enum class RequestKind : uint8_t { kNop, kSend, kWrite, kRead, kAtomic };

// What the protocol needs of a send work request (the device parses it from its WQE).
struct WorkRequest {
  RequestKind kind = RequestKind::kSend;
  bool with_imm = false;    // SEND/WRITE with immediate
  bool invalidate = false;  // SEND with Invalidate (immediate holds the rkey)
  bool fetch_add = false;   // atomics: fetch-and-add, else compare-and-swap
  bool solicited = false;
  bool fenced = false;
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0, compare = 0;
  uint32_t immediate = 0;
  uint32_t xrc_srqn = 0;    // XRC: the XRC SRQ at the target
  bool has_inline = false;  // the payload is in the request itself
};

// The protocol's view of one message the requester has sent.
struct OutstandingMessage {
  WorkRequest request;
  uint64_t length = 0;
  uint32_t first_psn = 0;
  uint32_t npsn = 1;            // PSNs it occupies (READ: one per response packet; NOP: 0)
  bool needs_response = false;  // READ and atomics complete on their response, not on an ACK
  bool responded = false;
  uint32_t read_next_psn = 0;   // the READ response PSN expected next
  uint32_t last_psn() const { return psn_add(first_psn, npsn == 0 ? 0 : npsn - 1); }
  // Whether `psn` is one of its PSNs (a NOP has none).
  bool holds(uint32_t psn) const { return npsn != 0 && psn_diff(psn, first_psn) >= 0 && psn_diff(psn, last_psn()) <= 0; }
  // Where a resend of this READ or atomic starts: a READ asks only for the responses it misses.
  uint32_t resend_psn() const { return request.kind == RequestKind::kRead ? read_next_psn : first_psn; }
};

// Per QP: the requester's PSNs and retry state (IBA 9.7.4-9.7.6).
struct RequesterState {
  uint32_t next_psn = 0;          // PSN of the next new packet
  uint32_t acked_psn = 0;         // everything up to here is acknowledged
  uint32_t retries_left = 7;      // qpc retry_count, reloaded on progress
  uint32_t rnr_retries_left = 7;  // qpc rnr_retry; 7 = retry for ever
  bool rnr_wait = false;          // waiting out an RNR NAK: resend from rnr_psn when the timer fires
  uint32_t rnr_psn = 0;
  bool implied_resend = false;    // resent from implied_psn on an implied NAK; once until progress
  uint32_t implied_psn = 0;
  bool fence_blocked = false;     // a fenced WQE waits for READ/atomic responses
};

struct CompleterQp {
  Service service = Service::kRc;
  bool acknowledged = true;  // RC/XRC; UC and datagrams complete once on the wire (IBA 9.7.7)
  uint32_t retry_count = 7;
  uint32_t rnr_retry = 7;
  uint32_t pmtu = 1024;
};

enum class CompleterError : uint8_t {
  kRetryExceeded, kRnrRetryExceeded, kBadResponse, kLocalProtection, kRemoteInvalidRequest, kRemoteAccess,
  kRemoteOperation
};

enum class CompleterEvent : uint8_t {
  kAck, kRnrNak, kNak,   // received, by AETH type
  kUnexpectedPsn,        // 9.7.6: a response for a PSN never sent: dropped
  kDuplicateResponse,    // 9.7.6: no outstanding READ/atomic holds its PSN: dropped
  kReservedSyndrome,     // 9.3.5: AETH type 2 is reserved: dropped
  kImpliedNak,           // 9.7.6.1: a later response overtook a READ/atomic: its response was lost
  kSequenceNak,          // 9.7.6: PSN sequence error NAK: go back N
  kReadResponseGap,      // 9.7.6: a READ response missing: ask again from it
  kWrongResponse,        // 9.7.6: a response of the wrong kind for its message: bad response
  kNakInResponse,        // 9.7.6: a READ response whose AETH is not an ACK: dropped
  kTimeout,              // 9.7.6.1.3: the ACK timer expired: resend from the first unacknowledged PSN
  kPageFault,            // a READ response or atomic result for pages not present (ODP): dropped, asked
                         // again once the host resumes the fault
  kCount
};
const char* event_name(CompleterEvent);

class CompleterHost {
 public:
  virtual ~CompleterHost() = default;
  virtual size_t outstanding() = 0;  // messages in PSN order, the oldest at 0
  virtual OutstandingMessage& message(size_t index) = 0;
  // The oldest message is done: its completion (when signalled), then it leaves the list.
  virtual void complete_oldest(bool acknowledged) = 0;
  // kPageFault (ODP): the host raised a fault and resends from the response's PSN once it is
  // resumed; the response is dropped meanwhile.
  virtual HostResult place_read_response(size_t index, uint64_t offset, std::span<const uint8_t> data) = 0;
  virtual HostResult place_atomic_result(size_t index, uint64_t original) = 0;
  virtual void responded(size_t index) = 0;  // latency trace
  // Message `index` fails (index == outstanding(): none named): older ones are flushed, the QP
  // stops as its service says.
  virtual void fail(size_t index, CompleterError error) = 0;
  virtual bool stopped() = 0;  // the send queue has stopped (an error on the way)
  virtual void resend_from(uint32_t psn) = 0;
  virtual void arm_ack_timer() = 0;  // (re)armed, or stopped when nothing waits
  virtual void arm_rnr_timer(uint8_t timer_code) = 0;
  virtual void resume_sends() = 0;  // a fenced WQE may go now
  virtual void count(CompleterEvent event) = 0;
};

enum class CompleterStep : uint8_t {
  kGetResponse, kCheckAck, kAck, kRnrNak, kNak, kGetMessage, kCheckResponse, kRead, kAtomic, kUpdate, kRetire,
  kCheckImplied, kRetry, kArmTimer, kRnrWait, kTimeout, kDrop, kErrRetryExceeded, kErrRnrRetryExceeded, kErrBadResponse,
  kErrLocalProtection, kErrRemote, kDone,
  kCount
};
const char* step_name(CompleterStep);

class Completer {
 public:
  // A response packet (ACK, NAK, READ response, atomic ACK) for a QP in RTS.
  void response(RequesterState& state, const CompleterQp& qp, const RocePacket& packet, CompleterHost& host);
  // The QP's ACK or RNR timer expired.
  void timeout(RequesterState& state, const CompleterQp& qp, CompleterHost& host);
  // Completes what is done from the oldest message on; on progress the retry budget is reloaded.
  void retire(RequesterState& state, const CompleterQp& qp, CompleterHost& host);
  // Where a go-back-N resend after `psn` starts: there, or earlier at the first READ/atomic before
  // it whose response is still missing (received by the responder, its response lost).
  static uint32_t resend_point(CompleterHost& host, uint32_t psn);

  void set_trace(std::function<void(CompleterStep)> trace) { trace_ = std::move(trace); }
  uint64_t events(CompleterEvent event) const { return events_[event]; }

 private:
  struct Work;
  void run(CompleterStep first, Work& w);
  CompleterStep dispatch(CompleterStep step, Work& w);
  CompleterStep get_response(Work& w);
  CompleterStep check_ack(Work& w);
  CompleterStep ack(Work& w);
  CompleterStep rnr_nak(Work& w);
  CompleterStep nak(Work& w);
  CompleterStep get_message(Work& w);
  CompleterStep check_implied(Work& w);
  CompleterStep check_response(Work& w);
  CompleterStep read(Work& w);
  CompleterStep atomic(Work& w);
  CompleterStep update(Work& w);
  CompleterStep retire_step(Work& w);
  CompleterStep retry(Work& w);
  CompleterStep arm_timer(Work& w);
  CompleterStep rnr_wait(Work& w);
  CompleterStep timeout_step(Work& w);
  CompleterStep fail(Work& w, CompleterError error);
  CompleterStep note(Work& w, CompleterEvent event, CompleterStep next);
  static void retire_messages(RequesterState& state, const CompleterQp& qp, CompleterHost& host);

  std::function<void(CompleterStep)> trace_;
  EventCounts<CompleterEvent> events_;
};

}  // namespace hcaemu::transport::rc
