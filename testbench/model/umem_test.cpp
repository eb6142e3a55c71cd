// DevX UMEMs (objects/umem.h, firmware/umem.cpp) and the queues a process builds in them: the
// buffer and doorbell record come from the UMEM's pages, never from a PAS the process wrote.
#include "common/endian.h"
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kCreateUctx = 0xa04, kDestroyUctx = 0xa06, kCreateUmem = 0xa08, kDestroyUmem = 0xa0a;
constexpr uint16_t kCreateCq = 0x400, kDestroyCq = 0x401, kModifyCq = 0x403, kCreateQp = 0x500, kDestroyQp = 0x501;
constexpr uint16_t kAllocPd = 0x800, kAllocUar = 0x802;
constexpr uint32_t kUmemCheck = 0x21;
constexpr uint64_t kRead = 1, kWrite = 2;

struct UmemTest : ::testing::Test {
  TestFunction t;
  uint16_t uid = 0;
  uint32_t uar = 0, eqn = 0, pd = 0;

  void SetUp() override {
    t.f.resources.limits.log_max_uctx = 4;
    uid = create_uctx();
    uar = t.alloc(kAllocUar);
    eqn = t.create_eq(6, uar, 0, 0, {t.page()});
    pd = as_user(kAllocPd);
  }

  uint16_t create_uctx() {
    EXPECT_EQ(t.run(kCreateUctx, TestFunction::input(0x20)), kOk);
    return uint16_t(t.out32(0x08) & 0xffff);
  }
  std::vector<uint8_t> from(uint16_t sender, uint32_t number = 0, size_t size = 16) {
    auto in = TestFunction::input(size);
    store_be16(&in[2], sender);
    store_be32(&in[8], number);
    return in;
  }
  uint32_t as_user(uint16_t opcode) {
    EXPECT_EQ(t.run(opcode, from(uid)), kOk);
    return t.object();
  }
  // create_umem_in as mlx5_ib builds it: 4 KiB << log_page_size pages, MTT entries with flags.
  std::vector<uint8_t> umem_input(const std::vector<uint64_t>& entries, uint32_t log_page_size = 0,
                                  uint32_t page_offset = 0, uint16_t sender = 0) {
    auto in = from(sender == 0 ? uid : sender, 0, 0x30);
    store_be32(&in[0x20], log_page_size);
    store_be32(&in[0x24], page_offset);
    store_be64(&in[0x28], entries.size());
    TestFunction::put_pas(in, 0x30, entries);
    return in;
  }
  uint32_t create_umem(const std::vector<uint64_t>& entries, uint32_t log_page_size = 0, uint32_t page_offset = 0) {
    EXPECT_EQ(t.run(kCreateUmem, umem_input(entries, log_page_size, page_offset)), kOk);
    return t.object();
  }
  uint32_t syndrome_check() const { return t.out32(0x04) & 0xffff; }

  // A process's CQ of 2^log_size 64-byte CQEs: ring at `offset` in UMEM `ring`, record at `dbr_offset` in `dbr`.
  std::vector<uint8_t> devx_cq(uint32_t log_size, uint32_t ring, uint64_t offset, uint32_t dbr, uint64_t dbr_offset) {
    auto in = t.cq_input(log_size, uar, eqn, dbr_offset, {});
    store_be16(&in[2], uid);
    in[0x10] |= 0x02;                      // cqc.dbr_umem_valid
    store_be32(&in[0x10 + 0x04], dbr);     // cqc.dbr_umem_id
    store_be64(&in[0x50], offset);         // cq_umem_offset
    store_be32(&in[0x58], ring);           // cq_umem_id
    in[0x5c] |= 0x80;                      // cq_umem_valid
    return in;
  }
  // A process's RC QP, RQ 16 x 64 B then SQ 64 x 64 B (5 KiB), in UMEMs like devx_cq.
  std::vector<uint8_t> devx_qp(uint32_t buffer, uint64_t offset, uint32_t dbr, uint64_t dbr_offset, uint32_t cqn) {
    auto in = from(uid, 0, 0x110);
    store_be32(&in[0x1c], pd);
    store_be32(&in[0x20], (4u << 19) | (2u << 16) | (6u << 11));
    store_be32(&in[0x24], uar);
    store_be32(&in[0x94], cqn);
    store_be32(&in[0xb4], cqn);
    store_be64(&in[0xb8], dbr_offset);     // qpc.dbr_addr: an offset in the UMEM
    in[0x18 + 0xd0] |= 0x10;               // qpc.dbr_umem_valid
    store_be32(&in[0x18 + 0xe4], dbr);     // qpc.dbr_umem_id
    store_be64(&in[0x100], offset);        // wq_umem_offset
    store_be32(&in[0x108], buffer);        // wq_umem_id
    in[0x10c] |= 0x80;                     // wq_umem_valid
    return in;
  }
};

TEST_F(UmemTest, CreatedFromTheMttAndDestroyedOnce) {
  const uint64_t a = t.page(), b = t.page();
  const uint32_t id = create_umem({a | kRead | kWrite, b | kRead | kWrite});
  const Umem* umem = t.f.resources.umems.find(id);
  ASSERT_NE(umem, nullptr);
  EXPECT_EQ(umem->pages.size(), 8192u);
  EXPECT_TRUE(umem->writable);
  EXPECT_EQ(umem->pages.translate(4096 + 8), b + 8) << "flags are not address bits";
  EXPECT_EQ(t.run(kDestroyUctx, from(0, uid)), kBadResourceState) << "its UMEM is alive";
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, id)), kOk);
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, id)), kBadResource) << "twice";
}

TEST_F(UmemTest, PageSizeAndOffsetOfTheKernelsChoice) {
  const uint64_t big = t.page(2 * 8192);  // two 8 KiB pages, 8 KiB aligned
  const uint64_t aligned = (big + 8191) & ~uint64_t(8191);
  const uint32_t id = create_umem({aligned | kWrite}, 1, 0x100);
  EXPECT_EQ(t.f.resources.umems.find(id)->pages.size(), 8192u - 0x100);
  EXPECT_EQ(t.f.resources.umems.find(id)->pages.translate(0), aligned + 0x100);
}

TEST_F(UmemTest, BadMttsAreRefused) {
  const uint64_t a = t.page();
  EXPECT_EQ(t.run(kCreateUmem, umem_input({})), kBadParameter) << "no entry";
  auto short_list = umem_input({a, a});
  short_list.resize(0x38);  // says two entries, brings one
  EXPECT_EQ(t.run(kCreateUmem, short_list), kBadParameter);
  EXPECT_EQ(t.run(kCreateUmem, umem_input({a + 0x800})), kBadParameter) << "a page not aligned";
  EXPECT_EQ(t.run(kCreateUmem, umem_input({a}, 0, 4096)), kBadParameter) << "offset past the first page";
  EXPECT_EQ(t.run(kCreateUmem, umem_input({a}, 19)), kBadParameter) << "2 GiB pages";
  auto huge = umem_input({a});
  store_be64(&huge[0x28], ~uint64_t(0));
  EXPECT_EQ(t.run(kCreateUmem, huge), kBadParameter) << "a count no input holds";
}

TEST_F(UmemTest, OnlyItsProcessUsesOrDestroysIt) {
  const uint32_t id = create_umem({t.page() | kWrite});
  const uint16_t other = create_uctx();
  EXPECT_EQ(t.run(kDestroyUmem, from(other, id)), kBadResource);
  auto cq = devx_cq(2, id, 0, id, 0x200);
  store_be16(&cq[2], other);
  EXPECT_EQ(t.run(kCreateCq, cq), kBadResource) << "another process's UMEM";
  EXPECT_EQ(t.run(kCreateUmem, umem_input({t.page()}, 0, 0, uint16_t(other + 5))), kBadParameter) << "unknown uid";
}

TEST_F(UmemTest, ACqLivesInItsUmemsNotInThePas) {
  const uint64_t ring_page = t.page(), dbr_page = t.page();
  const uint32_t ring = create_umem({ring_page | kRead | kWrite});
  const uint32_t dbr = create_umem({dbr_page | kRead | kWrite});
  auto in = devx_cq(4, ring, 1024, dbr, 0x40);  // 16 CQEs = 1 KiB at 1 KiB into the UMEM
  const uint64_t elsewhere = t.page();
  TestFunction::put_pas(in, 0x110, {elsewhere});  // what a hostile process would write
  ASSERT_EQ(t.run(kCreateCq, in), kOk);
  const uint32_t cqn = t.object();
  const CompletionQueue* cq = t.f.resources.cqs.find(cqn);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(cq->ring.translate(0), ring_page + 1024);
  EXPECT_EQ(cq->dbr_addr, dbr_page + 0x40);
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, ring)), kBadResourceState) << "the CQ's ring is in it";
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, dbr)), kBadResourceState) << "the CQ's record is in it";
  EXPECT_EQ(t.run(kDestroyCq, from(uid, cqn)), kOk);
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, ring)), kOk);
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, dbr)), kOk);
}

TEST_F(UmemTest, RangesOutsideTheUmemAndReadOnlyRingsAreRefused) {
  const uint32_t id = create_umem({t.page() | kRead | kWrite});
  EXPECT_EQ(t.run(kCreateCq, devx_cq(6, id, 1024, id, 0)), kBadParameter) << "4 KiB of CQEs from 1 KiB in";
  EXPECT_EQ(syndrome_check(), kUmemCheck);
  EXPECT_EQ(t.run(kCreateCq, devx_cq(2, id, 0, id, 4096)), kBadParameter) << "record past the end";
  EXPECT_EQ(t.run(kCreateCq, devx_cq(2, id, 0, id, 4092)), kBadParameter) << "record not aligned, crossing the end";
  EXPECT_EQ(t.run(kCreateCq, devx_cq(2, id, 0, id + 7, 0)), uint8_t(CommandStatus::kBadResource)) << "no such UMEM";
  const uint32_t read_only = create_umem({t.page() | kRead});
  EXPECT_EQ(t.run(kCreateCq, devx_cq(2, read_only, 0, id, 0)), kBadParameter) << "CQEs into memory it may not write";
  EXPECT_EQ(t.run(kCreateCq, devx_cq(2, id, 0, read_only, 0)), kOk) << "the record is the driver's to write";
}

TEST_F(UmemTest, AQpsWorkQueuesAreASliceOfItsUmem) {
  const uint64_t first = t.page(), second = t.page(), third = t.page();
  const uint32_t buffer = create_umem({first | kRead, second | kRead, third | kRead});
  const uint32_t dbr = create_umem({t.page() | kRead | kWrite});
  const uint32_t cq_umem = create_umem({t.page() | kRead | kWrite});
  ASSERT_EQ(t.run(kCreateCq, devx_cq(4, cq_umem, 0, dbr, 0)), kOk);
  const uint32_t cqn = t.object();
  auto in = devx_qp(buffer, 2048, dbr, 8, cqn);
  TestFunction::put_pas(in, 0x110, {t.page(), t.page()});  // ignored: the UMEM decides
  ASSERT_EQ(t.run(kCreateQp, in), kOk);
  const uint32_t qpn = t.object();
  const QueuePair* qp = t.f.resources.qps.find(qpn);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->buffer.translate(0), first + 2048) << "RQ";
  EXPECT_EQ(qp->buffer.translate(qp->sq_offset), first + 3072) << "SQ, 1 KiB of RQ later";
  EXPECT_EQ(qp->buffer.translate(5 * 1024 - 1), second + 3071) << "across the UMEM's page boundary";
  EXPECT_EQ(t.run(kCreateQp, devx_qp(buffer, 8192, dbr, 8, cqn)), kBadParameter) << "5 KiB from 8 KiB into 12 KiB";
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, buffer)), kBadResourceState);
  EXPECT_EQ(t.run(kDestroyQp, from(uid, qpn)), kOk);
  EXPECT_EQ(t.run(kDestroyUmem, from(uid, buffer)), kOk);
}

// What the device does not offer over a UMEM is refused, never served from the process's PAS.
TEST_F(UmemTest, KeysAndResizesIntoAUmemAreRefused) {
  auto mkey = from(uid, 0, 0x110);
  mkey[0x0c] |= 0x40;                                    // mkey_umem_valid
  store_be32(&mkey[0x10], (1u << 8));                    // MTT: its pages would be the UMEM's
  store_be32(&mkey[0x1c], pd);
  EXPECT_EQ(t.run(0x200, mkey), kBadParameter);
  EXPECT_EQ(syndrome_check(), kUmemCheck);
  auto resize = from(uid, 1, 0x110);
  resize[0x5c] |= 0x80;                                  // cq_umem_valid
  EXPECT_EQ(t.run(kModifyCq, resize, 16, 1), kBadParameter);
  EXPECT_EQ(syndrome_check(), kUmemCheck);
}

TEST_F(UmemTest, ResetForgetsThem) {
  const uint32_t id = create_umem({t.page() | kWrite});
  t.f.reset_objects();
  EXPECT_EQ(t.f.resources.umems.find(id), nullptr);
  EXPECT_EQ(t.f.resources.translation_entries, 0u);
}

}  // namespace
}  // namespace hcaemu::model::test
