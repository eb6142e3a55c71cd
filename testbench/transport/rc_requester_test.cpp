// The connected-service requester's states (transport/rc/requester.h), driven through a fake host:
// fences, PSN assignment, packetisation per opcode and service, resends and both error paths; one
// test checks that every state is entered.
#include "transport/rc/requester.h"

#include <gtest/gtest.h>

#include "testbench/transport/step_scenarios.h"

#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace hcaemu::transport::rc {
namespace {

namespace op = opcode;
using Step = RequesterStep;

struct Sent {
  uint8_t opcode;
  uint32_t psn;
  bool ack_req;
  size_t bytes;
  Reth reth;
  AtomicEth atomic;
  uint32_t immediate, xrc_srqn;
};

struct FakeHost : RequesterHost {
  std::vector<OutstandingMessage> messages;
  bool address_ok = true;
  HostResult open_result = HostResult::kOk;
  std::vector<uint32_t> opened_from;  // the PSN each payload open starts at
  int fault_at_packet = -1;  // the payload read of this packet (counted over all) fails
  int stop_after = -1;       // the send queue stops after this many packets
  std::vector<uint8_t> bytes = std::vector<uint8_t>(4096, 0x11);
  std::vector<Sent> sent_packets;
  std::vector<std::pair<size_t, RequesterError>> failures;
  int payload_reads = 0;

  size_t outstanding() override { return messages.size(); }
  OutstandingMessage& message(size_t index) override { return messages.at(index); }
  bool address(RocePacket& p) override {
    p.dest_qp = 0x55;
    return address_ok;
  }
  HostResult open_payload(size_t, uint32_t from_psn) override {
    opened_from.push_back(from_psn);
    return open_result;
  }
  HostResult payload(size_t, uint64_t, uint32_t size, const RocePacket&, std::span<const uint8_t>& out,
                     uint64_t& ready) override {
    if (payload_reads++ == fault_at_packet) return HostResult::kDmaFault;
    out = std::span<const uint8_t>(bytes).first(size);
    ready = 0;
    return HostResult::kOk;
  }
  void send(RocePacket& p, uint64_t) override {
    sent_packets.push_back({p.opcode, p.psn, p.ack_req, p.payload.size(), p.reth, p.atomic, p.immediate, p.xrc_srqn});
  }
  void sent(size_t, uint32_t, bool) override {}
  void fail(size_t index, RequesterError error) override { failures.push_back({index, error}); }
  bool stopped() override { return !failures.empty() || (stop_after >= 0 && int(sent_packets.size()) >= stop_after); }
  void count(RequesterEvent) override {}
};

OutstandingMessage message(RequestKind kind, uint32_t first, uint64_t length, uint32_t pmtu = 256) {
  OutstandingMessage m;
  m.request.kind = kind;
  m.request.remote_va = 0x10000;
  m.request.rkey = 0x77;
  m.length = length;
  m.first_psn = first;
  m.read_next_psn = first;
  m.npsn = kind == RequestKind::kAtomic || length == 0 ? 1 : uint32_t((length + pmtu - 1) / pmtu);
  m.needs_response = kind == RequestKind::kRead || kind == RequestKind::kAtomic;
  return m;
}

struct Bench {
  Requester requester;
  RequesterState state;
  RequesterQp qp{.service = Service::kRc, .pmtu = 256};
  FakeHost host;
  testing_steps::StepRecorder<Step> steps{step_name};

  Bench() {
    state.next_psn = 100;
    requester.set_trace(steps.hook());
  }
  void transmit(size_t index, uint32_t from) {
    steps.path.clear();
    requester.transmit(state, qp, index, from, host);
  }
  void expect_path(std::vector<Step> path) { steps.expect(std::move(path)); }
};

using Scenario = testing_steps::Scenario<Bench>;

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> kAll = {
      {"FencedRequestWaitsForAnOutstandingRead",
       [](Bench& b) {
         b.host.messages = {message(RequestKind::kRead, 100, 64)};
         EXPECT_FALSE(b.requester.admit(b.state, true, b.host));
         b.expect_path({Step::kCheckFence, Step::kFenced});
         EXPECT_TRUE(b.state.fence_blocked);
         EXPECT_TRUE(b.requester.admit(b.state, false, b.host));  // unfenced requests pass
         b.host.messages[0].responded = true;
         EXPECT_TRUE(b.requester.admit(b.state, true, b.host));
         EXPECT_FALSE(b.state.fence_blocked);
       }},
      // Found on a lossy link (issue 15's fault test): ib_atomic_bw kept 128 atomics in flight on a
      // QP with max_rd_atomic 16; a lost response sent them all again, the responder (which keeps 16
      // results) could not answer the older ones, and the QP ended in retry exceeded.
      {"AReadOrAtomicWaitsAtTheInitiatorDepth",
       [](Bench& b) {
         b.host.messages = {message(RequestKind::kRead, 100, 64), message(RequestKind::kWrite, 101, 64),
                            message(RequestKind::kAtomic, 102, 8)};
         EXPECT_FALSE(b.requester.admit(b.state, false, b.host, true, 2));
         b.expect_path({Step::kCheckFence, Step::kFenced});
         EXPECT_TRUE(b.state.fence_blocked);
         EXPECT_EQ(b.requester.events(RequesterEvent::kInitiatorDepth), 1u);
         EXPECT_TRUE(b.requester.admit(b.state, false, b.host)) << "a WRITE or SEND is not held";
         EXPECT_TRUE(b.requester.admit(b.state, false, b.host, true, 3));
         b.host.messages[0].responded = true;
         EXPECT_TRUE(b.requester.admit(b.state, false, b.host, true, 2));
       }},
      {"PsnsFollowTheMtuAndTheKind",
       [](Bench& b) {
         const struct {
           RequestKind kind;
           uint64_t length;
           uint32_t npsn;
         } kCases[] = {{RequestKind::kWrite, 600, 3}, {RequestKind::kSend, 0, 1}, {RequestKind::kRead, 1024, 4},
                       {RequestKind::kAtomic, 8, 1}, {RequestKind::kNop, 0, 0}};
         uint32_t next = 100;
         for (const auto& c : kCases) {
           OutstandingMessage m;
           m.request.kind = c.kind;
           m.length = c.length;
           b.steps.path.clear();
           b.requester.assign_psns(b.state, b.qp, m);
           b.expect_path({Step::kAssignPsn});
           EXPECT_EQ(m.first_psn, next);
           EXPECT_EQ(m.npsn, c.npsn);
           EXPECT_EQ(m.needs_response, c.kind == RequestKind::kRead || c.kind == RequestKind::kAtomic);
           next += c.npsn;
           EXPECT_EQ(b.state.next_psn, next);
         }
         b.qp.datagram = true;
         OutstandingMessage d;
         d.length = 4096;
         b.requester.assign_psns(b.state, b.qp, d);
         EXPECT_EQ(d.npsn, 1u);
       }},
      {"WriteIsCutIntoFirstMiddleLast",
       [](Bench& b) {
         b.host.messages = {message(RequestKind::kWrite, 100, 600)};
         b.transmit(0, 100);
         b.expect_path({Step::kAddress, Step::kOpenPayload, Step::kDataPacket, Step::kDataPacket, Step::kDataPacket,
                        Step::kDataPacket});
         const auto& s = b.host.sent_packets;
         ASSERT_EQ(s.size(), 3u);
         EXPECT_EQ(s[0].opcode, op::kRcRdmaWriteFirst);
         EXPECT_EQ(s[1].opcode, op::kRcRdmaWriteMiddle);
         EXPECT_EQ(s[2].opcode, op::kRcRdmaWriteLast);
         EXPECT_EQ(s[0].reth.dma_length, 600u);
         EXPECT_EQ(s[0].reth.va, 0x10000u);
         EXPECT_EQ(s[2].bytes, 88u);
         EXPECT_FALSE(s[0].ack_req);
         EXPECT_TRUE(s[2].ack_req);
         EXPECT_EQ(s[2].psn, 102u);
       }},
      {"SendOpcodesCarryImmediateOrInvalidate",
       [](Bench& b) {
         b.host.messages = {message(RequestKind::kSend, 100, 8), message(RequestKind::kSend, 101, 8),
                            message(RequestKind::kWrite, 102, 8), message(RequestKind::kSend, 103, 0)};
         b.host.messages[0].request.with_imm = true;
         b.host.messages[0].request.immediate = 0xabcd;
         b.host.messages[1].request.invalidate = true;
         b.host.messages[2].request.with_imm = true;
         for (size_t i = 0; i < 4; ++i) b.transmit(i, 100 + uint32_t(i));
         const auto& s = b.host.sent_packets;
         ASSERT_EQ(s.size(), 4u);
         EXPECT_EQ(s[0].opcode, op::kRcSendOnlyImm);
         EXPECT_EQ(s[0].immediate, 0xabcdu);
         EXPECT_EQ(s[1].opcode, op::kRcSendOnlyInvalidate);
         EXPECT_EQ(s[2].opcode, op::kRcRdmaWriteOnlyImm);
         EXPECT_EQ(s[3].opcode, op::kRcSendOnly);
         EXPECT_EQ(s[3].bytes, 0u);
       }},
      {"UcPacketsAreUcOpcodesAndNeverAskForAnAck",
       [](Bench& b) {
         b.qp.service = Service::kUc;
         b.host.messages = {message(RequestKind::kSend, 100, 8)};
         b.transmit(0, 100);
         ASSERT_EQ(b.host.sent_packets.size(), 1u);
         EXPECT_EQ(b.host.sent_packets[0].opcode, op::kUcSendOnly);
         EXPECT_FALSE(b.host.sent_packets[0].ack_req);
       }},
      {"XrcRequestsNameTheTargetSrq",
       [](Bench& b) {
         b.qp.service = Service::kXrc;
         b.host.messages = {message(RequestKind::kSend, 100, 8)};
         b.host.messages[0].request.xrc_srqn = 0x42;
         b.transmit(0, 100);
         ASSERT_EQ(b.host.sent_packets.size(), 1u);
         EXPECT_EQ(b.host.sent_packets[0].opcode, op::kXrcBase | op::kRcSendOnly);
         EXPECT_EQ(b.host.sent_packets[0].xrc_srqn, 0x42u);
       }},
      {"ResentReadAsksOnlyForTheMissingResponses",
       [](Bench& b) {
         b.host.messages = {message(RequestKind::kRead, 100, 600)};
         b.transmit(0, 101);
         b.expect_path({Step::kAddress, Step::kRequestPacket});
         ASSERT_EQ(b.host.sent_packets.size(), 1u);
         const Sent& s = b.host.sent_packets[0];
         EXPECT_EQ(s.opcode, op::kRcRdmaReadRequest);
         EXPECT_EQ(s.psn, 101u);
         EXPECT_EQ(s.reth.va, 0x10000u + 256);
         EXPECT_EQ(s.reth.dma_length, 344u);
         EXPECT_TRUE(s.ack_req);
       }},
      {"AtomicRequestCarriesItsOperands",
       [](Bench& b) {
         b.host.messages = {message(RequestKind::kAtomic, 100, 8)};
         b.host.messages[0].request.fetch_add = true;
         b.host.messages[0].request.swap_add = 5;
         b.transmit(0, 100);
         ASSERT_EQ(b.host.sent_packets.size(), 1u);
         EXPECT_EQ(b.host.sent_packets[0].opcode, op::kRcFetchAdd);
         EXPECT_EQ(b.host.sent_packets[0].atomic.swap_add, 5u);
         EXPECT_EQ(b.host.sent_packets[0].atomic.rkey, 0x77u);
       }},
      {"PathWithoutASourceAddressFailsTheMessage",
       [](Bench& b) {
         b.host.address_ok = false;
         b.host.messages = {message(RequestKind::kSend, 100, 8)};
         b.transmit(0, 100);
         b.expect_path({Step::kAddress, Step::kErrNoAddress});
         ASSERT_EQ(b.host.failures.size(), 1u);
         EXPECT_EQ(b.host.failures[0].second, RequesterError::kNoAddress);
         EXPECT_TRUE(b.host.sent_packets.empty());
       }},
      {"PayloadWithBadKeysFailsBeforeAnythingIsSent",
       [](Bench& b) {
         b.host.open_result = HostResult::kProtection;
         b.host.messages = {message(RequestKind::kWrite, 100, 600)};
         b.transmit(0, 100);
         b.expect_path({Step::kAddress, Step::kOpenPayload, Step::kErrPayload});
         EXPECT_EQ(b.host.failures.at(0).second, RequesterError::kLocalProtection);
         EXPECT_TRUE(b.host.sent_packets.empty());
       }},
      {"PayloadPagesNotPresentStopTheTransmissionWithoutAnError",
       [](Bench& b) {
         // ODP: the host raised a page fault for the packet it was asked to open at, and sends
         // again from there once the fault is resumed.
         b.host.open_result = HostResult::kPageFault;
         b.host.messages = {message(RequestKind::kWrite, 100, 600)};
         b.transmit(0, 101);
         b.expect_path({Step::kAddress, Step::kOpenPayload, Step::kPageFault});
         EXPECT_TRUE(b.host.failures.empty());
         EXPECT_TRUE(b.host.sent_packets.empty());
         EXPECT_EQ(b.host.opened_from, std::vector<uint32_t>{101});
       }},
      {"PayloadDmaFaultMidMessageStopsIt",
       [](Bench& b) {
         b.host.fault_at_packet = 1;
         b.host.messages = {message(RequestKind::kWrite, 100, 600)};
         b.transmit(0, 100);
         b.expect_path({Step::kAddress, Step::kOpenPayload, Step::kDataPacket, Step::kDataPacket, Step::kErrPayload});
         EXPECT_EQ(b.host.sent_packets.size(), 1u);
         EXPECT_EQ(b.host.failures.size(), 1u);
       }},
      {"ResendGoesBackNFromAPsnSkippingWhatIsDone",
       [](Bench& b) {
         b.host.messages = {message(RequestKind::kWrite, 100, 512), message(RequestKind::kSend, 102, 8),
                            message(RequestKind::kAtomic, 103, 8), message(RequestKind::kRead, 104, 512)};
         b.host.messages[2].responded = true;
         b.host.messages[3].read_next_psn = 105;  // its first response came
         b.steps.path.clear();
         b.requester.resend_from(b.state, b.qp, 101, b.host);
         const auto& s = b.host.sent_packets;
         ASSERT_EQ(s.size(), 3u);
         EXPECT_EQ(s[0].psn, 101u);
         EXPECT_EQ(s[0].opcode, op::kRcRdmaWriteLast);
         EXPECT_EQ(s[1].psn, 102u);
         EXPECT_EQ(s[2].psn, 105u);
         EXPECT_EQ(s[2].opcode, op::kRcRdmaReadRequest);
         EXPECT_EQ(b.requester.events(RequesterEvent::kResent), 3u);
         EXPECT_EQ(b.steps.path.front(), Step::kSelectResend);
       }},
      {"ResendStopsWhenTheSendQueueStops",
       [](Bench& b) {
         b.host.stop_after = 1;
         b.host.messages = {message(RequestKind::kSend, 100, 8), message(RequestKind::kSend, 101, 8)};
         b.requester.resend_from(b.state, b.qp, 100, b.host);
         EXPECT_EQ(b.host.sent_packets.size(), 1u);
       }},
  };
  return kAll;
}

class RequesterPath : public testing::TestWithParam<Scenario> {};

TEST_P(RequesterPath, FollowsItsStates) {
  Bench bench;
  GetParam().run(bench);
}

INSTANTIATE_TEST_SUITE_P(Rc, RequesterPath, testing::ValuesIn(scenarios()), testing_steps::scenario_name<Bench>);

TEST(RequesterSteps, EveryStateIsEnteredAndLeftBySomeScenario) {
  testing_steps::expect_every_step_entered<Bench, Step>(scenarios(), step_name);
}

TEST(RequesterSteps, EveryStateAndEventHasAName) { testing_steps::expect_names<Step, RequesterEvent>(step_name, event_name); }

}  // namespace
}  // namespace hcaemu::transport::rc
