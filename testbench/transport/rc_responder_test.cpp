// The connected-service responder's states (transport/rc/responder.h), driven through a fake host:
// every state is entered and left by some scenario, every NAK and error path has its own, and each
// checks what the requester would see (ACK/NAK, its PSN and syndrome) and what the host was asked to
// do (placement, completion, failure).
#include "transport/rc/responder.h"

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
using Step = ResponderStep;

struct Ack {
  uint32_t psn;
  uint8_t syndrome;
};

// Records what the responder asks of its host; each answer can be set by a scenario.
struct FakeHost : ResponderHost {
  bool xrc_ok = true;
  int posted_wqes = 1;
  HostResult remote = HostResult::kOk, write = HostResult::kOk, receive = HostResult::kOk,
             atomic_result = HostResult::kOk, invalidation = HostResult::kOk;
  uint64_t word = 40;  // the responder memory an atomic works on

  std::vector<Ack> acks;
  std::vector<std::pair<uint32_t, uint64_t>> atomic_acks;
  std::vector<uint32_t> read_responses;
  std::vector<ReceiveCompletion> completions;
  std::vector<std::pair<ResponderError, bool>> failures;
  std::vector<uint8_t> placed;
  int atomics_executed = 0;

  bool xrc_srq_valid(uint32_t) override { return xrc_ok; }
  bool take_receive_wqe() override { return posted_wqes-- > 0; }
  HostResult check_remote(uint64_t, uint32_t, uint64_t, RemoteAccess) override { return remote; }
  HostResult write_remote(uint64_t, uint32_t, std::span<const uint8_t> data) override {
    if (write == HostResult::kOk) placed.insert(placed.end(), data.begin(), data.end());
    return write;
  }
  HostResult write_receive(uint64_t, std::span<const uint8_t> data) override {
    if (receive == HostResult::kOk) placed.insert(placed.end(), data.begin(), data.end());
    return receive;
  }
  HostResult atomic(const AtomicEth& a, bool fetch_add, uint64_t& original) override {
    if (atomic_result != HostResult::kOk) return atomic_result;
    ++atomics_executed;
    original = word;
    word = fetch_add ? word + a.swap_add : word == a.compare ? a.swap_add : word;
    return HostResult::kOk;
  }
  HostResult invalidate(uint32_t) override { return invalidation; }
  void send_ack(uint32_t psn, uint8_t syndrome, uint32_t) override { acks.push_back({psn, syndrome}); }
  void send_atomic_ack(uint32_t psn, uint64_t original, uint32_t) override { atomic_acks.push_back({psn, original}); }
  void send_read_responses(uint32_t psn, const Reth&, uint32_t) override { read_responses.push_back(psn); }
  void complete_receive(const ReceiveCompletion& c) override { completions.push_back(c); }
  void fail(ResponderError e, bool taken) override { failures.push_back({e, taken}); }
  void pipeline() override {}
  void delivered(uint32_t, MessageKind, uint32_t) override {}
  void count(ResponderEvent) override {}
};

constexpr uint32_t kEpsn = 100;
const uint8_t kAckOk = aeth_ack(kAethCreditsInvalid);

// One responder, its QP state and a fake host; send() runs a packet and keeps its path.
struct Bench {
  Responder responder;
  ResponderState state;
  ResponderQp qp{.service = Service::kRc, .remote_read = true, .remote_write = true, .remote_atomic = true,
                 .pmtu = 256, .min_rnr_timer = 12};
  FakeHost host;
  testing_steps::StepRecorder<Step> steps{step_name};
  std::vector<uint8_t> data = std::vector<uint8_t>(256, 0xab);

  Bench() {
    state.epsn = kEpsn;
    responder.set_trace(steps.hook());
  }
  RocePacket packet(uint8_t opcode, uint32_t psn, size_t bytes = 0) {
    RocePacket p;
    p.opcode = uint8_t(opcode | (qp.service == Service::kUc ? 0x20 : qp.service == Service::kXrc ? op::kXrcBase : 0));
    p.psn = psn;
    p.payload = std::span<const uint8_t>(data).first(bytes);
    p.reth = {.va = 0x1000, .rkey = 7, .dma_length = uint32_t(bytes)};
    p.atomic = {.va = 0x2000, .rkey = 7, .swap_add = 2, .compare = 40};
    return p;
  }
  void send(const RocePacket& p) {
    steps.path.clear();
    responder.receive(state, qp, p, host);
  }
  void expect_path(std::vector<Step> middle) {
    std::vector<Step> want{Step::kGetRequest};
    if (qp.service == Service::kXrc) want.push_back(Step::kCheckXrcSrq);
    want.insert(want.end(), middle.begin(), middle.end());
    steps.expect(std::move(want));
  }
  void expect_nak(uint32_t psn, NakCode code) {
    ASSERT_FALSE(host.acks.empty());
    EXPECT_EQ(host.acks.back().psn, psn);
    EXPECT_EQ(host.acks.back().syndrome, aeth_nak(code));
  }
};

const std::vector<Step> kAccepted = {Step::kCheckPsn, Step::kCheckOpSequence, Step::kCheckOpValid};

std::vector<Step> accepted(std::vector<Step> rest) {
  std::vector<Step> v = kAccepted;
  v.insert(v.end(), rest.begin(), rest.end());
  return v;
}

using Scenario = testing_steps::Scenario<Bench>;

void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> kAll = {
      {"SendOnlyIsPlacedCompletedAndAcked",
       [](Bench& b) {
         b.send(b.packet(op::kRcSendOnly, kEpsn, 64));
         b.expect_path(accepted({Step::kCheckResource, Step::kReceiveData, Step::kComplete, Step::kAcknowledge}));
         ASSERT_EQ(b.host.completions.size(), 1u);
         EXPECT_EQ(b.host.completions[0].bytes, 64u);
         EXPECT_EQ(b.host.placed.size(), 64u);
         EXPECT_EQ(b.state.epsn, kEpsn + 1);
         EXPECT_EQ(b.state.msn, 1u);
         ASSERT_EQ(b.host.acks.size(), 1u);
         EXPECT_EQ(b.host.acks[0].syndrome, kAckOk);
       }},
      {"WriteFirstThenLastLandsInOneRange",
       [](Bench& b) {
         RocePacket first = b.packet(op::kRcRdmaWriteFirst, kEpsn, 256);
         first.reth.dma_length = 300;
         b.send(first);
         b.expect_path(accepted({Step::kCheckWriteAccess, Step::kCheckResource, Step::kWriteData, Step::kComplete,
                                 Step::kAcknowledge}));
         EXPECT_TRUE(b.host.acks.empty());  // no AckReq on a FIRST
         b.send(b.packet(op::kRcRdmaWriteLast, kEpsn + 1, 44));
         b.expect_path(accepted({Step::kCheckResource, Step::kWriteData, Step::kComplete, Step::kAcknowledge}));
         EXPECT_EQ(b.host.placed.size(), 300u);
         EXPECT_TRUE(b.host.completions.empty());  // a WRITE without immediate consumes no WQE
         ASSERT_EQ(b.host.acks.size(), 1u);
         EXPECT_EQ(b.host.acks[0].psn, kEpsn + 1);
       }},
      {"WriteWithImmediateTakesAWqeAtItsEnd",
       [](Bench& b) {
         RocePacket p = b.packet(op::kRcRdmaWriteOnlyImm, kEpsn, 8);
         p.immediate = 0x1234;
         b.send(p);
         ASSERT_EQ(b.host.completions.size(), 1u);
         EXPECT_EQ(b.host.completions[0].kind, MessageKind::kWriteImm);
         EXPECT_EQ(b.host.completions[0].immediate, 0x1234u);
         EXPECT_EQ(b.host.posted_wqes, 0);
       }},
      {"ReadRequestIsAnsweredAndAdvancesByItsResponses",
       [](Bench& b) {
         RocePacket p = b.packet(op::kRcRdmaReadRequest, kEpsn);
         p.reth.dma_length = 600;  // three responses at MTU 256
         b.send(p);
         b.expect_path(accepted({Step::kCheckRkey, Step::kExecuteRead}));
         EXPECT_EQ(b.host.read_responses, std::vector<uint32_t>{kEpsn});
         EXPECT_EQ(b.state.epsn, kEpsn + 3);
       }},
      {"FetchAddExecutesOnceAndAnswersTheOriginal",
       [](Bench& b) {
         b.send(b.packet(op::kRcFetchAdd, kEpsn));
         b.expect_path(accepted({Step::kCheckRkey, Step::kExecuteAtomic}));
         ASSERT_EQ(b.host.atomic_acks.size(), 1u);
         EXPECT_EQ(b.host.atomic_acks[0].second, 40u);
         EXPECT_EQ(b.host.word, 42u);
       }},
      {"DuplicateAtomicIsAnsweredFromItsResultNotExecutedAgain",
       [](Bench& b) {
         b.send(b.packet(op::kRcFetchAdd, kEpsn));
         b.send(b.packet(op::kRcFetchAdd, kEpsn));
         b.expect_path({Step::kCheckPsn, Step::kDuplicate});
         EXPECT_EQ(b.host.atomics_executed, 1);
         ASSERT_EQ(b.host.atomic_acks.size(), 2u);
         EXPECT_EQ(b.host.atomic_acks[1].second, 40u);
       }},
      {"DuplicateReadIsReadAgain",
       [](Bench& b) {
         b.send(b.packet(op::kRcRdmaReadRequest, kEpsn - 1));
         b.expect_path({Step::kCheckPsn, Step::kDuplicate});
         EXPECT_EQ(b.host.read_responses, std::vector<uint32_t>{kEpsn - 1});
         EXPECT_EQ(b.state.epsn, kEpsn);
       }},
      {"DuplicateSendIsAckedAtTheLastPsnAndNotPlaced",
       [](Bench& b) {
         b.send(b.packet(op::kRcSendOnly, kEpsn - 5, 8));
         b.expect_path({Step::kCheckPsn, Step::kDuplicate});
         ASSERT_EQ(b.host.acks.size(), 1u);
         EXPECT_EQ(b.host.acks[0].psn, kEpsn - 1);
         EXPECT_TRUE(b.host.placed.empty());
       }},
      {"GapIsNakedOnceUntilTheMissingPacketComes",
       [](Bench& b) {
         b.send(b.packet(op::kRcSendOnly, kEpsn + 2, 8));
         b.expect_path({Step::kCheckPsn, Step::kErrSequence});
         b.expect_nak(kEpsn, NakCode::kPsnSequenceError);
         b.send(b.packet(op::kRcSendOnly, kEpsn + 3, 8));
         EXPECT_EQ(b.host.acks.size(), 1u);
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         EXPECT_FALSE(b.state.sequence_nak_sent);
         EXPECT_TRUE(b.host.failures.empty());
       }},
      {"MiddleWithoutFirstIsAnInvalidRequest",
       [](Bench& b) {
         b.send(b.packet(op::kRcSendMiddle, kEpsn, 256));
         b.expect_path({Step::kCheckPsn, Step::kCheckOpSequence, Step::kErrInvalidRequest});
         b.expect_nak(kEpsn, NakCode::kInvalidRequest);
         ASSERT_EQ(b.host.failures.size(), 1u);
         EXPECT_EQ(b.host.failures[0].first, ResponderError::kRemoteInvalidRequest);
       }},
      {"WriteInsideASendIsAnInvalidRequestThatFailsTheTakenWqe",
       [](Bench& b) {
         b.send(b.packet(op::kRcSendFirst, kEpsn, 256));
         b.send(b.packet(op::kRcRdmaWriteMiddle, kEpsn + 1, 256));
         b.expect_path({Step::kCheckPsn, Step::kCheckOpSequence, Step::kErrInvalidRequest});
         ASSERT_EQ(b.host.failures.size(), 1u);
         EXPECT_TRUE(b.host.failures[0].second);
         EXPECT_FALSE(b.state.have_wqe);
       }},
      {"MisalignedAtomicIsAnInvalidRequest",
       [](Bench& b) {
         RocePacket p = b.packet(op::kRcCompareSwap, kEpsn);
         p.atomic.va = 0x2004;
         b.send(p);
         b.expect_path({Step::kCheckPsn, Step::kCheckOpSequence, Step::kCheckOpValid, Step::kErrInvalidRequest});
         b.expect_nak(kEpsn, NakCode::kInvalidRequest);
         EXPECT_EQ(b.host.atomics_executed, 0);
       }},
      {"ResponseOpcodeIsNoRequest",
       [](Bench& b) {
         b.send(b.packet(op::kRcAcknowledge, kEpsn));
         b.expect_path({Step::kCheckPsn, Step::kCheckOpSequence, Step::kCheckOpValid, Step::kErrInvalidRequest});
       }},
      {"ReadWithABadKeyIsARemoteAccessError",
       [](Bench& b) {
         b.host.remote = HostResult::kProtection;
         b.send(b.packet(op::kRcRdmaReadRequest, kEpsn));
         b.expect_path(accepted({Step::kCheckRkey, Step::kErrRemoteAccess}));
         b.expect_nak(kEpsn, NakCode::kRemoteAccessError);
         ASSERT_EQ(b.host.failures.size(), 1u);
         EXPECT_EQ(b.host.failures[0].first, ResponderError::kRemoteAccess);
         EXPECT_TRUE(b.host.read_responses.empty());
       }},
      {"AtomicOnAQpWithoutAtomicAccessIsARemoteAccessError",
       [](Bench& b) {
         b.qp.remote_atomic = false;
         b.send(b.packet(op::kRcFetchAdd, kEpsn));
         b.expect_path(accepted({Step::kCheckRkey, Step::kErrRemoteAccess}));
         EXPECT_EQ(b.host.atomics_executed, 0);
       }},
      {"WriteToAQpWithoutWriteAccessIsARemoteAccessError",
       [](Bench& b) {
         b.qp.remote_write = false;
         b.send(b.packet(op::kRcRdmaWriteOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckWriteAccess, Step::kErrRemoteAccess}));
         b.expect_nak(kEpsn, NakCode::kRemoteAccessError);
         EXPECT_TRUE(b.host.placed.empty());
       }},
      {"WriteWithABadKeyIsARemoteAccessError",
       [](Bench& b) {
         b.host.write = HostResult::kProtection;
         b.send(b.packet(op::kRcRdmaWriteOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckWriteAccess, Step::kCheckResource, Step::kWriteData, Step::kErrRemoteAccess}));
         b.expect_nak(kEpsn, NakCode::kRemoteAccessError);
       }},
      {"WriteBeyondItsDmaLengthIsAnInvalidRequest",
       [](Bench& b) {
         RocePacket p = b.packet(op::kRcRdmaWriteOnly, kEpsn, 64);
         p.reth.dma_length = 32;
         b.send(p);
         b.expect_path(accepted({Step::kCheckWriteAccess, Step::kCheckResource, Step::kWriteData, Step::kErrInvalidRequest}));
         b.expect_nak(kEpsn, NakCode::kInvalidRequest);
         EXPECT_TRUE(b.host.placed.empty());
       }},
      {"WriteDmaFaultIsARemoteOperationalError",
       [](Bench& b) {
         b.host.write = HostResult::kDmaFault;
         b.send(b.packet(op::kRcRdmaWriteOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckWriteAccess, Step::kCheckResource, Step::kWriteData, Step::kErrRemoteOperation}));
         b.expect_nak(kEpsn, NakCode::kRemoteOperationalError);
         EXPECT_EQ(b.host.failures.at(0).first, ResponderError::kRemoteOperation);
       }},
      {"AtomicDmaFaultIsARemoteOperationalError",
       [](Bench& b) {
         b.host.atomic_result = HostResult::kDmaFault;
         b.send(b.packet(op::kRcFetchAdd, kEpsn));
         b.expect_path(accepted({Step::kCheckRkey, Step::kExecuteAtomic, Step::kErrRemoteOperation}));
         b.expect_nak(kEpsn, NakCode::kRemoteOperationalError);
         EXPECT_EQ(b.state.epsn, kEpsn);
       }},
      {"SendWithoutAReceiveWqeIsRnrNaked",
       [](Bench& b) {
         b.host.posted_wqes = 0;
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckResource, Step::kErrRnr}));
         ASSERT_EQ(b.host.acks.size(), 1u);
         EXPECT_EQ(b.host.acks[0].syndrome, aeth_rnr_nak(12));
         EXPECT_EQ(b.state.epsn, kEpsn);  // the same packet comes again
         EXPECT_TRUE(b.state.sequence_nak_sent);
         EXPECT_TRUE(b.host.failures.empty());
       }},
      {"WriteToAPageNotPresentIsRnrNakedAndComesAgain",
       [](Bench& b) {
         b.host.write = HostResult::kPageFault;  // ODP: the host raised a page fault
         b.send(b.packet(op::kRcRdmaWriteOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckWriteAccess, Step::kCheckResource, Step::kWriteData, Step::kErrRnr}));
         ASSERT_EQ(b.host.acks.size(), 1u);
         EXPECT_EQ(b.host.acks[0].syndrome, aeth_rnr_nak(12));
         EXPECT_EQ(b.state.epsn, kEpsn);
         EXPECT_TRUE(b.host.failures.empty()) << "no error: the pages come";
         b.host.write = HostResult::kOk;  // resumed: the same packet again lands
         b.send(b.packet(op::kRcRdmaWriteOnly, kEpsn, 8));
         EXPECT_EQ(b.state.epsn, kEpsn + 1);
         EXPECT_EQ(b.host.placed.size(), 8u);
       }},
      {"ReadOfAPageNotPresentIsRnrNaked",
       [](Bench& b) {
         b.host.remote = HostResult::kPageFault;
         b.send(b.packet(op::kRcRdmaReadRequest, kEpsn));
         b.expect_path(accepted({Step::kCheckRkey, Step::kErrRnr}));
         EXPECT_EQ(b.host.acks.at(0).syndrome, aeth_rnr_nak(12));
         EXPECT_TRUE(b.host.read_responses.empty());
         EXPECT_EQ(b.state.epsn, kEpsn);
       }},
      {"DuplicateReadOfPagesThatWentIsRnrNaked",
       [](Bench& b) {
         // Asked again (its responses were lost) after the driver invalidated the pages: it waits
         // for them as a new READ would, instead of going unanswered until the retries run out.
         b.host.remote = HostResult::kPageFault;
         b.send(b.packet(op::kRcRdmaReadRequest, kEpsn - 1));
         b.expect_path({Step::kCheckPsn, Step::kDuplicate, Step::kErrRnr});
         EXPECT_EQ(b.host.acks.at(0).psn, kEpsn - 1);
         EXPECT_EQ(b.host.acks.at(0).syndrome, aeth_rnr_nak(12));
         EXPECT_TRUE(b.host.read_responses.empty());
         EXPECT_EQ(b.state.epsn, kEpsn);
       }},
      {"DuplicateReadOfAKeyThatWentIsNotAnswered",
       [](Bench& b) {
         b.host.remote = HostResult::kProtection;
         b.send(b.packet(op::kRcRdmaReadRequest, kEpsn - 1));
         b.expect_path({Step::kCheckPsn, Step::kDuplicate});
         EXPECT_TRUE(b.host.acks.empty());
         EXPECT_TRUE(b.host.read_responses.empty());
       }},
      {"SendIntoAPageNotPresentKeepsItsReceiveWqe",
       [](Bench& b) {
         b.host.posted_wqes = 1;
         b.host.receive = HostResult::kPageFault;
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckResource, Step::kReceiveData, Step::kErrRnr}));
         EXPECT_TRUE(b.state.have_wqe) << "the WQE taken waits for the resend";
         b.host.receive = HostResult::kOk;
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         EXPECT_EQ(b.host.completions.size(), 1u) << "completed into the WQE taken first";
         EXPECT_EQ(b.state.epsn, kEpsn + 1);
       }},
      {"SendIntoBadBuffersIsALocalProtectionError",
       [](Bench& b) {
         b.host.receive = HostResult::kProtection;
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckResource, Step::kReceiveData, Step::kErrLocalProtection}));
         b.expect_nak(kEpsn, NakCode::kRemoteOperationalError);
         EXPECT_EQ(b.host.failures.at(0).first, ResponderError::kLocalProtection);
         EXPECT_TRUE(b.host.failures.at(0).second);
       }},
      {"SendLongerThanItsWqeIsALocalLengthError",
       [](Bench& b) {
         b.host.receive = HostResult::kLength;
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckResource, Step::kReceiveData, Step::kErrLength}));
         b.expect_nak(kEpsn, NakCode::kInvalidRequest);
         EXPECT_EQ(b.host.failures.at(0).first, ResponderError::kLocalLength);
       }},
      {"SendWithInvalidateFreesTheKeyBeforeItCompletes",
       [](Bench& b) {
         RocePacket p = b.packet(op::kRcSendOnlyInvalidate, kEpsn, 8);
         p.invalidate_rkey = 0x77;
         b.send(p);
         ASSERT_EQ(b.host.completions.size(), 1u);
         EXPECT_EQ(b.host.completions[0].kind, MessageKind::kSendInvalidate);
         EXPECT_EQ(b.host.completions[0].immediate, 0x77u);
         EXPECT_EQ(b.responder.events(ResponderEvent::kRemoteInvalidation), 1u);
       }},
      {"RefusedInvalidateIsAnInvalidRequest",
       [](Bench& b) {
         b.host.invalidation = HostResult::kProtection;
         b.send(b.packet(op::kRcSendOnlyInvalidate, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckResource, Step::kReceiveData, Step::kComplete, Step::kErrInvalidRequest}));
         b.expect_nak(kEpsn, NakCode::kInvalidRequest);
         EXPECT_TRUE(b.host.completions.empty());
         EXPECT_TRUE(b.host.failures.at(0).second);
       }},
      {"UcReadIsDroppedWithoutAnAnswer",
       [](Bench& b) {
         b.qp.service = Service::kUc;
         b.send(b.packet(op::kRcRdmaReadRequest, kEpsn));
         b.expect_path(accepted({Step::kErrInvalidRequest, Step::kDropMessage}));
         EXPECT_TRUE(b.host.acks.empty());
         EXPECT_TRUE(b.host.failures.empty());
         EXPECT_EQ(b.state.epsn, kEpsn + 1);
       }},
      {"UcWithoutAReceiveWqeLosesTheMessage",
       [](Bench& b) {
         b.qp.service = Service::kUc;
         b.host.posted_wqes = 0;
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckResource, Step::kErrRnr, Step::kDropMessage}));
         EXPECT_TRUE(b.host.acks.empty());
         EXPECT_EQ(b.responder.events(ResponderEvent::kUcMessageDropped), 1u);
       }},
      {"UcResynchronisesOnALaterPsn",
       [](Bench& b) {
         b.qp.service = Service::kUc;
         b.send(b.packet(op::kRcSendFirst, kEpsn, 256));
         b.send(b.packet(op::kRcSendOnly, kEpsn + 5, 8));  // the rest of the first message was lost
         EXPECT_EQ(b.responder.events(ResponderEvent::kUcResync), 1u);
         EXPECT_EQ(b.state.epsn, kEpsn + 6);
         ASSERT_EQ(b.host.completions.size(), 1u);
         EXPECT_EQ(b.host.completions[0].bytes, 8u);
         EXPECT_TRUE(b.host.acks.empty());
       }},
      {"UcWriteWithoutAccessIsDropped",
       [](Bench& b) {
         b.qp.service = Service::kUc;
         b.qp.remote_write = false;
         b.send(b.packet(op::kRcRdmaWriteOnly, kEpsn, 8));
         b.expect_path(accepted({Step::kCheckWriteAccess, Step::kErrRemoteAccess, Step::kDropMessage}));
         EXPECT_TRUE(b.host.failures.empty());
       }},
      {"XrcRequestNamingAForeignSrqIsAnInvalidRequest",
       [](Bench& b) {
         b.qp.service = Service::kXrc;
         b.host.xrc_ok = false;
         b.send(b.packet(op::kRcSendOnly, kEpsn, 8));
         b.expect_path({Step::kErrInvalidRequest});
         b.expect_nak(kEpsn, NakCode::kInvalidRequest);
         b.send(b.packet(op::kRcSendOnly, kEpsn + 4, 8));  // not the expected packet: dropped
         b.expect_path({});
         EXPECT_EQ(b.host.acks.size(), 1u);
       }},
      {"XrcRequestRunsTheRcStates",
       [](Bench& b) {
         b.qp.service = Service::kXrc;
         RocePacket p = b.packet(op::kRcSendOnly, kEpsn, 8);
         p.xrc_srqn = 9;
         b.send(p);
         b.expect_path(accepted({Step::kCheckResource, Step::kReceiveData, Step::kComplete, Step::kAcknowledge}));
         EXPECT_EQ(b.state.xrc_srqn, 9u);
       }},
  };
  return kAll;
}

class ResponderPath : public testing::TestWithParam<Scenario> {};

TEST_P(ResponderPath, FollowsItsStates) {
  Bench bench;
  GetParam().run(bench);
}

INSTANTIATE_TEST_SUITE_P(Rc, ResponderPath, testing::ValuesIn(scenarios()), testing_steps::scenario_name<Bench>);

TEST(ResponderSteps, EveryStateIsEnteredAndLeftBySomeScenario) {
  testing_steps::expect_every_step_entered<Bench, Step>(scenarios(), step_name);
}

TEST(ResponderSteps, EveryStateAndEventHasAName) { testing_steps::expect_names<Step, ResponderEvent>(step_name, event_name); }

}  // namespace
}  // namespace hcaemu::transport::rc
