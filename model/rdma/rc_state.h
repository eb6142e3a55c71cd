#pragma once
// Per-QP state of the RC transport (IBA chapter 9): the requester's PSN, its outstanding
// messages in PSN order and its retry budget; the responder's expected PSN, the message it is in
// the middle of and the last atomic it executed (for duplicates). Lives inside the QueuePair so it
// goes with the QP (2RST, DESTROY_QP, function reset) and can never dangle.
#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "model/queues/send_wqe.h"
#include "model/queues/sq_doorbells.h"
#include "model/objects/page_faults.h"
#include "model/rdma/transport_timer.h"
#include "transport/rc/completer.h"
#include "transport/rc/requester.h"
#include "transport/rc/responder.h"

namespace hcaemu::model {

// One send WQE on its way: fetched, validated, given its PSNs, waiting for its ACK or response.
// The protocol's part (PSNs, response state) is transport/rc/completer.h's; the WQE and the trace
// stamps are the device's.
struct SendMessage : transport::rc::OutstandingMessage {
  SendWqe wqe;
  uint64_t id = 0;           // per-function message number (latency trace)
  uint64_t doorbell_ps = 0;  // model time of the doorbell that brought it (latency trace)
};

// The requester's protocol state (transport/rc/completer.h), its messages in PSN order and the
// device's timer.
struct RcRequester : transport::rc::RequesterState {
  std::deque<SendMessage> outstanding;
  SqDoorbells doorbells;  // rung and not yet served: how far the SQ goes, and when each WQE was rung
  bool timer_armed = false;
  TimerDeadline deadline{};  // ACK timeout or RNR wait (timer_armed)
  PageFaultWait page_fault;  // the WQE at the head of the SQ waits for its pages (ODP)
  // Signature pipelining (qpc.drain_sigerr): a signature error was reported, so the next fenced
  // WQE drains the SQ (SQD) instead of running; SQD2RTS clears it.
  bool signature_error_pending = false;
  // A message already on its way met a page not present (its payload when sent again, or the
  // READ response or atomic result it receives): sending goes on from this PSN once the fault is
  // resumed, and resends asked for meanwhile fold into it.
  std::optional<uint32_t> fault_resend_psn;
  // DCQCN held the rest of a message (or of a resend) from this PSN on: it goes on when the rate
  // allows, before the SQ takes another WQE (rdma/congestion.cpp).
  std::optional<uint32_t> paced_psn;
  // Folds `psn` into fault_resend_psn: the resume sends again from the earliest PSN held.
  void resend_after_fault_from(uint32_t psn) {
    if (!fault_resend_psn || transport::psn_diff(psn, *fault_resend_psn) < 0) fault_resend_psn = psn;
  }
};

// The responder's protocol state (transport/rc/responder.h) and the receive WQE it fills: the WQE's
// index and buffers are the device's business, not the protocol's.
struct RcResponder : transport::rc::ResponderState {
  uint16_t wqe_index = 0;
  std::vector<Sge> sges;
  PageFaultWait page_fault;  // requests are answered RNR NAK until their pages are in (ODP)
  std::array<uint8_t, 8> signature_pi{};  // a wire PI split by a packet boundary (objects/signature_path.h)
};

// DC (rdma/dc.cpp). A DCI talks to one DCT at a time, the one its WQEs' address names: its requests
// go there from `start_psn` on, the first of them marked as opening the connection. A WQE naming
// another DCT waits until all before it are acknowledged (the connection is done), then opens its own.
struct DcInitiator {
  bool connected = false;
  uint32_t qpn = 0;  // the DCI's own number (the DCETH names it)
  UdAddress target;  // the DCT's number, access key and address
  uint32_t start_psn = 0;
  // DCI streams (DCS): the stream channels in error, until the driver resets one (RTS2RTS) or the
  // QP (2RST). As many as the qpc allows and the DCI itself goes to ERR.
  std::vector<uint16_t> errored_streams;
  bool stream_errored(uint16_t stream) const {
    return std::find(errored_streams.begin(), errored_streams.end(), stream) != errored_streams.end();
  }
};
// A DCT answers many DCIs at once: per connection (the DCI's GID and number) the responder state of
// its requests. The one being served is swapped into the QP's RcResponder while its packet runs.
struct DcConnection {
  std::array<uint8_t, 16> gid{};
  std::array<uint8_t, 6> mac{};
  uint32_t initiator = 0;
  uint32_t start_psn = 0;
  uint64_t last_used = 0;  // a packet counter: the idle connection longest unused makes room
  RcResponder resp;
};
struct DcTarget {
  static constexpr size_t kMaxConnections = 256;  // per DCT; beyond, idle ones are closed
  uint64_t access_key = 0;
  std::array<uint8_t, 0x40> context{};  // the dctc as created (QUERY_DCT)
  std::vector<DcConnection> connections;
  const DcConnection* serving = nullptr;  // while a packet runs: where its answers go
  bool serving_failed = false;            // and whether it ended the connection
  uint64_t packets = 0;
};

struct RcState {
  RcRequester req;
  RcResponder resp;
  DcInitiator dci;  // st DCI
  DcTarget dct;     // st DCT
};

}  // namespace hcaemu::model
