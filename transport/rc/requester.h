#pragma once
// The requester of the connected services (IBA 9.7.4): admits send work requests in order (a
// fenced one waits for the READ and atomic responses before it), gives each its PSNs and cuts it
// into packets with the opcodes of its position (FIRST/MIDDLE/LAST/ONLY), RETH, ImmDt, IETH and
// AtomicETH; resends go back N from a PSN, a READ asking only for the responses it misses. Named
// states like the responder and completer (responder.h, completer.h). The device side (WQE fetch,
// local keys, payload DMA, the port) is RequesterHost's: model/rdma/requester.cpp.
#include <array>
#include <cstdint>
#include <functional>
#include <span>

#include "transport/rc/completer.h"
#include "transport/roce_packet.h"

namespace hcaemu::transport::rc {

struct RequesterQp {
  Service service = Service::kRc;
  uint32_t pmtu = 1024;
  bool datagram = false;  // UD/QP1: one packet per message, never acknowledged
};

enum class RequesterError : uint8_t { kNoAddress, kLocalProtection };

enum class RequesterEvent : uint8_t {
  kFenced,        // 10.8.3.3: a fenced request waits for earlier READ/atomic responses
  kPackets,       // request packets sent (first transmissions and resends)
  kResent,        // messages sent again from a resend point
  kNoAddress,     // the QP's path has no usable source address: local QP operation error
  kPayloadFault,  // the payload's local keys or DMA failed: local protection error
  kInitiatorDepth,  // a READ or atomic waits: max_rd_atomic of them are outstanding
  kPageFault,     // the payload's pages are not present (ODP): sending stops until the host resumes it
  kCount
};
const char* event_name(RequesterEvent);

class RequesterHost {
 public:
  virtual ~RequesterHost() = default;
  virtual size_t outstanding() = 0;  // messages in PSN order, the oldest at 0
  virtual OutstandingMessage& message(size_t index) = 0;
  virtual bool address(RocePacket& packet) = 0;  // L2/L3/L4 fields and destination QP of the path
  // Prepares the reads of a message's payload (its local keys checked): kProtection fails the
  // message; kPageFault (ODP) stops the transmission, the host resends from the packet it names
  // once the fault is resumed.
  virtual HostResult open_payload(size_t index, uint32_t from_psn) = 0;
  // `size` bytes of the payload at `offset` for `packet` (its headers already set), and the
  // model time they are there (0: at once).
  virtual HostResult payload(size_t index, uint64_t offset, uint32_t size, const RocePacket& packet,
                             std::span<const uint8_t>& bytes, uint64_t& ready_ps) = 0;
  virtual void send(RocePacket& packet, uint64_t ready_ps) = 0;
  // Packet `number` of message `index` has left; `first_of_burst`: the first of this transmission.
  virtual void sent(size_t index, uint32_t number, bool first_of_burst) = 0;
  virtual void fail(size_t index, RequesterError error) = 0;
  virtual bool stopped() = 0;
  // The QP's rate limit holds its next packet: the transmission stops after the packet just sent,
  // and the host goes on (continue_from `psn`, the packet that is next) when the rate allows.
  virtual bool paced() { return false; }
  virtual void pause_at(uint32_t psn) { (void)psn; }
  virtual void count(RequesterEvent event) = 0;
};

enum class RequesterStep : uint8_t {
  kCheckFence, kFenced, kAssignPsn, kAddress, kRequestPacket, kOpenPayload, kDataPacket, kSelectResend,
  kErrNoAddress, kErrPayload, kPageFault, kDone,
  kCount
};
const char* step_name(RequesterStep);

class Requester {
 public:
  // Whether a request may be admitted now; a fenced one waits while an earlier READ or atomic
  // has no response, and a READ or atomic (`needs_response`) while `initiator_depth` of them
  // (the QP's max_rd_atomic, IBA 9.4.4 / 11.2.4.2) still have none (state.fence_blocked says so
  // until progress releases it).
  bool admit(RequesterState& state, bool fenced, RequesterHost& host, bool needs_response = false,
             uint32_t initiator_depth = 0);
  // Gives a new message its PSNs (it is not on the outstanding list yet).
  void assign_psns(RequesterState& state, const RequesterQp& qp, OutstandingMessage& message);
  // Sends message `index` from `from_psn` on.
  void transmit(RequesterState& state, const RequesterQp& qp, size_t index, uint32_t from_psn, RequesterHost& host);
  // Go-back-N: every outstanding message with PSNs at or after `psn` is sent again from there.
  void resend_from(RequesterState& state, const RequesterQp& qp, uint32_t psn, RequesterHost& host);
  // After a pause (RequesterHost::paced): what was held is sent from `psn` on, as a resend goes
  // (every outstanding packet from there), but not counted as one.
  void continue_from(RequesterState& state, const RequesterQp& qp, uint32_t psn, RequesterHost& host);

  void set_trace(std::function<void(RequesterStep)> trace) { trace_ = std::move(trace); }
  uint64_t events(RequesterEvent event) const { return events_[event]; }

 private:
  struct Work;
  void run(RequesterStep first, Work& w);
  RequesterStep dispatch(RequesterStep step, Work& w);
  RequesterStep check_fence(Work& w);
  RequesterStep assign_psn(Work& w);
  RequesterStep address(Work& w);
  RequesterStep request_packet(Work& w);
  RequesterStep open_payload(Work& w);
  RequesterStep data_packet(Work& w);
  RequesterStep select_resend(Work& w);
  RequesterStep fail(Work& w, RequesterError error);
  RequesterStep note(Work& w, RequesterEvent event, RequesterStep next);

  std::function<void(RequesterStep)> trace_;
  EventCounts<RequesterEvent> events_;
};

// The wire opcode (RC's numbering) of packet `first`/`last` of a request of this kind.
uint8_t request_opcode(const WorkRequest& request, bool first, bool last);

}  // namespace hcaemu::transport::rc
