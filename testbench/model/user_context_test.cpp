// DevX user contexts (firmware/user_context.cpp) and the uid rules of every command (Senders,
// resource_helpers.h lookup_owned): who may send what, and who may act on whose objects.
#include "common/endian.h"
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kCreateUctx = 0xa04, kDestroyUctx = 0xa06;
constexpr uint16_t kAllocPd = 0x800, kDeallocPd = 0x801, kAllocUar = 0x802, kDeallocUar = 0x803;
constexpr uint16_t kCreateCq = 0x400, kDestroyCq = 0x401, kQueryCq = 0x402;
constexpr uint16_t kQueryHcaCap = 0x100, kManagePages = 0x108, kQueryNicVportContext = 0x754;

// An input of `size` bytes whose header carries `uid`, with `number` at 0x08 (the object of most
// destroy and dealloc commands).
std::vector<uint8_t> from(uint16_t uid, uint32_t number = 0, size_t size = 16) {
  auto in = TestFunction::input(size);
  store_be16(&in[2], uid);
  store_be32(&in[8], number);
  return in;
}

struct DevxFunction : TestFunction {
  DevxFunction() { f.resources.limits.log_max_uctx = 4; }

  uint16_t create_uctx(uint32_t cap = 0) {
    auto in = input(0x20);
    store_be32(&in[0x10], cap);
    EXPECT_EQ(run(kCreateUctx, in), kOk);
    return uint16_t(out32(0x08) & 0xffff);
  }
  uint8_t destroy_uctx(uint16_t uid) { return run(kDestroyUctx, from(0, uid)); }
  uint32_t alloc_as(uint16_t uid, uint16_t opcode) {
    EXPECT_EQ(run(opcode, from(uid)), kOk);
    return object();
  }
};

TEST(UserContext, CreatedUpToTheCapAndDestroyedOnce) {
  DevxFunction t;
  t.f.resources.limits.log_max_uctx = 1;
  const uint16_t a = t.create_uctx();
  const uint16_t b = t.create_uctx();
  EXPECT_NE(a, 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.run(kCreateUctx, TestFunction::input(0x20)), kExceedLimit) << "1 << log_max_uctx contexts";
  EXPECT_EQ(t.destroy_uctx(a), kOk);
  EXPECT_EQ(t.destroy_uctx(a), kBadResource) << "twice";
  EXPECT_EQ(t.destroy_uctx(0), uint8_t(CommandStatus::kBadIndex)) << "uid 0 is the kernel's";
}

TEST(UserContext, NoneWithoutTheCap) {
  TestFunction t;
  t.f.resources.limits.log_max_uctx = 0;  // no DevX
  EXPECT_EQ(t.run(kCreateUctx, TestFunction::input(0x20)), uint8_t(CommandStatus::kBadOpcode));
}

TEST(UserContext, CapsTheDeviceDoesNotOfferAreRefused) {
  DevxFunction t;
  for (uint32_t cap : {kUctxCapInternalDevRes, 4u}) {
    auto in = TestFunction::input(0x20);
    store_be32(&in[0x10], cap);
    EXPECT_EQ(t.run(kCreateUctx, in), kBadParameter) << cap;
  }
}

TEST(UserContext, AnUnknownUidSendsNothing) {
  DevxFunction t;
  const uint16_t a = t.create_uctx();
  EXPECT_EQ(t.run(kAllocPd, from(a + 1)), kBadParameter) << "never created";
  EXPECT_EQ(t.run(kAllocPd, from(kSharedResourceUid)), kBadParameter) << "the shared uid owns no PD";
  ASSERT_EQ(t.destroy_uctx(a), kOk);
  EXPECT_EQ(t.run(kAllocPd, from(a)), kBadParameter) << "destroyed";
}

TEST(UserContext, KernelCommandsRefuseUserUids) {
  DevxFunction t;
  const uint16_t a = t.create_uctx();
  EXPECT_EQ(t.run(kManagePages, from(a, 0, 0x10)), kBadParameter);
  EXPECT_EQ(t.run(kDestroyUctx, from(a, a)), kBadParameter) << "only the kernel destroys a context";
  // CREATE_EQ: the kernel's completion EQs carry the shared uid; a user's never.
  const uint32_t uar = t.alloc(kAllocUar);
  auto eq = t.eq_input(6, uar, 0, 0, {t.page()});
  store_be16(&eq[2], a);
  EXPECT_EQ(t.run(0x301, eq), kBadParameter);
  store_be16(&eq[2], kSharedResourceUid);
  EXPECT_EQ(t.run(0x301, eq, 16), kOk);
}

TEST(UserContext, QueriesPassButNotAboutAnotherFunction) {
  DevxFunction t;
  const uint16_t a = t.create_uctx();
  EXPECT_EQ(t.run(kQueryHcaCap, from(a), 0x1010, 1), kOk);
  auto other = from(a, 0x80000001u);  // other_function, function 1
  EXPECT_EQ(t.run(kQueryHcaCap, other, 0x1010, 1), kBadParameter);
  EXPECT_EQ(t.run(kQueryNicVportContext, from(a), 0x110), kOk);
  EXPECT_EQ(t.run(kQueryNicVportContext, from(a, 0x80000001u), 0x110), kBadParameter);
}

TEST(UserContext, EachActsOnlyOnItsOwnObjects) {
  DevxFunction t;
  const uint16_t a = t.create_uctx(), b = t.create_uctx();
  const uint32_t pd_a = t.alloc_as(a, kAllocPd);
  const uint32_t pd_kernel = t.alloc(kAllocPd);
  EXPECT_EQ(t.run(kDeallocPd, from(b, pd_a)), kBadResource) << "another context's";
  EXPECT_EQ(t.run(kDeallocPd, from(a, pd_kernel)), kBadResource) << "the kernel's";
  EXPECT_EQ(t.destroy_uctx(a), kBadResourceState) << "its PD is alive";
  EXPECT_EQ(t.run(kDeallocPd, from(a, pd_a)), kOk);
  EXPECT_EQ(t.destroy_uctx(a), kOk);
  const uint32_t uar_b = t.alloc_as(b, kAllocUar);
  EXPECT_EQ(t.run(kDeallocUar, from(0, uar_b)), kOk) << "the kernel may free any";
  EXPECT_EQ(t.destroy_uctx(b), kOk);
}

TEST(UserContext, ObjectsPointAtSharedKernelObjects) {
  DevxFunction t;
  const uint16_t a = t.create_uctx(), b = t.create_uctx();
  const uint32_t uar = t.alloc(kAllocUar);
  auto eq = t.eq_input(6, uar, 0, 0, {t.page()});
  store_be16(&eq[2], kSharedResourceUid);
  ASSERT_EQ(t.run(0x301, eq, 16), kOk);
  const uint32_t eqn = t.out32(0x08) & 0xff;
  auto cq = t.cq_input(2, uar, eqn, t.page(), {t.page()});
  store_be16(&cq[2], a);
  ASSERT_EQ(t.run(kCreateCq, cq), kOk) << "a user's CQ on the shared EQ";
  const uint32_t cqn = t.object();
  EXPECT_EQ(t.run(kQueryCq, from(b, cqn), 0x400), kBadResource);
  EXPECT_EQ(t.run(kDestroyCq, from(b, cqn)), kBadResource);
  EXPECT_EQ(t.run(kQueryCq, from(a, cqn), 0x400), kOk);
  EXPECT_EQ(t.destroy_uctx(a), kBadResourceState);
  EXPECT_EQ(t.run(kDestroyCq, from(a, cqn)), kOk);
  EXPECT_EQ(t.destroy_uctx(a), kOk);
}

TEST(UserContext, OnlyARawTxContextCreatesAnEthernetSq) {
  DevxFunction t;
  const uint16_t plain = t.create_uctx(), raw = t.create_uctx(kUctxCapRawTx);
  constexpr uint16_t kCreateSq = 0x904;
  auto sq = from(plain, 0, 0x200);  // no CQ: a context allowed to send fails at the CQ instead
  EXPECT_EQ(t.run(kCreateSq, sq), kBadParameter);
  EXPECT_EQ(t.out32(0x04), (uint32_t(kCreateSq) << 16) | 0x01) << "the uid check";
  store_be16(&sq[2], raw);
  EXPECT_NE(t.run(kCreateSq, sq), kOk);
  EXPECT_NE(t.out32(0x04), (uint32_t(kCreateSq) << 16) | 0x01);
}

// DevX's own create commands come with their umem_valid bits set (mlx5_ib forces them): buffers in
// a UMEM (umem_test.cpp), so a process's PAS never reaches a queue; a use of a UMEM the device does
// not offer is refused.
TEST(UserContext, CommandsWithBuffersInAUmemNeverTakeTheirPas) {
  DevxFunction t;
  const uint16_t a = t.create_uctx();
  const uint32_t uar = t.alloc(kAllocUar);
  const uint32_t eqn = t.create_eq(6, uar, 0, 0, {t.page()});
  auto cq = t.cq_input(2, uar, eqn, t.page(), {t.page()});
  store_be16(&cq[2], a);
  cq[0x5c] |= 0x80;  // cq_umem_valid, cq_umem_id 0: no UMEM, whatever the PAS says
  EXPECT_EQ(t.run(kCreateCq, cq), uint8_t(CommandStatus::kBadIndex));
  EXPECT_EQ(t.out32(0x04), (uint32_t(kCreateCq) << 16) | 0x21) << "the UMEM check";
  cq[0x5c] &= 0x7f;
  EXPECT_EQ(t.run(kCreateCq, cq), kOk) << "the same CQ as mlx5_ib builds it for a process";

  const uint32_t pd = t.alloc_as(a, kAllocPd);
  auto mkey = from(a, 0, 0x110);
  mkey[0x0c] |= 0x40;                                       // mkey_umem_valid
  store_be32(&mkey[0x10], (1u << 30) | (1u << 15) | (2u << 8));  // free, umr_en, KLM: mlx5dv_create_mkey
  store_be32(&mkey[0x1c], pd);
  store_be32(&mkey[0x10 + 0x34], 4);
  EXPECT_EQ(t.run(0x200, mkey), kOk) << "an indirect key takes no translation from the UMEM";
  store_be32(&mkey[0x10], (1u << 8));                        // MTT, in use: its pages would be the UMEM's
  EXPECT_EQ(t.run(0x200, mkey), kBadParameter);
  EXPECT_EQ(t.out32(0x04), (0x200u << 16) | 0x21) << "the UMEM check";
}

// rdma-core's DR tests count a rule's packets with a counter they allocate through DevX.
TEST(UserContext, FlowCountersAreTheirProcesss) {
  constexpr uint16_t kAlloc = 0x939, kDealloc = 0x93a, kQuery = 0x93b;
  DevxFunction t;
  const uint16_t a = t.create_uctx(), b = t.create_uctx();
  const uint32_t counter = t.alloc_as(a, kAlloc);
  t.f.eth.flow_counters.find(counter)->packets = 3;
  auto query = from(a, 0, 0x20);
  store_be32(&query[0x1c], counter);  // flow_counter_id
  ASSERT_EQ(t.run(kQuery, query, 0x30), kOk);
  EXPECT_EQ(t.out32(0x14), 3u) << "packets (low dword)";
  store_be16(&query[2], b);
  EXPECT_EQ(t.run(kQuery, query, 0x30), kBadResource) << "another process's counter";
  EXPECT_EQ(t.run(kDealloc, from(b, counter)), kBadResource);
  EXPECT_EQ(t.destroy_uctx(a), kBadResourceState) << "its counter is alive";
  EXPECT_EQ(t.run(kDealloc, from(a, counter)), kOk);
  EXPECT_EQ(t.destroy_uctx(a), kOk);
}

TEST(UserContext, BasicAndXrcSrqsAreTheKernelsOnly) {
  DevxFunction t;
  const uint16_t a = t.create_uctx();
  for (uint16_t create : {0x700, 0x705}) {  // CREATE_SRQ, CREATE_XRC_SRQ
    EXPECT_EQ(t.run(create, from(a, 0, 0x200)), kBadParameter) << create;
    EXPECT_EQ(t.out32(0x04), (uint32_t(create) << 16) | 0x01) << "the uid check";
  }
}

TEST(UserContext, ResetForgetsEveryContext) {
  DevxFunction t;
  const uint16_t a = t.create_uctx();
  t.f.reset_objects();
  t.f.resources.limits.log_max_uctx = 4;
  EXPECT_EQ(t.run(kAllocPd, from(a)), kBadParameter);
}

}  // namespace
}  // namespace hcaemu::model::test
