#pragma once
// Per-QP state of the RC transport (IBA chapter 9): the requester's PSN, its outstanding
// messages in PSN order and its retry budget; the responder's expected PSN, the message it is in
// the middle of and the last atomic it executed (for duplicates). Lives inside the QueuePair so it
// goes with the QP (2RST, DESTROY_QP, function reset) and can never dangle.
#include <cstdint>
#include <deque>
#include <vector>

#include "model/queues/send_wqe.h"
#include "model/rdma/transport_timer.h"
#include "transport/rc/responder.h"

namespace hcaemu::model {

// One send WQE on its way: fetched, validated, given its PSNs, waiting for its ACK or response.
struct SendMessage {
  SendWqe wqe;
  uint64_t id = 0;              // per-function message number (latency trace)
  uint64_t length = 0;
  uint32_t first_psn = 0;
  uint32_t npsn = 1;            // PSNs the message occupies (READ: one per response packet)
  bool needs_response = false;  // READ and atomics complete on their response, not on an ACK
  bool responded = false;
  uint32_t read_next_psn = 0;   // the READ response PSN expected next
  uint64_t doorbell_ps = 0;     // model time of the doorbell that brought it (latency trace)
  uint32_t last_psn() const;
};

struct RcRequester {
  uint32_t next_psn = 0;        // PSN of the next new packet
  uint32_t acked_psn = 0;       // everything up to here is acknowledged
  std::deque<SendMessage> outstanding;
  uint32_t retries_left = 7;    // qpc retry_count, reloaded on progress
  uint32_t rnr_retries_left = 7;  // qpc rnr_retry; 7 = retry for ever
  bool timer_armed = false;
  bool rnr_wait = false;        // waiting out an RNR NAK: resend from rnr_psn when the timer fires
  uint32_t rnr_psn = 0;
  bool implied_resend = false;  // resent from implied_psn on an implied NAK; once until progress
  uint32_t implied_psn = 0;
  TimerDeadline deadline{};     // ACK timeout or RNR wait (timer_armed)
  bool fence_blocked = false;   // a fenced WQE waits for READ/atomic responses
  bool yielding = false;        // the SQ loop handed over to arrived frames (RdmaEngine::process_sq)
  bool sq_again = false;        // ... and one of them asked for the SQ to be processed
};

// The responder's protocol state (transport/rc/responder.h) and the receive WQE it fills: the WQE's
// index and buffers are the device's business, not the protocol's.
struct RcResponder : transport::rc::ResponderState {
  uint16_t wqe_index = 0;
  std::vector<Sge> sges;
};

struct RcState {
  RcRequester req;
  RcResponder resp;
};

}  // namespace hcaemu::model
