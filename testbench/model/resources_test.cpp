// UAR/PD/TD/XRCD, the EQ engine, the CQ engine and the doorbell unit, with simulated host memory.
#include "model/queues/doorbell_unit.h"
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {
namespace {

constexpr uint64_t kCmdMask = uint64_t(1) << 0x0a;

std::vector<uint8_t> with_number(uint32_t number) {
  auto in = TestFunction::input(16);
  store_be32(&in[8], number);
  return in;
}

std::vector<uint8_t> be32(uint32_t v) {
  std::vector<uint8_t> b(4);
  store_be32(b.data(), v);
  return b;
}

TEST(Uar, IndexesStartAfterTheInitSegmentAndStayInsideTheBar) {
  TestFunction t;
  t.f.bar0_size = 6 * 4096;  // pages 3, 4, 5 are UARs
  EXPECT_EQ(t.alloc(0x802), 3u);
  EXPECT_EQ(t.alloc(0x802), 4u);
  EXPECT_EQ(t.alloc(0x802), 5u);
  EXPECT_EQ(t.run(0x802), kExceedLimit);
  EXPECT_EQ(t.run(0x803, with_number(4)), kOk);
  EXPECT_EQ(t.run(0x803, with_number(4)), kBadResource) << "double free";
  EXPECT_EQ(t.run(0x803, with_number(1)), kBadIndex) << "init segment page";
  t.f.bar0_size = 2 * 4096;
  EXPECT_EQ(t.run(0x802), kExceedLimit) << "a BAR that holds only the init segment has no UARs";
}

TEST(Uar, FreedIndexIsNotReusedAtOnce) {
  TestFunction t;
  const uint32_t a = t.alloc(0x802);
  ASSERT_EQ(t.run(0x803, with_number(a)), kOk);
  EXPECT_NE(t.alloc(0x802), a);
}

TEST(Domains, AllocDeallocAndBadInput) {
  TestFunction t;
  for (uint16_t op : {0x800, 0x816, 0x80e}) {
    const uint32_t id = t.alloc(op);
    EXPECT_NE(id, 0u);
    EXPECT_EQ(t.run(op + 1, with_number(id)), kOk);
    EXPECT_EQ(t.run(op + 1, with_number(id)), kBadResource) << "stale " << std::hex << op;
    EXPECT_EQ(t.run(op + 1, with_number(0)), kBadIndex) << "ID 0 never exists";
  }
  auto uid = TestFunction::input(16);
  store_be16(&uid[2], 5);
  EXPECT_EQ(t.run(0x800, uid), kBadParameter) << "uid != 0 (DEVX) refused";
  t.f.resources.limits.log_max_pd = 1;
  t.alloc(0x800);
  t.alloc(0x800);
  EXPECT_EQ(t.run(0x800), kExceedLimit);
}

TEST(Domains, ForeignIdsAreUnknown) {
  TestFunction a, b;
  const uint32_t pd = a.alloc(0x800);
  EXPECT_EQ(b.run(0x801, with_number(pd)), kBadResource);
  const uint32_t uar = a.alloc(0x802);
  const uint32_t eqn = a.create_eq(6, uar, 0, 0, {a.page()});
  b.alloc(0x802);
  EXPECT_EQ(b.run(0x400, b.cq_input(2, uar, eqn, b.page(), {b.page()})), kBadResource) << "A's EQ from B";
  EXPECT_EQ(b.run(0x302, with_number(eqn)), kBadResource);
  EXPECT_EQ(a.run(0x302, with_number(eqn)), kOk);
}

// --- EQ ---

struct EqTest : ::testing::Test {
  TestFunction t;
  uint32_t uar = 0;
  std::vector<uint64_t> pages;
  uint32_t eqn = 0;
  static constexpr uint32_t kLogSize = 7;  // 128 EQEs = 8 KiB = two 4 KiB pages

  void SetUp() override {
    uar = t.alloc(0x802);
    const uint64_t p0 = t.page(), p1 = t.page();
    pages = {p1, p0};  // fragmented, and in reverse order
    eqn = t.create_eq(kLogSize, uar, 5, kCmdMask, pages);
  }
  uint64_t eqe_address(uint32_t index) const { return pages[(index * 64) / 4096] + (index * 64) % 4096; }
  void doorbell(uint32_t offset, uint32_t ci) {
    auto v = be32((eqn << 24) | ci);
    unit.write(t.f, uint64_t(uar) * 4096 + offset, v);
  }
  DoorbellUnit unit;
};

TEST_F(EqTest, EqesFollowThePasAndTheOwnerConvention) {
  ASSERT_NE(eqn, 0u);
  uint8_t data[4] = {0xde, 0xad, 0xbe, 0xef};
  EXPECT_EQ(eq_post(t.f, 0x0a, 0x01, data), 1u);
  auto e = t.read(eqe_address(0), 64);
  EXPECT_EQ(e[0x01], 0x0a);
  EXPECT_EQ(e[0x03], 0x01);
  EXPECT_EQ(load_be32(&e[0x20]), 0xdeadbeefu);
  EXPECT_EQ(e[0x3f] & 1, 0) << "first pass writes owner 0";
  EXPECT_EQ(eq_post(t.f, 0x04, 0, data), 0u) << "not subscribed";
  for (uint32_t i = 1; i < 64; ++i) eq_post(t.f, 0x0a, 0, data);
  EXPECT_EQ(t.read(eqe_address(64), 64)[0x01], 0) << "EQE 64 lands in the second PAS page";
  eq_post(t.f, 0x0a, 0, data);
  EXPECT_EQ(t.read(eqe_address(64), 64)[0x01], 0x0a);
  EXPECT_EQ(t.read(pages[1], 64)[0x01], 0x0a) << "second half of the ring is the first PAS entry... of page 1";
}

TEST_F(EqTest, OwnerBitFlipsOnWrapAndOverflowDropsInsteadOfOverwriting) {
  uint8_t data[4] = {};
  for (uint32_t i = 0; i < 128; ++i) ASSERT_TRUE(eq_write(t.f, eqn, 0x0a, 0, data));
  EXPECT_FALSE(eq_write(t.f, eqn, 0x0b, 0, data)) << "ring full: CI still 0";
  EXPECT_EQ(t.f.resources.eqs.find(eqn)->overflow_drops, 1u);
  EXPECT_EQ(t.read(eqe_address(0), 64)[0x01], 0x0a) << "unconsumed EQE kept";
  doorbell(0x48, 128);
  ASSERT_TRUE(eq_write(t.f, eqn, 0x0b, 0, data));
  auto e = t.read(eqe_address(0), 64);
  EXPECT_EQ(e[0x01], 0x0b);
  EXPECT_EQ(e[0x3f] & 1, 1) << "second pass writes owner 1";
  EXPECT_TRUE(t.msix.fired.empty()) << "never armed";
}

TEST_F(EqTest, ArmedEqRaisesItsVectorOncePerArm) {
  uint8_t data[4] = {};
  doorbell(0x40, 0);  // arm, nothing pending
  EXPECT_TRUE(t.msix.fired.empty());
  eq_write(t.f, eqn, 0x0a, 0, data);
  ASSERT_EQ(t.msix.fired.size(), 1u);
  EXPECT_EQ(t.msix.fired[0], 5u);
  eq_write(t.f, eqn, 0x0a, 0, data);
  EXPECT_EQ(t.msix.fired.size(), 1u) << "disarmed until the next arm";
  doorbell(0x40, 1);  // consumed one, one still pending: fires at once
  EXPECT_EQ(t.msix.fired.size(), 2u);
  doorbell(0x48, 2);  // CI update only
  eq_write(t.f, eqn, 0x0a, 0, data);
  EXPECT_EQ(t.msix.fired.size(), 2u);
  EXPECT_EQ(unit.counters().eq_doorbells, 3u);
}

TEST_F(EqTest, MalformedDoorbellsAreCountedAndIgnored) {
  auto v = be32((77u << 24) | 0);
  unit.write(t.f, uint64_t(uar) * 4096 + 0x40, v);             // unknown EQ
  doorbell(0x40, 5);                                            // CI ahead of the producer
  unit.write(t.f, uint64_t(uar) * 4096 + 0x40, std::vector<uint8_t>(8));  // wrong size
  unit.write(t.f, uint64_t(uar) * 4096 + 0x100, v);             // no register there
  EXPECT_EQ(unit.counters().malformed, 4u);
  unit.write(t.f, uint64_t(uar + 1) * 4096 + 0x40, v);          // UAR never allocated
  unit.write(t.f, 0x1000, v);                                   // init segment page
  EXPECT_EQ(unit.counters().unallocated_uar, 2u);
  EXPECT_FALSE(t.f.resources.eqs.find(eqn)->armed);
}

TEST_F(EqTest, CommandCompletionEqe) {
  post_command_completion(t.f, 1u << 3);
  auto e = t.read(eqe_address(0), 64);
  EXPECT_EQ(e[0x01], 0x0a);
  EXPECT_EQ(load_be32(&e[0x20]), 8u);
  TestFunction other;  // no EQ: nothing happens
  post_command_completion(other.f, 1);
  EXPECT_FALSE(eq_has_subscriber(other.f, 0x0a));
  EXPECT_TRUE(eq_has_subscriber(t.f, 0x0a));
}

TEST_F(EqTest, QueryAndGenEqe) {
  ASSERT_EQ(t.run(0x303, with_number(eqn), 0x110), kOk);
  EXPECT_EQ((t.out32(0x10 + 0x0c) >> 24) & 0x1f, kLogSize);
  EXPECT_EQ(t.out32(0x10 + 0x0c) & 0xffffff, uar);
  EXPECT_EQ(t.out32(0x10 + 0x14) & 0xfff, 5u);
  EXPECT_EQ(load_be64(&t.out[0x58]), kCmdMask);
  auto gen = TestFunction::input(0x50);
  store_be32(&gen[8], eqn);
  gen[0x10 + 0x01] = 0x09;
  gen[0x10 + 0x20] = 0x42;
  ASSERT_EQ(t.run(0x304, gen), kOk);
  auto e = t.read(eqe_address(0), 64);
  EXPECT_EQ(e[0x01], 0x09);
  EXPECT_EQ(e[0x20], 0x42);
}

TEST_F(EqTest, CreateEqRefusesBadInput) {
  auto bad = [&](auto mutate) {
    auto in = t.eq_input(6, uar, 0, 0, {t.page()});
    mutate(in);
    return t.run(0x301, in);
  };
  EXPECT_EQ(bad([](auto&) {}), kOk);
  EXPECT_EQ(bad([](auto& in) { in[0x1c] = 23; }), kBadParameter) << "log_eq_size above log_max_eq_sz";
  EXPECT_EQ(bad([](auto& in) { store_be32(&in[0x1c], (6u << 24) | 999); }), kBadResource) << "unknown UAR";
  EXPECT_EQ(bad([](auto& in) { store_be32(&in[0x24], 64); }), kBadParameter) << "vector beyond the MSI-X table";
  EXPECT_EQ(bad([&](auto& in) { in.resize(0x110); }), kBadParameter) << "no PAS";
  EXPECT_EQ(bad([&](auto& in) { store_be32(&in[0x1c], (7u << 24) | uar); }), kBadParameter) << "PAS shorter than 8 KiB";
  EXPECT_EQ(bad([&](auto& in) { store_be64(&in[0x110], t.page() + 0x800); }), kBadParameter) << "misaligned page";
  EXPECT_EQ(bad([&](auto& in) { store_be16(&in[2], 1); }), kBadParameter) << "uid";
  EXPECT_EQ(bad([&](auto& in) { in.resize(0x100); }), uint8_t(CommandStatus::kBadInputLength));
}

// --- CQ ---

struct CqTest : EqTest {
  uint32_t async_eqn = 0, comp_eqn = 0, cqn = 0;
  uint64_t ring = 0, dbr = 0;
  static constexpr uint32_t kCqLog = 3;

  void SetUp() override {
    EqTest::SetUp();
    async_eqn = t.create_eq(6, uar, 1, uint64_t(1) << 0x04, {t.page()});
    comp_eqn = t.create_eq(6, uar, 2, 0, {t.page()});
    ring = t.page();
    dbr = t.page() + 0x40;
    cqn = t.create_cq(kCqLog, uar, comp_eqn, dbr, {ring});
  }
  void arm(uint32_t ci, uint32_t cmd = 0) {
    std::vector<uint8_t> v(8);
    store_be32(&v[0], (1u << 28) | (cmd << 24) | ci);
    store_be32(&v[4], cqn);
    unit.write(t.f, uint64_t(uar) * 4096 + 0x20, v);
  }
  void set_ci(uint32_t ci) { store_be32(t.memory.at(dbr), ci); }
  CqeResult cqe(uint8_t opcode = cqe::kRespSend, uint32_t qpn = 0x1234) {
    return write_cqe(t.f, cqn, [&](std::span<uint8_t> c) {
      store_be32(&c[cqe::kSopDropQpn], qpn);
      c[cqe::kOpOwn] = uint8_t(opcode << 4);
    });
  }
  uint64_t eqe_of(uint32_t eq_index_page, uint32_t index) { return eq_index_page + index * 64; }
};

// Issue 16: completions carry the device clock (model time), which extended CQs and hardware
// timestamps read; error CQEs keep their syndromes where its low bytes would be.
TEST_F(CqTest, CqesCarryTheDeviceClockErrorCqesTheirSyndromes) {
  uint64_t now = 0x0123456789abcdefull;
  t.f.clock_ticks = [&] { return now; };
  ASSERT_EQ(cqe(), CqeResult::kWritten);
  EXPECT_EQ(load_be64(&t.read(ring, 64)[cqe::kTimestamp]), now);
  set_ci(1);
  ASSERT_EQ(write_cqe(t.f, cqn, [&](std::span<uint8_t> c) {
              c[cqe::kErrSyndrome] = cqe_syndrome::kWrFlushed;
              c[cqe::kOpOwn] = uint8_t(cqe::kResponderError << 4);
            }),
            CqeResult::kWritten);
  auto err = t.read(ring + 64, 64);
  EXPECT_EQ(err[cqe::kErrSyndrome], cqe_syndrome::kWrFlushed);
  EXPECT_EQ(load_be64(&err[cqe::kTimestamp]) >> 16, 0u) << "no timestamp in an error CQE";
}

TEST_F(CqTest, CqeOwnerArmAndCompletionEventChain) {
  const uint64_t comp_ring = t.f.resources.eqs.find(comp_eqn)->ring.pages()[0];
  auto e = be32((comp_eqn << 24) | 0);
  unit.write(t.f, uint64_t(uar) * 4096 + 0x40, e);  // arm the completion EQ
  ASSERT_EQ(cqe(), CqeResult::kWritten);
  auto c = t.read(ring, 64);
  EXPECT_EQ(c[0x3f], 0x20) << "opcode kept, owner 0 on the first pass";
  EXPECT_EQ(load_be32(&c[0x38]) & 0xffffff, 0x1234u);
  EXPECT_EQ(t.read(comp_ring, 64)[0x01], 0) << "CQ not armed: no EQE";
  arm(1);
  EXPECT_EQ(t.read(comp_ring, 64)[0x3f], 0) << "arm with CI at the producer: nothing pending";
  set_ci(1);
  ASSERT_EQ(cqe(), CqeResult::kWritten);
  auto ev = t.read(comp_ring, 64);
  EXPECT_EQ(ev[0x01], 0x00) << "completion event";
  EXPECT_EQ(load_be32(&ev[0x38]) & 0xffffff, cqn);
  ASSERT_EQ(t.msix.fired.size(), 1u);
  EXPECT_EQ(t.msix.fired[0], 2u);
  ASSERT_EQ(cqe(), CqeResult::kWritten);
  EXPECT_EQ(t.f.resources.cqs.find(cqn)->completion_events, 1u) << "one event per arm";
  arm(1);  // CI behind the producer: fires at once
  EXPECT_EQ(t.f.resources.cqs.find(cqn)->completion_events, 2u);
  EXPECT_EQ(t.msix.fired.size(), 1u) << "the EQ was not re-armed";
}

TEST_F(CqTest, SolicitedArmWaitsForASolicitedOrErrorCqe) {
  arm(0, 1);
  cqe();
  EXPECT_EQ(t.f.resources.cqs.find(cqn)->completion_events, 0u);
  cqe(cqe::kResponderError);
  EXPECT_EQ(t.f.resources.cqs.find(cqn)->completion_events, 1u);
}

TEST_F(CqTest, OwnerFlipsOnWrapAndOverrunRaisesCqError) {
  for (uint32_t i = 0; i < 8; ++i) ASSERT_EQ(cqe(), CqeResult::kWritten);
  EXPECT_EQ(cqe(), CqeResult::kOverrun) << "CI 0 in the doorbell record: ring full";
  EXPECT_EQ(t.read(ring, 64)[0x3f] & 1, 0) << "not overwritten";
  const uint64_t async_ring = t.f.resources.eqs.find(async_eqn)->ring.pages()[0];
  auto ev = t.read(async_ring, 64);
  EXPECT_EQ(ev[0x01], 0x04);
  EXPECT_EQ(load_be32(&ev[0x20]) & 0xffffff, cqn);
  EXPECT_EQ(ev[0x2b], 0x01) << "overrun syndrome";
  EXPECT_EQ(cqe(), CqeResult::kInError);
  ASSERT_EQ(t.run(0x402, with_number(cqn), 0x110), kOk);
  EXPECT_EQ(t.out32(0x10) >> 28, 0x9u);

  // A fresh CQ whose driver consumes: the ninth CQE wraps with owner 1.
  const uint64_t ring2 = t.page(), dbr2 = t.page();
  const uint32_t cq2 = t.create_cq(kCqLog, uar, comp_eqn, dbr2, {ring2});
  for (uint32_t i = 0; i < 8; ++i) write_cqe(t.f, cq2, nullptr);
  store_be32(t.memory.at(dbr2), 8);
  ASSERT_EQ(write_cqe(t.f, cq2, nullptr), CqeResult::kWritten);
  EXPECT_EQ(t.read(ring2, 64)[0x3f], 0x01);
}

TEST_F(CqTest, SplitDoorbellAndBadDoorbells) {
  cqe();
  std::vector<uint8_t> hi(4), lo(4);
  store_be32(hi.data(), 0);
  store_be32(lo.data(), cqn);
  unit.write(t.f, uint64_t(uar) * 4096 + 0x20, hi);
  unit.write(t.f, uint64_t(uar) * 4096 + 0x24, lo);
  EXPECT_EQ(t.f.resources.cqs.find(cqn)->completion_events, 1u) << "two 32-bit halves make one doorbell";
  unit.write(t.f, uint64_t(uar) * 4096 + 0x24, lo);  // low half alone
  std::vector<uint8_t> v(8);
  store_be32(&v[4], 4242);
  unit.write(t.f, uint64_t(uar) * 4096 + 0x20, v);  // unknown CQ
  store_be32(&v[0], 7u << 24);
  store_be32(&v[4], cqn);
  unit.write(t.f, uint64_t(uar) * 4096 + 0x20, v);  // unknown command
  EXPECT_EQ(unit.counters().malformed, 3u);
  EXPECT_EQ(unit.counters().cq_doorbells, 1u);
  uint32_t hooked = 0;
  unit.set_sq_hook([&](FunctionContext&, uint32_t u, uint32_t off, std::span<const uint8_t> d, uint64_t) {
    EXPECT_EQ(u, uar);
    EXPECT_EQ(off, 0x800u);
    EXPECT_EQ(d.size(), 8u);
    ++hooked;
  });
  unit.write(t.f, uint64_t(uar) * 4096 + 0x800, v);
  EXPECT_EQ(hooked, 1u);
  EXPECT_EQ(unit.counters().sq_doorbells, 1u);
}

TEST_F(CqTest, CreateCqRefusesBadInputAndReferencesAreKept) {
  auto bad = [&](auto mutate) {
    auto in = t.cq_input(3, uar, comp_eqn, t.page(), {t.page()});
    mutate(in);
    return t.run(0x400, in);
  };
  EXPECT_EQ(bad([](auto& in) { in[0x11] = 0x60; }), kBadParameter) << "cqe_sz 3: no such CQE size";
  EXPECT_EQ(bad([](auto& in) { store_be32(&in[0x24], 200); }), kBadResource) << "unknown EQ";
  EXPECT_EQ(bad([](auto& in) { store_be32(&in[0x24], 4096); }), kBadIndex) << "EQ numbers are 8 bits";
  EXPECT_EQ(bad([](auto& in) { in[0x48 + 7] |= 4; }), kBadParameter) << "misaligned doorbell record";
  EXPECT_EQ(bad([](auto& in) { in[0x1c] = 23; }), kBadParameter) << "log_cq_size above the cap";
  EXPECT_EQ(bad([](auto& in) { in[0x1c] = 7; }), kBadParameter) << "8 KiB ring, one PAS page";
  EXPECT_EQ(bad([](auto& in) { store_be32(&in[0x18], 1u << 6); }), kOk) << "page_offset 1/64 page";
  EXPECT_EQ(bad([](auto& in) { store_be32(&in[0x18], 63u << 6); }), kBadParameter) << "offset + ring past the PAS";
  // CQE compression (cqc dword 0: cqe_comp_en bit 14, mini_cqe_res_format 13:12, layout 1:0).
  EXPECT_EQ(bad([](auto& in) { in[0x12] |= 0x40 | 0x30; }), kOk) << "compression with checksum + stride index mini-CQEs (3)";
  EXPECT_EQ(bad([](auto& in) { in[0x12] |= 0x40 | 0x10; }), kOk) << "... checksum ones (1)";
  EXPECT_EQ(bad([](auto& in) { in[0x12] |= 0x40 | 0x20; }), kBadParameter) << "mini-CQE format 2: none such";
  EXPECT_EQ(bad([](auto& in) { in[0x12] |= 0x40, in[0x13] |= 1; }), kBadParameter) << "enhanced layout: not offered";
  EXPECT_EQ(bad([](auto& in) { in[0x12] |= 0x30; }), kOk) << "no compression: the format is not read";
  EXPECT_EQ(t.run(0x302, with_number(comp_eqn)), kBadResourceState) << "EQ still used by CQs";
  ASSERT_EQ(t.run(0x401, with_number(cqn)), kOk);
  EXPECT_EQ(t.run(0x402, with_number(cqn), 0x110), kBadResource) << "destroyed";
  EXPECT_EQ(write_cqe(t.f, cqn, nullptr), CqeResult::kNoSuchCq);
  EXPECT_EQ(t.run(0x401, with_number(cqn)), kBadResource);
  auto modify = TestFunction::input(0x110);
  store_be32(&modify[8], cqn);
  EXPECT_EQ(t.run(0x403, modify), kBadResource);
}

TEST_F(CqTest, ModifyCqModerationAccepted) {
  auto in = TestFunction::input(0x110);
  store_be32(&in[8], cqn);
  store_be32(&in[0x0c], 3);
  store_be32(&in[0x10 + 0x10], (16u << 16) | 32);
  EXPECT_EQ(t.run(0x403, in), kOk);
  ASSERT_EQ(t.run(0x402, with_number(cqn), 0x110), kOk);
  EXPECT_EQ(t.out32(0x10 + 0x10), (16u << 16) | 32);
  EXPECT_EQ(t.run(0x403, in, 16, 2), kBadParameter) << "no such op_mod";
}

// 128-byte CQEs (cqc.cqe_sz 1, as ibv_create_cq_ex with mlx5dv's cqe_size 128 asks), and padded
// ones (cqe_sz 2, mlx5dv's CQE_PAD flag, offered by cqe_128_always): each CQE in the last 64 bytes
// of its 128-byte slot, where libmlx5 reads it.
TEST_F(CqTest, OneHundredTwentyEightByteCqesSitInTheSecondHalfOfTheirSlot) {
  for (const uint8_t cqe_sz : {1, 2}) {
    SCOPED_TRACE(cqe_sz == 1 ? "128-byte CQEs" : "padded 128-byte CQEs");
    const uint64_t big_ring = t.page(), big_dbr = t.page();
    auto in = t.cq_input(kCqLog, uar, comp_eqn, big_dbr, {big_ring});
    in[0x11] = uint8_t(cqe_sz << 5);
    ASSERT_EQ(t.run(0x400, in), kOk);
    const uint32_t big = t.object();
    for (uint32_t i = 0; i < 2; ++i)
      ASSERT_EQ(write_cqe(t.f, big, [&](std::span<uint8_t> c) {
                  store_be32(&c[cqe::kSopDropQpn], 0x100 + i);
                  c[cqe::kOpOwn] = uint8_t(cqe::kRespSend << 4);
                }),
                CqeResult::kWritten);
    EXPECT_EQ(load_be32(&t.read(big_ring + 64, 64)[cqe::kSopDropQpn]) & 0xffffff, 0x100u);
    EXPECT_EQ(load_be32(&t.read(big_ring + 128 + 64, 64)[cqe::kSopDropQpn]) & 0xffffff, 0x101u);
    EXPECT_EQ(t.read(big_ring, 64), std::vector<uint8_t>(64, 0)) << "the first half untouched";
    ASSERT_EQ(t.run(0x402, with_number(big), 0x110), kOk);
    EXPECT_EQ((t.out32(0x10) >> 21) & 7, cqe_sz) << "QUERY_CQ shows the cqe_sz it was created with";
  }
}

// ibv_resize_cq: MODIFY_CQ op_mod 1 with the new size and buffer. A RESIZE CQE (opcode 5) takes the
// next slot of the old ring, the CQEs after it go to the new ring at the counter values that
// follow; refused while the old ring has no room for it or the new one too few slots.
TEST_F(CqTest, ResizeLeavesAResizeCqeInTheOldRingAndGoesOnInTheNewOne) {
  for (uint32_t i = 0; i < 3; ++i) ASSERT_EQ(cqe(), CqeResult::kWritten);  // unpolled (CI 0)
  const uint64_t new_ring = t.page();
  auto resize = [&](uint32_t log_size) {
    auto in = t.cq_input(log_size, uar, comp_eqn, dbr, {new_ring});
    store_be32(&in[8], cqn);
    store_be32(&in[0x0c], 1u << 0);  // resize_field_select: log_cq_size
    return t.run(0x403, in, 16, 1);
  };
  EXPECT_EQ(resize(1), kBadParameter) << "2 slots for 3 unpolled CQEs";
  ASSERT_EQ(resize(4), kOk);
  auto r = t.read(ring + 3 * 64, 64);
  EXPECT_EQ(r[cqe::kOpOwn], uint8_t(cqe::kResize << 4)) << "RESIZE CQE at counter 3, owner 0";
  ASSERT_EQ(cqe(), CqeResult::kWritten);
  auto next = t.read(new_ring + 4 * 64, 64);
  EXPECT_EQ(next[cqe::kOpOwn], uint8_t(cqe::kRespSend << 4)) << "counter 4 in the 16-slot ring";
  EXPECT_EQ(t.read(ring + 4 * 64, 64)[cqe::kOpOwn], 0) << "nothing more in the old ring";
  ASSERT_EQ(t.run(0x402, with_number(cqn), 0x110), kOk);
  EXPECT_EQ((t.out32(0x10 + 0x0c) >> 24) & 0x1f, 4u) << "QUERY_CQ shows the new size";
  // A full old ring has no room for the RESIZE CQE.
  const uint64_t ring3 = t.page(), dbr3 = t.page();
  const uint32_t cq3 = t.create_cq(kCqLog, uar, comp_eqn, dbr3, {ring3});
  for (uint32_t i = 0; i < 8; ++i) write_cqe(t.f, cq3, nullptr);
  auto in = t.cq_input(4, uar, comp_eqn, dbr3, {t.page()});
  store_be32(&in[8], cq3);
  store_be32(&in[0x0c], 1u << 0);
  EXPECT_EQ(t.run(0x403, in, 16, 1), kBadResourceState);
}

TEST_F(CqTest, ResetClearsEverything) {
  t.alloc(0x800);
  t.alloc(0x816);
  t.alloc(0x80e);
  t.fw.reset();
  const Resources& r = t.f.resources;
  EXPECT_TRUE(r.uars.empty() && r.pds.empty() && r.tds.empty() && r.xrcds.empty() && r.eqs.empty() &&
              r.cqs.empty() && r.mkeys.empty() && r.srqs.empty() && r.qps.empty());
  EXPECT_EQ(write_cqe(t.f, cqn, nullptr), CqeResult::kNoSuchCq);
  EXPECT_EQ(t.run(0x303, with_number(eqn), 0x110), kBadResource);
  auto v = be32(eqn << 24);
  unit.write(t.f, uint64_t(uar) * 4096 + 0x40, v);
  EXPECT_EQ(unit.counters().unallocated_uar, 1u);
}

}  // namespace
}  // namespace hcaemu::model::test
