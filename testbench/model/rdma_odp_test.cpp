// On-demand paging (issue 16: the suite's ODP tests): a page of an MR that is not present (an MTT
// entry of 0, as the driver leaves an ODP MR's unmapped pages) stops the work that needs it with a
// PAGE_FAULT event; PAGE_FAULT_RESUME lets it go on, or with the error bit fail. Driven as mlx5_ib
// 6.1 drives it: an EQ of its own for page faults, the pages mapped, then the resume. Checked on the
// responder: the data lands where it should once the pages are in, never before.
#include <systemc>

#include "testbench/model/odp_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeReqErr = 0xd, kCqeRespSend = 0x2;
constexpr uint8_t kSynLocalProtection = 0x04, kSynRemoteAccess = 0x13;
constexpr uint8_t kOk = 0x0, kBadParam = 0x3;

struct OdpTest : ConnectedPairTest<2 * 4096> {
  FaultQueue faults_a{a}, faults_b{b};
  std::vector<uint8_t> data = pattern(2 * 4096, 9);
  OdpTest() { a.put(src, 0, data); }
  // A's first source page unmapped, then one WQE on A's QP: the page faults A's driver sees.
  std::vector<PageFaultEqe> fault_at_a(uint8_t opcode) {
    set_present(a, src, 0, false);
    a.post_send(*c.a, {.opcode = opcode, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0), .rkey = dst.key});
    p.pump();
    return faults_a.poll();
  }
  // B's target page `page` unmapped, then A WRITEs `bytes` to the start of B's region: the page
  // faults B's driver sees.
  std::vector<PageFaultEqe> write_into_missing_page(size_t page, uint32_t bytes) {
    set_present(b, dst, page, false);
    a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), bytes, src.key}}, .remote_va = dst.va(0),
                       .rkey = dst.key});
    p.pump();
    return faults_b.poll();
  }
  // A's driver maps the page and resumes the fault: what A's send CQ holds then.
  auto resolve_at_a(size_t page, const PageFaultEqe& fault) {
    set_present(a, src, page, true);
    EXPECT_EQ(faults_a.resume(fault), kOk);
    p.pump();
    return a.drain(*c.a->scq);
  }
  // The one fault A's driver sees: a WQE fault of `type` naming A's WQE `index`.
  PageFaultEqe one_fault_at_a(uint8_t type, uint16_t index) {
    const auto events = faults_a.poll();
    EXPECT_EQ(events.size(), 1u);
    const PageFaultEqe fault = events.empty() ? PageFaultEqe{} : events[0];
    EXPECT_EQ(fault.fault_type, type);
    EXPECT_EQ(fault.wqe_index, index);
    return fault;
  }
  // A's driver resolves `fault`, and the one message it held completes without an error.
  void expect_completion_after(size_t page, const PageFaultEqe& fault) {
    const auto done = resolve_at_a(page, fault);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].opcode, kCqeReq);
  }
  // A's driver resumes `fault` with the error bit: the message it held fails, alone.
  void expect_local_protection_error_after_error_resume(const PageFaultEqe& fault) {
    ASSERT_EQ(faults_a.resume(fault, /*error=*/true), kOk);
    p.pump();
    const auto done = a.drain(*c.a->scq);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].opcode, kCqeReqErr);
    EXPECT_EQ(done[0].syndrome, kSynLocalProtection);
  }
  // B's driver maps the page and resumes the fault; A sends again after its RNR timer.
  void resolve_at_b(const Mr& mr, size_t page, const PageFaultEqe& fault) {
    set_present(b, mr, page, true);
    ASSERT_EQ(faults_b.resume(fault), kOk);
    ASSERT_TRUE(p.fire_timers(a));
    p.pump();
  }
};

TEST_F(OdpTest, RequesterHoldsTheWqeUntilResumedThenTheWriteLands) {
  set_present(a, src, 1, false);
  const uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 8192, src.key}},
                                            .remote_va = dst.va(0), .rkey = dst.key});
  EXPECT_EQ(p.pump(), 0u) << "nothing goes on the wire while the page is missing";
  const auto events = faults_a.poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, page_fault::kEventType);
  EXPECT_EQ(events[0].subtype, page_fault::kWqe);
  EXPECT_EQ(events[0].fault_type, page_fault::kRequesterSend);
  EXPECT_EQ(events[0].wq_number, c.a->qpn);
  EXPECT_EQ(events[0].wqe_index, index);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  // A second WQE behind it waits too (SQ order).
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0),
                     .rkey = dst.key});
  EXPECT_EQ(p.pump(), 0u);
  EXPECT_TRUE(faults_a.poll().empty()) << "one event per fault";

  const auto done = resolve_at_a(1, events[0]);  // the driver maps the page, then resumes
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(done[0].wqe_counter, index);
  EXPECT_EQ(b.get(dst, 0, 8192), data) << "landed on the responder";
  EXPECT_EQ(a.engine.counters().page_faults, 1u);
  EXPECT_EQ(a.engine.counters().page_fault_resumes, 1u);
  EXPECT_EQ(a.f.resources.page_faults.size(), 0u);
  EXPECT_EQ(faults_a.resume(events[0]), kBadParam) << "a fault is resumed once";
}

TEST_F(OdpTest, AReadOrAtomicFaultsAsType3) {
  const auto events = fault_at_a(wqe_op::kRdmaRead);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].fault_type, page_fault::kRequesterReadAtomic);
  set_present(a, src, 0, true);
  b.put(dst, 0, pattern(64, 4));
  ASSERT_EQ(faults_a.resume(events[0]), kOk);
  p.pump();
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(a.get(src, 0, 64), pattern(64, 4)) << "the READ response landed in the faulted-in page";
}

TEST_F(OdpTest, ResumeWithErrorFailsTheWqe) {
  const auto events = fault_at_a(wqe_op::kSend);
  ASSERT_EQ(events.size(), 1u);
  expect_local_protection_error_after_error_resume(events[0]);
  EXPECT_EQ(b.engine.counters().rx_packets, 0u) << "nothing was sent";
}

TEST_F(OdpTest, ResponderAnswersRnrUntilTheRemotePagesAreIn) {
  const auto events = write_into_missing_page(1, 8192);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].subtype, page_fault::kRdma);
  EXPECT_EQ(events[0].fault_type, page_fault::kRdmaWrite);
  EXPECT_EQ(events[0].rkey, dst.key);
  EXPECT_GE(events[0].va, dst.va(0));
  EXPECT_LE(events[0].va + events[0].length, dst.va(8192));
  EXPECT_GT(events[0].va + events[0].length, dst.va(4096)) << "the range holds the missing page";
  EXPECT_EQ(events[0].va + events[0].length, dst.va(8192)) << "the rest of the WRITE: mapped in one fault";
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 1u);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
  // Sent again before the driver is done: RNR NAK again, no second event.
  ASSERT_TRUE(p.fire_timers(a));
  p.pump();
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 2u);
  EXPECT_TRUE(faults_b.poll().empty());

  resolve_at_b(dst, 1, events[0]);
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(b.get(dst, 0, 8192), data) << "all of it landed on the responder";
}

// mlx5_ib maps a page it faulted in for reading read only (MTT rd_en without wr_en): untouched
// memory is then the kernel's shared zero page. A WRITE into it must fault for a writable mapping,
// never write the page it maps (a write there corrupted every guest process reading zeroes).
TEST_F(OdpTest, AWriteIntoAReadOnlyMappedPageFaultsInsteadOfWritingIt) {
  Mkey* m = b.f.resources.mkeys.find(dst.key >> 8);
  ASSERT_NE(m, nullptr);
  m->mtt[0] = dst.pages[0] | 1;  // rd_en only
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0),
                     .rkey = dst.key});
  p.pump();
  const auto events = faults_b.poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].fault_type, page_fault::kRdmaWrite);
  EXPECT_EQ(b.get(dst, 0, 64), std::vector<uint8_t>(64, 0)) << "the read-only page was not written";
  resolve_at_b(dst, 0, events[0]);  // mapped writable (rd_en | wr_en)
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(b.get(dst, 0, 64), a.get(src, 0, 64));
}

TEST_F(OdpTest, AResponderFaultResumedWithErrorFailsTheResentRequest) {
  const auto events = write_into_missing_page(0, 64);
  ASSERT_EQ(events.size(), 1u);
  set_present(b, dst, 0, true);  // mapped, but the driver resumes with the error bit
  ASSERT_EQ(faults_b.resume(events[0], /*error=*/true), kOk);
  ASSERT_TRUE(p.fire_timers(a));
  p.pump();
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr);
  EXPECT_EQ(done[0].syndrome, kSynRemoteAccess);
  EXPECT_NE(b.get(dst, 0, 64), std::vector<uint8_t>(data.begin(), data.begin() + 64)) << "nothing landed";
  EXPECT_EQ(b.engine.counters().page_fault_failures, 1u);
}

TEST_F(OdpTest, AReceiveWqeFaultNamesTheRqWqeAndTheSendLandsAfterTheResume) {
  Mr recv = b.reg_mr(4096, access_bits::kAll);
  set_present(b, recv, 0, false);
  const uint16_t rindex = b.post_recv(*c.b, {{recv.va(0), 4096, recv.key}});
  a.post_send(*c.a, {.opcode = wqe_op::kSend, .sges = {{src.va(0), 1000, src.key}}});
  p.pump();
  const auto events = faults_b.poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].subtype, page_fault::kWqe);
  EXPECT_EQ(events[0].fault_type, page_fault::kResponderRq);
  EXPECT_EQ(events[0].wq_number, c.b->qpn);
  EXPECT_EQ(events[0].wqe_index, rindex);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty());

  resolve_at_b(recv, 0, events[0]);
  const auto got = b.drain(*c.b->rcq);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, kCqeRespSend);
  EXPECT_EQ(got[0].wqe_counter, rindex) << "the WQE taken before the fault, not the next one";
  EXPECT_EQ(b.get(recv, 0, 1000), std::vector<uint8_t>(data.begin(), data.begin() + 1000));
}

TEST_F(OdpTest, AResendWhosePagesWentWaitsForThemWithoutSpendingRetries) {
  // The WRITE left with its pages present and was lost; the driver invalidated a source page
  // before the ACK timer fired (a ZAP): the resend stops there and waits, the timer spends no
  // retry meanwhile, and after the resume the whole WRITE lands.
  const uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 8192, src.key}},
                                            .remote_va = dst.va(0), .rkey = dst.key});
  ASSERT_FALSE(p.take().empty());
  set_present(a, src, 1, false);
  ASSERT_TRUE(p.fire_timers(a));
  EXPECT_EQ(p.pump(), 0u) << "nothing is resent while a page is missing";
  const PageFaultEqe fault = one_fault_at_a(page_fault::kRequesterSend, index);
  const QueuePair* qp = a.f.resources.qps.find(c.a->qpn);
  const uint8_t retries = qp->rc.req.retries_left;
  ASSERT_TRUE(p.fire_timers(a));
  EXPECT_EQ(p.pump(), 0u);
  EXPECT_EQ(qp->rc.req.retries_left, retries) << "waiting for pages is not a lost packet";
  EXPECT_TRUE(faults_a.poll().empty());

  expect_completion_after(1, fault);
  EXPECT_EQ(b.get(dst, 0, 8192), data) << "landed on the responder";
}

TEST_F(OdpTest, AReadResponseWhosePagesWentIsAskedForAgain) {
  // The READ left with its buffer present; the driver invalidated it before the response came:
  // the response raises a type-3 fault and is dropped, the READ is asked again after the resume.
  const std::vector<uint8_t> remote = pattern(8192, 5);
  b.put(dst, 0, remote);
  const uint16_t index = a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(0), 8192, src.key}},
                                            .remote_va = dst.va(0), .rkey = dst.key});
  set_present(a, src, 1, false);
  p.pump();
  const PageFaultEqe fault = one_fault_at_a(page_fault::kRequesterReadAtomic, index);
  EXPECT_TRUE(a.drain(*c.a->scq).empty());

  expect_completion_after(1, fault);
  EXPECT_EQ(a.get(src, 0, 8192), remote) << "the READ's data in the requester's buffer";
}

TEST_F(OdpTest, AReadAskedAgainAfterTheResponderPagesWentWaitsForThem) {
  // B answered the READ, the responses were lost, and B's driver invalidated the page meanwhile:
  // the READ asked again raises an RDMA fault at B and is RNR NAKed (not left unanswered until A's
  // retries run out); once B maps the page and resumes, the data lands at A.
  const std::vector<uint8_t> remote = pattern(4096, 6);
  b.put(dst, 0, remote);
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaRead, .sges = {{src.va(0), 4096, src.key}}, .remote_va = dst.va(0),
                     .rkey = dst.key});
  p.deliver_one();  // the request reaches B
  ASSERT_FALSE(p.take().empty()) << "B's responses are lost";
  set_present(b, dst, 0, false);
  ASSERT_TRUE(p.fire_timers(a));
  p.pump();
  const auto events = faults_b.poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].subtype, page_fault::kRdma);
  EXPECT_EQ(events[0].fault_type, page_fault::kRdmaRead);
  EXPECT_EQ(b.engine.counters().rnr_naks_sent, 1u);
  resolve_at_b(dst, 0, events[0]);
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(a.get(src, 0, 4096), remote);
}

TEST_F(OdpTest, AResendFaultResumedWithErrorFailsTheMessage) {
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = dst.va(0),
                     .rkey = dst.key});
  ASSERT_FALSE(p.take().empty());
  set_present(a, src, 0, false);
  ASSERT_TRUE(p.fire_timers(a));
  const auto events = faults_a.poll();
  ASSERT_EQ(events.size(), 1u);
  expect_local_protection_error_after_error_resume(events[0]);
  EXPECT_EQ(a.engine.counters().page_fault_failures, 1u);
}

TEST_F(OdpTest, WithoutAPageFaultEqTheWorkFailsInsteadOfWaiting) {
  // A function whose driver never asked for page-fault events (no ODP MR): a missing page is a
  // protection error, as before ODP, never a wait nobody will end.
  RdmaPair q;
  Connection d = q.connect();
  Mr m = q.a.reg_mr(4096);
  set_present(q.a, m, 0, false);
  q.a.post_send(*d.a, {.opcode = wqe_op::kSend, .sges = {{m.va(0), 64, m.key}}});
  q.pump();
  const auto done = q.a.drain(*d.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr);
  EXPECT_EQ(done[0].syndrome, kSynLocalProtection);
  EXPECT_EQ(q.a.engine.counters().page_fault_failures, 1u);
}

TEST_F(OdpTest, AResumeNamingNoFaultIsRefused) {
  const auto events = fault_at_a(wqe_op::kSend);
  ASSERT_EQ(events.size(), 1u);
  PageFaultEqe wrong = events[0];
  wrong.token ^= 1;
  EXPECT_EQ(faults_a.resume(wrong), kBadParam);
  wrong = events[0];
  wrong.wq_number ^= 1;
  EXPECT_EQ(faults_a.resume(wrong), kBadParam);
  wrong = events[0];
  wrong.fault_type = page_fault::kRequesterReadAtomic;
  EXPECT_EQ(faults_a.resume(wrong), kBadParam);
  EXPECT_EQ(a.f.resources.page_faults.size(), 1u) << "refused resumes change nothing";
  EXPECT_TRUE(a.drain(*c.a->scq).empty());
}

TEST_F(OdpTest, FaultsWithoutProgressEndInAnErrorNotALoop) {
  // A driver that resumes without mapping anything: the WQE faults again, a bounded number of
  // times, then completes in error.
  uint32_t rounds = 0;
  for (auto events = fault_at_a(wqe_op::kSend); !events.empty() && rounds < 100; events = faults_a.poll(), ++rounds) {
    ASSERT_EQ(faults_a.resume(events.back()), kOk);
    p.pump();
  }
  EXPECT_EQ(rounds, page_fault::kMaxFaultsWithoutProgress);
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr);
}

TEST(PageFaultEvent, LayoutIsMlx5EqePageFault) {
  const PageFault wqe{.subtype = page_fault::kWqe, .type = page_fault::kResponderRq, .wq_number = 0x123456,
                      .wqe_index = 0xbeef};
  auto d = page_fault_event_data(wqe, 0x77);
  EXPECT_EQ(load_be16(&d[6]), 0xbeef);
  EXPECT_EQ(load_be32(&d[12]), 0x77u);
  EXPECT_EQ(load_be32(&d[24]), 0x02123456u);
  const PageFault rdma{.subtype = page_fault::kRdma, .type = page_fault::kRdmaWrite, .rkey = 0xabcd01,
                       .length = 4096, .va = 0x7f0000001000};
  d = page_fault_event_data(rdma, 0x55);
  EXPECT_EQ(load_be32(&d[4]), 0xabcd01u);
  EXPECT_EQ(load_be32(&d[12]), 4096u);
  EXPECT_EQ(load_be64(&d[16]), 0x7f0000001000u);
  EXPECT_EQ(load_be32(&d[24]), 0x06000055u);
}

TEST(PageFaultTable, TokensAreUniqueBoundedAndTakenOnce) {
  PageFaultTable t;
  const auto first = t.open({.type = 1, .wq_number = 5});
  const auto rdma = t.open({.subtype = page_fault::kRdma, .type = 4});
  ASSERT_TRUE(first && rdma);
  EXPECT_NE(*first, *rdma);
  EXPECT_FALSE(t.take(1, 6, *first)) << "another WQ";
  EXPECT_TRUE(t.take(4, *rdma, *rdma)) << "an RDMA fault is resumed with WQ number = token";
  EXPECT_TRUE(t.take(1, 5, *first));
  EXPECT_FALSE(t.take(1, 5, *first));
  for (size_t i = 0; i < PageFaultTable::kMaxOpen; ++i) ASSERT_TRUE(t.open({.type = 1}));
  EXPECT_FALSE(t.open({.type = 1})) << "full: the work fails instead";
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
