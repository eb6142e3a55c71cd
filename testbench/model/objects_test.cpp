// MKEY, SRQ/XRC SRQ/RMP and QP commands: happy paths, references and hostile inputs.
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kBadQpState = uint8_t(CommandStatus::kBadQpState);

std::vector<uint8_t> with_number(uint32_t number) {
  auto in = TestFunction::input(16);
  store_be32(&in[8], number);
  return in;
}

struct ObjectsTest : ::testing::Test {
  TestFunction t;
  uint32_t uar = 0, pd = 0, eqn = 0, cqn = 0, xrcd = 0;

  void SetUp() override {
    uar = t.alloc(0x802);
    pd = t.alloc(0x800);
    xrcd = t.alloc(0x80e);
    eqn = t.create_eq(6, uar, 0, 0, {t.page()});
    cqn = t.create_cq(4, uar, eqn, t.page(), {t.page()});
  }

  // PA or MTT mkey over [start, start + len) with 4 KiB pages.
  std::vector<uint8_t> mkey_input(uint32_t access_mode, uint64_t start, uint64_t len, uint32_t mtt_entries,
                                  uint32_t pd_number) {
    auto in = TestFunction::input(0x110);
    store_be32(&in[0x10], (1u << 11) | (1u << 10) | (access_mode << 8));
    store_be32(&in[0x14], 0xffffff00u | 0x5a);
    store_be32(&in[0x1c], pd_number);
    store_be64(&in[0x20], start);
    store_be64(&in[0x28], len);
    store_be32(&in[0x44], (mtt_entries + 1) / 2);
    store_be32(&in[0x48], 12);
    store_be32(&in[0x60], (mtt_entries + 1) / 2);
    std::vector<uint64_t> mtt;
    for (uint32_t i = 0; i < ((mtt_entries + 1) & ~1u); ++i) mtt.push_back(t.page() | 3);
    TestFunction::put_pas(in, 0x110, mtt);
    return in;
  }

  std::vector<uint8_t> qp_input(uint8_t st, uint32_t log_rq, uint32_t log_sq, std::vector<uint64_t> pages) {
    auto in = TestFunction::input(0x110);
    store_be32(&in[0x18], uint32_t(st) << 16);
    store_be32(&in[0x1c], pd);
    store_be32(&in[0x20], (log_rq << 19) | (2u << 16) | (log_sq << 11));  // RQ stride 64 B
    store_be32(&in[0x24], uar);
    store_be32(&in[0x94], cqn);
    store_be32(&in[0xb0], xrcd);
    store_be32(&in[0xb4], cqn);
    store_be64(&in[0xb8], t.page());
    TestFunction::put_pas(in, 0x110, pages);
    return in;
  }

  std::vector<uint8_t> modify(uint32_t qpn) {
    auto in = TestFunction::input(0x110);
    store_be32(&in[8], qpn);
    return in;
  }
};

// --- MKEY ---

TEST_F(ObjectsTest, MkeyPaAndMttKeepTheirTranslation) {
  auto pa = mkey_input(0, 0, 0, 0, pd);
  pa[0x1c] |= 0x80;  // length64: the whole address space
  ASSERT_EQ(t.run(0x200, pa), kOk);
  const uint32_t pa_index = t.object();
  EXPECT_GE(pa_index, 2u) << "(index 1 << 8) | 0 would be MLX5_INVALID_LKEY";
  ASSERT_EQ(t.run(0x200, mkey_input(1, 0x7000123, 3 * 4096, 4, pd)), kOk);
  const uint32_t index = t.object();
  const Mkey* mkey = t.f.resources.mkeys.find(index);
  ASSERT_NE(mkey, nullptr);
  EXPECT_EQ(mkey->variant, 0x5a) << "key = (index << 8) | 0x5a";
  EXPECT_EQ(mkey->mtt.size(), 4u);
  EXPECT_TRUE(mkey->local_write && mkey->local_read && !mkey->remote_write);
  ASSERT_EQ(t.run(0x201, with_number(index), 0x110), kOk);
  EXPECT_EQ(load_be64(&t.out[0x10 + 0x10]), 0x7000123u);
  EXPECT_EQ(t.run(0x801, with_number(pd)), kBadResourceState) << "PD used by MKEYs";
  EXPECT_EQ(t.run(0x202, with_number(index)), kOk);
  EXPECT_EQ(t.run(0x201, with_number(index), 0x110), kBadResource);
  EXPECT_EQ(t.run(0x202, with_number(index)), kBadResource);
  EXPECT_EQ(t.run(0x202, with_number(pa_index)), kOk);
  EXPECT_EQ(t.run(0x801, with_number(pd)), kOk);
}

TEST_F(ObjectsTest, MkeyRefusesBadInput) {
  EXPECT_EQ(t.run(0x200, mkey_input(1, 0x7000000, 3 * 4096, 2, pd)), kBadParameter) << "MTT list shorter than the region";
  auto lying = mkey_input(1, 0x7000000, 4096, 2, pd);
  store_be32(&lying[0x60], 100);
  EXPECT_EQ(t.run(0x200, lying), kBadInputLength) << "claims more MTT entries than it carries";
  EXPECT_EQ(t.run(0x200, mkey_input(2, 0, 4096, 2, pd)), kBadParameter) << "KLM";
  EXPECT_EQ(t.run(0x200, mkey_input(0, 0, 4096, 0, pd + 100)), kBadResource) << "unknown PD";
  auto misaligned = mkey_input(1, 0x7000000, 4096, 2, pd);
  store_be64(&misaligned[0x110], t.page() + 0x100);
  EXPECT_EQ(t.run(0x200, misaligned), kBadParameter);
  auto wrap = mkey_input(0, ~uint64_t(0) - 10, 4096, 0, pd);
  EXPECT_EQ(t.run(0x200, wrap), kBadParameter) << "region wraps";
  auto free_key = mkey_input(1, 0, 1 << 20, 0, pd);
  free_key[0x10] |= 0x40;  // free: translation loaded later by UMR
  EXPECT_EQ(t.run(0x200, free_key), kOk);
  TestFunction other;
  other.alloc(0x800);
  EXPECT_EQ(other.run(0x200, mkey_input(0, 0, 4096, 0, pd + 1)), kBadResource) << "another function's PD";
}

// hcaemu's memory for translation tables is budgeted per function: past it CREATE_MKEY fails with
// the exceeded-limit status (0x08) and nothing is kept; destroying a key gives its entries back,
// a reset gives all back, and another function's budget is its own.
TEST_F(ObjectsTest, MkeyTranslationEntriesHaveABudget) {
  constexpr uint8_t kExceedLimit = 0x08;
  const uint64_t queues = t.f.resources.translation_entries;  // the EQ's and CQ's page lists
  EXPECT_EQ(queues, 2u);
  t.f.resources.limits.max_translation_entries = queues + 10;
  ASSERT_EQ(t.run(0x200, mkey_input(1, 0x7000000, 4 * 4096, 4, pd)), kOk);
  const uint32_t first = t.object();
  ASSERT_EQ(t.run(0x200, mkey_input(1, 0x8000000, 4 * 4096, 4, pd)), kOk);
  EXPECT_EQ(t.f.resources.translation_entries, queues + 8);
  const size_t keys = t.f.resources.mkeys.size();
  EXPECT_EQ(t.run(0x200, mkey_input(1, 0x9000000, 4 * 4096, 4, pd)), kExceedLimit) << "8 + 4 > 10";
  EXPECT_EQ(t.f.resources.mkeys.size(), keys) << "nothing kept";
  EXPECT_EQ(t.run(0x200, mkey_input(1, 0x9000000, 2 * 4096, 2, pd)), kOk) << "8 + 2 fits";
  EXPECT_EQ(t.run(0x200, mkey_input(0, 0, 4096, 0, pd)), kOk) << "a PA key takes no entries";
  auto destroy = TestFunction::input(0x10);
  store_be32(&destroy[0x08], first);
  ASSERT_EQ(t.run(0x202, destroy), kOk);
  EXPECT_EQ(t.f.resources.translation_entries, queues + 6);
  EXPECT_EQ(t.run(0x200, mkey_input(1, 0x9000000, 4 * 4096, 4, pd)), kOk) << "the destroyed key's entries are back";
  TestFunction other;
  const uint32_t other_pd = other.alloc(0x800);
  auto big = mkey_input(1, 0x7000000, 64 * 4096, 64, other_pd);
  EXPECT_EQ(other.run(0x200, big), kOk) << "another function has its own budget";
  t.f.reset_objects();
  EXPECT_EQ(t.f.resources.translation_entries, 0u);
}

// Issue 14: one CQ past the function's quota (its identity's log_max_cq, the admin's configuration)
// fails with the exceeded-limit status; destroying one makes room again.
TEST_F(ObjectsTest, TheObjectQuotaBoundsCreation) {
  constexpr uint8_t kExceedLimit = 0x08;
  t.f.identity.quotas.log_max_cq = 8;
  t.f.apply_quotas();
  std::vector<uint32_t> made;
  for (size_t n = t.f.resources.cqs.size(); n < 256; ++n) made.push_back(t.create_cq(0, uar, eqn, t.page(), {t.page()}));
  EXPECT_EQ(t.f.resources.cqs.size(), 256u);
  EXPECT_EQ(t.run(0x400, t.cq_input(0, uar, eqn, t.page(), {t.page()})), kExceedLimit);
  ASSERT_EQ(t.run(0x401, with_number(made.back())), kOk);
  EXPECT_EQ(t.run(0x400, t.cq_input(0, uar, eqn, t.page(), {t.page()})), kOk);
}

// Issue 14: queue page lists were not budgeted at all: a CQ of 2^22 CQEs keeps 65,536 page
// addresses (512 KiB) in hcaemu, and a guest may make 2^16 of them from one mailbox's worth of its
// own memory. They now count against the same budget as the MTTs: past it CREATE_CQ (and every
// other queue) fails with the exceeded-limit status, and the entries come back when the queue goes.
TEST_F(ObjectsTest, QueuePageListsCountAgainstTheTranslationBudget) {
  constexpr uint8_t kExceedLimit = 0x08;
  const uint64_t before = t.f.resources.translation_entries;
  t.f.resources.limits.max_translation_entries = before + 16;
  const std::vector<uint64_t> pages(16, t.page());  // one page, named 16 times: all the guest needs
  const uint32_t big = t.create_cq(10, uar, eqn, t.page(), pages);  // 1,024 CQEs x 64 B = 16 pages
  EXPECT_EQ(t.f.resources.translation_entries, before + 16);
  const size_t cqs = t.f.resources.cqs.size();
  EXPECT_EQ(t.run(0x400, t.cq_input(4, uar, eqn, t.page(), {t.page()})), kExceedLimit);
  EXPECT_EQ(t.f.resources.cqs.size(), cqs) << "nothing kept";
  ASSERT_EQ(t.run(0x401, with_number(big)), kOk);  // DESTROY_CQ
  EXPECT_EQ(t.f.resources.translation_entries, before);
  EXPECT_EQ(t.run(0x400, t.cq_input(4, uar, eqn, t.page(), {t.page()})), kOk);
  t.f.reset_objects();
  EXPECT_EQ(t.f.resources.translation_entries, 0u);
}

// --- SRQ / XRC SRQ / RMP ---

TEST_F(ObjectsTest, SrqKindsCreateQueryDestroy) {
  auto rmp = TestFunction::input(0x110);
  store_be32(&rmp[0x58], pd);
  store_be64(&rmp[0x60], t.page());
  store_be32(&rmp[0x70], (6u << 16) | 4);  // 64-byte WQEs, 16 of them = 1 KiB
  TestFunction::put_pas(rmp, 0x110, {t.page()});
  ASSERT_EQ(t.run(0x90c, rmp), kOk);
  const uint32_t rmpn = t.object();

  auto xrc = TestFunction::input(0x110);
  store_be32(&xrc[0x10], 4u << 24);
  store_be32(&xrc[0x14], (2u << 24) | xrcd);
  store_be32(&xrc[0x18], cqn);
  store_be32(&xrc[0x28], pd);
  store_be32(&xrc[0x3c], uint32_t(t.page()));
  TestFunction::put_pas(xrc, 0x110, {t.page()});
  ASSERT_EQ(t.run(0x705, xrc), kOk);
  const uint32_t xsrqn = t.object();
  EXPECT_NE(xsrqn, rmpn) << "one number space";

  auto srq = TestFunction::input(0x110);
  store_be32(&srq[0x10], 4u << 24);
  store_be32(&srq[0x14], 2u << 24);
  store_be32(&srq[0x28], pd);
  TestFunction::put_pas(srq, 0x110, {t.page()});
  ASSERT_EQ(t.run(0x700, srq), kOk);
  const uint32_t srqn = t.object();

  ASSERT_EQ(t.run(0x90f, with_number(rmpn), 0x110), kOk);
  EXPECT_EQ(t.out32(0x20 + 0x30 + 0x08) & 0xffffff, pd) << "rmpc.wq.pd";
  // The limit of a basic SRQ, which mlx5_ib makes an RMP: MODIFY_RMP with the lwm bitmask bit arms
  // it (rmpc.wq.lwm), QUERY_RMP reads it back (issue 16, rdma-core 56's test_modify_srq_limit).
  auto arm = TestFunction::input(0x110);
  store_be32(&arm[0x08], (1u << 28) | rmpn);
  store_be32(&arm[0x14], 1);                   // rmp_bitmask.lwm
  store_be32(&arm[0x20 + 0x34], 7);            // rmpc.wq.lwm
  ASSERT_EQ(t.run(0x90d, arm), kOk);
  ASSERT_EQ(t.run(0x90f, with_number(rmpn), 0x110), kOk);
  EXPECT_EQ(t.out32(0x20 + 0x34) & 0xffff, 7u) << "rmpc.wq.lwm";
  EXPECT_EQ(t.f.resources.srqs.find(rmpn)->lwm, 7u);
  store_be32(&arm[0x20 + 0x34], 17);
  EXPECT_EQ(t.run(0x90d, arm), kBadParameter) << "more than the RMP's 16 WQEs";
  EXPECT_EQ(t.run(0x707, with_number(xsrqn), 0x110), kOk);
  EXPECT_EQ(t.run(0x702, with_number(srqn), 0x110), kOk);
  EXPECT_EQ(t.run(0x701, with_number(rmpn)), kBadResource) << "DESTROY_SRQ of an RMP";
  EXPECT_EQ(t.run(0x80f, with_number(xrcd)), kBadResourceState) << "XRCD used by an XRC SRQ";
  EXPECT_EQ(t.run(0x401, with_number(cqn)), kBadResourceState) << "CQ used by an XRC SRQ";
  EXPECT_EQ(t.run(0x706, with_number(xsrqn)), kOk);
  EXPECT_EQ(t.run(0x90e, with_number(rmpn)), kOk);
  EXPECT_EQ(t.run(0x701, with_number(srqn)), kOk);
  EXPECT_EQ(t.run(0x80f, with_number(xrcd)), kOk);
}

TEST_F(ObjectsTest, SrqRefusesBadInput) {
  auto xrc = TestFunction::input(0x110);
  store_be32(&xrc[0x10], 4u << 24);
  store_be32(&xrc[0x14], 2u << 24);  // no XRCD
  store_be32(&xrc[0x28], pd);
  TestFunction::put_pas(xrc, 0x110, {t.page()});
  EXPECT_EQ(t.run(0x705, xrc), uint8_t(CommandStatus::kBadIndex)) << "XRC SRQ needs an XRCD";
  store_be32(&xrc[0x14], (2u << 24) | xrcd);
  store_be32(&xrc[0x10], 15u << 24);
  EXPECT_EQ(t.run(0x705, xrc), kBadParameter) << "32768 WQEs of 64 B need more than one page";
  store_be32(&xrc[0x10], 4u << 24);
  store_be32(&xrc[0x28], 0);
  EXPECT_EQ(t.run(0x705, xrc), uint8_t(CommandStatus::kBadIndex)) << "no PD";
  store_be32(&xrc[0x28], pd);
  store_be32(&xrc[0x18], cqn + 7);
  EXPECT_EQ(t.run(0x705, xrc), kBadResource) << "unknown CQ";
}

// --- QP ---

TEST_F(ObjectsTest, RcQpWalksTheStateMachine) {
  // RQ 16 x 64 B = 1 KiB, SQ 64 x 64 B = 4 KiB: two pages.
  ASSERT_EQ(t.run(0x500, qp_input(0, 4, 6, {t.page(), t.page()})), kOk);
  const uint32_t qpn = t.object();
  const QueuePair* qp = t.f.resources.qps.find(qpn);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->sq_offset, 1024u);
  EXPECT_EQ(qp->state, QpState::kReset);

  EXPECT_EQ(t.run(0x504, modify(qpn)), kBadQpState) << "RTR2RTS from RST";
  EXPECT_EQ(t.run(0x503, modify(qpn)), kBadQpState) << "INIT2RTR from RST";
  auto init = modify(qpn);
  store_be32(&init[0x54], 1u << 16);  // vhca_port_num 1
  EXPECT_EQ(t.run(0x502, init), kOk);
  EXPECT_EQ(t.run(0x502, init), kBadQpState) << "RST2INIT twice";
  EXPECT_EQ(t.run(0x50e, init), kOk) << "INIT2INIT";

  auto rtr = modify(qpn);
  EXPECT_EQ(t.run(0x503, rtr), kBadParameter) << "RC INIT2RTR without an MTU";
  store_be32(&rtr[0x20], (5u << 29) | (30u << 24));
  store_be32(&rtr[0x2c], 0x4242);  // remote_qpn
  store_be32(&rtr[0xac], 0x100);   // next_rcv_psn
  EXPECT_EQ(t.run(0x503, rtr), kOk);
  auto rts = modify(qpn);
  store_be32(&rts[0x90], 0x777);   // next_send_psn
  EXPECT_EQ(t.run(0x504, rts), kOk);
  EXPECT_EQ(t.run(0x505, rts), kOk) << "RTS2RTS";
  EXPECT_EQ(t.run(0x506, rts), kBadQpState) << "SQERR2RTS from RTS";

  ASSERT_EQ(t.run(0x50b, with_number(qpn), 0x110), kOk);
  EXPECT_EQ(t.out32(0x18) >> 28, uint32_t(QpState::kRts));
  EXPECT_EQ(t.out32(0x2c) & 0xffffff, 0x4242u) << "remote_qpn survives RTR2RTS";
  EXPECT_EQ(t.out32(0x90) & 0xffffff, 0x777u);
  EXPECT_EQ(t.out32(0x1c) & 0xffffff, pd) << "bindings from create";
  EXPECT_EQ(t.out32(0x94) & 0xffffff, cqn);

  EXPECT_EQ(t.run(0x401, with_number(cqn)), kBadResourceState) << "CQ used by the QP";
  EXPECT_EQ(t.run(0x507, with_number(qpn)), kOk) << "2ERR";
  EXPECT_EQ(t.run(0x50a, with_number(qpn)), kOk) << "2RST";
  EXPECT_EQ(t.f.resources.qps.find(qpn)->state, QpState::kReset);
  EXPECT_EQ(t.run(0x501, with_number(qpn)), kOk);
  EXPECT_EQ(t.run(0x502, init), kBadResource) << "destroyed";
  EXPECT_EQ(t.run(0x401, with_number(cqn)), kOk) << "reference released";
}

TEST_F(ObjectsTest, KernelQpTypesAndBadInput) {
  EXPECT_EQ(t.run(0x500, qp_input(0xc, 0, 4, {t.page()})), kOk) << "REG_UMR";
  auto gsi = qp_input(8, 4, 4, {t.page(), t.page()});
  store_be32(&gsi[0xc4], 3u << 24);  // zero-length RQ
  EXPECT_EQ(t.run(0x500, gsi), kOk) << "QP1";
  EXPECT_EQ(t.run(0x500, qp_input(0x7, 0, 4, {t.page()})), kBadParameter) << "QP0: IB only";
  EXPECT_EQ(t.run(0x500, qp_input(0, 4, 6, {t.page()})), kBadParameter) << "5 KiB of WQEs, one PAS page";
  auto bad_cq = qp_input(0, 0, 4, {t.page()});
  store_be32(&bad_cq[0x94], cqn + 1);
  EXPECT_EQ(t.run(0x500, bad_cq), kBadResource);
  auto bad_pd = qp_input(0, 0, 4, {t.page()});
  store_be32(&bad_pd[0x1c], pd + 1);
  EXPECT_EQ(t.run(0x500, bad_pd), kBadResource);
  auto big = qp_input(0, 0, 4, {t.page()});
  store_be32(&big[0x20], 0xfu << 11);
  EXPECT_EQ(t.run(0x500, big), kBadParameter) << "log_sq_size above log_max_qp_sz";
  auto dbr = qp_input(0, 0, 4, {t.page()});
  store_be64(&dbr[0xb8], t.page() + 4);
  EXPECT_EQ(t.run(0x500, dbr), kBadParameter) << "misaligned doorbell record";
  auto srq = qp_input(0, 0, 4, {t.page()});
  store_be32(&srq[0xc4], (1u << 24) | 999);
  EXPECT_EQ(t.run(0x500, srq), kBadResource) << "rq_type SRQ with an unknown SRQ";
  auto uid = qp_input(0, 0, 4, {t.page()});
  store_be16(&uid[2], 1);
  EXPECT_EQ(t.run(0x500, uid), kBadParameter);
  EXPECT_EQ(t.run(0x502, modify(12345)), kBadResource);
}

TEST_F(ObjectsTest, ResetReleasesObjects) {
  ASSERT_EQ(t.run(0x500, qp_input(0, 4, 6, {t.page(), t.page()})), kOk);
  const uint32_t qpn = t.object();
  ASSERT_EQ(t.run(0x200, mkey_input(0, 0, 4096, 0, pd)), kOk);
  t.fw.reset();
  EXPECT_TRUE(t.f.resources.qps.empty() && t.f.resources.mkeys.empty() && t.f.resources.pds.empty());
  EXPECT_EQ(t.run(0x50b, with_number(qpn), 0x110), kBadResource);
}

}  // namespace
}  // namespace hcaemu::model::test

namespace hcaemu::model {
namespace {

// Regression (seen with the Debian 12 mlx5_ib): the UMR QP comes with qpc.pd = 0; any other QP
// without a PD is refused.
TEST(Objects, UmrQpWithoutPdIsAcceptedOthersAreNot) {
  test::TestFunction t;
  const uint32_t uar = t.alloc(0x802);
  const uint32_t eqn = t.create_eq(6, uar, 0, 0, {t.page()});
  const uint32_t cqn = t.create_cq(6, uar, eqn, t.page(64), {t.page()});
  auto qp = [&](uint8_t st) {
    auto in = t.input(0x110);
    store_be32(&in[0x18], uint32_t(st) << 16);          // qpc.st, pd stays 0
    store_be32(&in[0x18 + 0x7c], cqn);                  // cqn_snd
    store_be32(&in[0x18 + 0x9c], cqn);                  // cqn_rcv
    store_be32(&in[0x18 + 0x0c], uar);                  // uar_page
    store_be64(&in[0x18 + 0xa0], t.page(64));           // dbr_addr
    test::TestFunction::put_pas(in, 0x110, {t.page()});
    return t.run(0x500, in);
  };
  EXPECT_EQ(qp(0x0c), 0) << "REG_UMR";
  EXPECT_NE(qp(0x00), 0) << "RC needs a PD";
}

// QPs, Ethernet SQs and RQs share one number space (a send WQE's ctrl segment and a doorbell name
// either kind the same way): their ranges must never meet, also after the allocator wraps.
TEST(Objects, QpSqAndRqNumbersComeFromDisjointRanges) {
  Resources r;
  EthObjects eth;
  EXPECT_LT(r.qps.last(), eth.sqs.first());
  EXPECT_LT(eth.sqs.last(), eth.rqs.first());
  EXPECT_GE(r.qps.first(), 2u) << "QPN 0 and 1 are the IB special QPs";
  // Around the end of the QP range the allocator wraps to its start, not into the SQs.
  r.qps.set_range(kLastQpn - 1, kLastQpn);
  EXPECT_EQ(r.qps.insert({}), kLastQpn - 1);
  EXPECT_EQ(r.qps.insert({}), kLastQpn);
  EXPECT_EQ(r.qps.insert({}), 0u) << "full: refused, not spilled over";
}

}  // namespace
}  // namespace hcaemu::model
