// NIC scheduling elements (firmware/scheduling_elements.cpp, objects/scheduling_elements.h): the
// general-object commands libmlx5's mlx5dv_sched_* send, a QP joining a queue group through the
// extended QP context, and the rates of the group and its ancestors pacing the QP's messages.
#include <systemc>

#include <deque>

#include "common/endian.h"
#include "model/firmware/hca_caps.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint16_t kCreateUctx = 0xa04, kDestroyUctx = 0xa06, kQueryHcaCap = 0x100;
constexpr uint16_t kCreate = 0xa00, kModify = 0xa01, kQuery = 0xa02, kDestroy = 0xa03;
constexpr uint16_t kInit2Init = 0x50e, kRts2Rts = 0x505;
constexpr uint32_t kBwShare = 1, kMaxAvgBw = 2;  // modify_field_select
constexpr uint8_t kNic = 3;

struct Element {
  uint8_t type = sched_element::kTsar;
  uint32_t parent = 0;
  uint32_t select = 0;
  uint32_t bw_share = 0;
  uint32_t max_avg_bw = 0;
  uint8_t hierarchy = kNic;
  uint8_t tsar_type = sched_element::kTsarDwrr;
};

// create_sched_elem_in as libmlx5's mlx5dv_sched_nic_create builds it.
std::vector<uint8_t> sched_input(uint16_t uid, uint32_t obj_id, const Element& e) {
  auto in = HostFunction::input(0x90);
  store_be16(&in[2], uid);
  store_be16(&in[6], kObjTypeSchedulingElement);
  store_be32(&in[8], obj_id);
  store_be32(&in[0x14], e.select);
  in[0x18] = e.hierarchy;
  in[0x30] = e.type;
  in[0x35] = e.tsar_type;
  store_be32(&in[0x38], e.parent);
  store_be32(&in[0x44], e.bw_share);
  store_be32(&in[0x48], e.max_avg_bw);
  return in;
}

std::vector<uint8_t> header(uint16_t uid, uint32_t obj_id) {
  auto in = HostFunction::input(16);
  store_be16(&in[2], uid);
  store_be16(&in[6], kObjTypeSchedulingElement);
  store_be32(&in[8], obj_id);
  return in;
}

// An RDMA pair whose requester A queues its SQ resumptions as HcaFunction does, so a paced message
// shows as a resumption not before some model time.
struct SchedulingTest : ConnectedPairTest<8192> {
  QueuedSqScheduler scheduler;
  uint16_t uid = 0;

  SchedulingTest() {
    a.f.resources.limits.log_max_uctx = 4;
    EXPECT_EQ(a.run(kCreateUctx, HostFunction::input(0x20)), 0);
    uid = uint16_t(a.out32(0x08));
    a.engine.set_sq_scheduler(&scheduler);
  }
  ~SchedulingTest() override { a.engine.set_sq_scheduler(nullptr); }

  uint8_t run(RdmaNode& n, uint16_t opcode, std::vector<uint8_t> in, uint32_t outlen = 16) {
    const uint16_t obj_type = load_be16(&in[6]);
    return n.run(opcode, std::move(in), outlen, obj_type);
  }
  uint32_t create(const Element& e, uint16_t owner) {
    EXPECT_EQ(run(a, kCreate, sched_input(owner, 0, e)), 0);
    return a.out32(0x08);
  }
  // RTS2RTS (or INIT2INIT) with qpc_ext: the QP's requester and responder queue groups.
  uint8_t join(const Qp& qp, uint32_t requester, uint32_t responder, uint16_t opcode = kRts2Rts, uint16_t sender = 0) {
    auto in = a.modify_input(qp);
    in.resize(0x1d0);
    store_be16(&in[2], sender);
    in[0x08] |= 0x80;                // qpc_ext
    store_be32(&in[0x10c], 1u << 1);  // opt_param_mask_95_32: QOS_QUEUE_GROUP_ID
    store_be32(&in[0x114], requester);
    store_be32(&in[0x118], responder);
    return a.run(opcode, std::move(in));
  }
  Wr write(uint32_t i) {
    return {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(i * 2048), 2048, src.key}},
            .remote_va = dst.va(i * 2048), .rkey = dst.key};
  }
};

TEST_F(SchedulingTest, ATreeOfTsarsAndQueueGroups) {
  const uint32_t root = create({}, uid);
  const uint32_t node = create({.parent = root, .select = kMaxAvgBw, .max_avg_bw = 10}, uid);
  const uint32_t leaf = create({.type = sched_element::kQueueGroup, .parent = node, .select = kBwShare | kMaxAvgBw,
                                .bw_share = 2, .max_avg_bw = 4},
                               uid);
  ASSERT_NE(root * node * leaf, 0u);
  ASSERT_EQ(run(a, kQuery, header(uid, leaf), 0x90), 0);
  EXPECT_EQ(a.out32(0x30) >> 24, sched_element::kQueueGroup);
  EXPECT_EQ(a.out32(0x38), node) << "parent";
  EXPECT_EQ(a.out32(0x44), 2u) << "bw_share";
  EXPECT_EQ(a.out32(0x48), 4u) << "max_average_bw";
  // A modify takes only the fields its select names.
  ASSERT_EQ(run(a, kModify, sched_input(uid, leaf, {.type = sched_element::kQueueGroup, .select = kBwShare, .bw_share = 7, .max_avg_bw = 99})), 0);
  ASSERT_EQ(run(a, kQuery, header(uid, leaf), 0x90), 0);
  EXPECT_EQ(a.out32(0x44), 7u);
  EXPECT_EQ(a.out32(0x48), 4u) << "not selected: kept";
  EXPECT_EQ(run(a, kModify, sched_input(uid, leaf, {.select = kBwShare})), kBadParameter) << "not a TSAR";
  // A destroyed node's children move up to its parent.
  ASSERT_EQ(run(a, kDestroy, header(uid, node)), 0);
  ASSERT_EQ(run(a, kQuery, header(uid, leaf), 0x90), 0);
  EXPECT_EQ(a.out32(0x38), root);
  EXPECT_EQ(run(a, kDestroy, header(uid, node)), kBadResource) << "twice";
}

TEST_F(SchedulingTest, WhatTheDeviceDoesNotHaveIsRefused) {
  const uint32_t root = create({}, uid);
  const uint32_t leaf = create({.type = sched_element::kQueueGroup, .parent = root}, uid);
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.type = sched_element::kQueueGroup})), kBadResource)
      << "a queue group needs a parent";
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.parent = leaf})), kBadParameter) << "below a queue group";
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.parent = 0xabcd})), kBadResource) << "no such parent";
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.hierarchy = 2})), kBadParameter) << "eswitch hierarchy";
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.tsar_type = 2})), kBadParameter) << "ETS TSAR";
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.type = 1, .parent = root})), kBadParameter) << "vport element";
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.select = 4})), kBadParameter) << "unknown field";
  auto short_input = sched_input(uid, 0, {});
  short_input.resize(0x40);
  EXPECT_EQ(run(a, kCreate, short_input), kBadInputLength);
  // Depth is bounded: a chain of TSARs ends at kMaxDepth.
  uint32_t parent = root;
  for (uint32_t depth = 2; depth <= sched_element::kMaxDepth; ++depth) parent = create({.parent = parent}, uid);
  EXPECT_EQ(run(a, kCreate, sched_input(uid, 0, {.parent = parent})), kBadParameter) << "too deep";
}

TEST_F(SchedulingTest, OnlyTheOwnerOrTheKernelUsesAnElement) {
  const uint32_t root = create({}, uid);
  ASSERT_EQ(a.run(kCreateUctx, HostFunction::input(0x20)), 0);
  const uint16_t other = uint16_t(a.out32(0x08));
  EXPECT_EQ(run(a, kQuery, header(other, root), 0x90), kBadResource);
  EXPECT_EQ(run(a, kDestroy, header(other, root)), kBadResource);
  EXPECT_EQ(run(a, kCreate, sched_input(other, 0, {.type = sched_element::kQueueGroup, .parent = root})), kBadResource)
      << "below another process's TSAR";
  const uint32_t leaf = create({.type = sched_element::kQueueGroup, .parent = root}, uid);
  EXPECT_EQ(join(*c.a, leaf, 0, kRts2Rts, 0), 0) << "the kernel may";
  // The context goes only after its elements (the kernel destroys a process's objects first).
  auto destroy_uctx = HostFunction::input(16);
  store_be32(&destroy_uctx[8], uid);
  EXPECT_EQ(a.run(kDestroyUctx, destroy_uctx), kBadResourceState);
  ASSERT_EQ(run(a, kDestroy, header(0, root)), 0) << "the kernel destroys a process's element";
  ASSERT_EQ(run(a, kDestroy, header(uid, leaf)), 0);
  EXPECT_EQ(a.state_of(*c.a).sched_group_requester, 0u) << "the QP left the destroyed group";
  EXPECT_EQ(a.run(kDestroyUctx, destroy_uctx), 0);
}

TEST_F(SchedulingTest, AQpJoinsAQueueGroupThroughTheExtendedContext) {
  const uint32_t root = create({}, uid);
  const uint32_t leaf = create({.type = sched_element::kQueueGroup, .parent = root}, uid);
  EXPECT_EQ(join(*c.a, root, 0), kBadParameter) << "a TSAR is no queue group";
  EXPECT_EQ(join(*c.a, 0xdead, 0), kBadParameter) << "no such group";
  ASSERT_EQ(join(*c.a, leaf, leaf), 0);
  EXPECT_EQ(a.state_of(*c.a).sched_group_requester, leaf);
  EXPECT_EQ(a.state_of(*c.a).sched_group_responder, leaf);
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
  EXPECT_EQ(join(*c.a, leaf, 0, kInit2Init), uint8_t(CommandStatus::kBadQpState)) << "INIT2INIT from RTS";
  // Without qpc_ext the extension is not read.
  auto plain = a.modify_input(*c.a);
  plain.resize(0x1d0);
  store_be32(&plain[0x10c], 1u << 1);
  ASSERT_EQ(a.run(kRts2Rts, plain), 0);
  EXPECT_EQ(a.state_of(*c.a).sched_group_requester, leaf);
  ASSERT_EQ(join(*c.a, 0, 0), 0) << "0 leaves the group";
  EXPECT_EQ(a.state_of(*c.a).sched_group_requester, 0u);
  // A UD QP joins as a requester only.
  Cq& cq = a.make_cq();
  Qp& ud = a.create_qp(cq, cq, 0, qp_st::kUd);
  a.bring_up_ud(ud, 0x11111111);
  EXPECT_EQ(join(ud, leaf, leaf), kBadParameter);
  EXPECT_EQ(join(ud, leaf, 0), 0);
  // The caps say what libmlx5 checks.
  ASSERT_EQ(a.run(kQueryHcaCap, HostFunction::input(16), 0x1010, (0xc << 1) | 1), 0);  // QOS, current
  EXPECT_EQ((a.out32(0x10) >> 21) & 7, 7u) << "nic_sq_scheduling, nic_bw_share, nic_rate_limit";
  EXPECT_EQ((a.out32(0x10) >> 30) & 1, 0u) << "no esw_scheduling";
  EXPECT_EQ((a.out32(0x14) >> 16) & 0x1f, sched_element::kLogMaxQueueGroups) << "log_max_qos_nic_queue_group";
  EXPECT_EQ((a.out32(0x14) >> 30) & 1, 1u) << "nic_qp_scheduling";
  EXPECT_EQ(a.out32(0x10 + 0x20), (1u << 16 | 1u << 20) | 1u) << "TSAR and queue group; DWRR";
  ASSERT_EQ(a.run(kQueryHcaCap, HostFunction::input(16), 0x1010, 1), 0);
  EXPECT_EQ((a.out32(0x10 + 0x24) >> 29) & 1, 1u) << "qpc_extension";
}

TEST_F(SchedulingTest, TheGroupAndItsAncestorsPaceTheQpsMessages) {
  a.put(src, 0, pattern(8192, 3));
  const uint32_t node = create({.select = kMaxAvgBw, .max_avg_bw = 500}, 0);  // Mb/s
  const uint32_t leaf = create({.type = sched_element::kQueueGroup, .parent = node, .select = kMaxAvgBw, .max_avg_bw = 1000}, 0);
  ASSERT_EQ(join(*c.a, leaf, 0), 0);
  for (uint32_t i = 0; i < 4; ++i) a.post_send(*c.a, write(i), false);
  ASSERT_TRUE(a.ring(*c.a));
  p.pump();
  EXPECT_EQ(a.engine.counters().tx_packets, 2u) << "the first message goes at once";
  ASSERT_EQ(scheduler.queued.size(), 1u);
  // 2048 bytes in two 1024-byte packets, each with 82 bytes of headers, FCS and gap on the wire.
  constexpr uint64_t kWireBytes = 2048 + 2 * 82;
  const auto& elements = a.f.resources.scheduling.table();
  const uint64_t leaf_free = elements.find(leaf)->next_free_ps, node_free = elements.find(node)->next_free_ps;
  EXPECT_EQ(node_free - leaf_free, kWireBytes * 8 * 1'000'000 / 1000) << "the node at half the leaf's rate";
  // The next message's resumption finds the group busy: it waits for the slowest element on the
  // way, and resumed too early it waits again; nothing more leaves meanwhile.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const SqResume next = scheduler.queued.front();
    scheduler.queued.pop_front();
    a.engine.resume_sq(next);
    EXPECT_EQ(a.engine.counters().tx_packets, 2u);
    ASSERT_EQ(scheduler.queued.size(), 1u);
    EXPECT_EQ(scheduler.queued.front().not_before_ps, node_free);
  }
  // Out of the group, the rest goes without waiting, and all of it lands at B.
  ASSERT_EQ(join(*c.a, 0, 0), 0);
  while (!scheduler.queued.empty()) {
    const SqResume next = scheduler.queued.front();
    scheduler.queued.pop_front();
    a.engine.resume_sq(next);
    p.pump();
  }
  EXPECT_EQ(a.engine.counters().tx_packets, 8u);
  EXPECT_EQ(a.drain(*c.a->scq).size(), 4u);
  EXPECT_EQ(b.get(dst, 0, 8192), pattern(8192, 3));
}

// The kernel's face (CREATE / MODIFY / QUERY / DESTROY_SCHEDULING_ELEMENT, mlx5e's HTB offload)
// serves the same elements: one that the general-object face made is queried and modified here.
TEST_F(SchedulingTest, TheKernelsCommandsServeTheSameElements) {
  auto command = [](uint32_t id) {
    auto in = HostFunction::input(0x80);
    in[0x08] = kNic;
    store_be32(&in[0x0c], id);
    return in;
  };
  auto in = command(0);
  in[0x20] = sched_element::kTsar;
  store_be32(&in[0x34], 3);   // bw_share
  store_be32(&in[0x38], 40);  // max_average_bw: a create takes every field
  ASSERT_EQ(a.run(0x782, in, 0x40), 0);
  const uint32_t root = a.out32(0x10);
  ASSERT_NE(root, 0u);
  in = command(0);
  in[0x20] = sched_element::kQueueGroup;
  store_be32(&in[0x28], root);
  ASSERT_EQ(a.run(0x782, in, 0x40), 0);
  const uint32_t leaf = a.out32(0x10);
  ASSERT_EQ(a.run(0x784, command(leaf), 0x80), 0);
  EXPECT_EQ(a.out32(0x20) >> 24, sched_element::kQueueGroup);
  EXPECT_EQ(a.out32(0x28), root);
  in = command(root);
  in[0x20] = sched_element::kTsar;
  store_be32(&in[0x14], kMaxAvgBw);  // modify_bitmask
  store_be32(&in[0x34], 9);
  store_be32(&in[0x38], 80);
  ASSERT_EQ(a.run(0x785, in), 0);
  ASSERT_EQ(run(a, kQuery, header(0, root), 0x90), 0) << "the general-object face sees it";
  EXPECT_EQ(a.out32(0x44), 3u) << "bw_share: not in the bitmask";
  EXPECT_EQ(a.out32(0x48), 80u);
  in = command(0);
  in[0x08] = 2;  // the eswitch hierarchy: no eswitch QoS here
  EXPECT_EQ(a.run(0x782, in, 0x40), kBadParameter);
  EXPECT_EQ(a.run(0x783, command(leaf)), 0);
  EXPECT_EQ(a.run(0x783, command(leaf)), kBadResource);
  // At most 2^log_max_qos_nic_queue_group queue groups.
  for (uint32_t i = 0; i < (1u << sched_element::kLogMaxQueueGroups); ++i) {
    in = command(0);
    in[0x20] = sched_element::kQueueGroup;
    store_be32(&in[0x28], root);
    ASSERT_EQ(a.run(0x782, in, 0x40), 0) << i;
  }
  EXPECT_EQ(a.run(0x782, in, 0x40), kExceedLimit);
}

TEST(SchedulingElementsModel, ChargesEveryLimitedElementOnTheWayToTheRoot) {
  SchedulingElements s;
  auto& t = s.table();
  const uint32_t top = t.insert({.max_average_bw_mbps = 100});
  const uint32_t middle = t.insert({.parent = top, .depth = 2});  // no limit
  const uint32_t group = t.insert({.type = sched_element::kQueueGroup, .parent = middle, .depth = 3, .max_average_bw_mbps = 1000});
  EXPECT_EQ(s.ready_ps(group), 0u);
  s.charge(group, 1000, 5'000'000);
  EXPECT_EQ(t.find(group)->next_free_ps, 5'000'000u + 8'000'000u) << "1000 bytes at 1 Gb/s: 8 us";
  EXPECT_EQ(t.find(top)->next_free_ps, 5'000'000u + 80'000'000u) << "at 100 Mb/s: 80 us";
  EXPECT_EQ(t.find(middle)->next_free_ps, 0u);
  EXPECT_EQ(s.ready_ps(group), 85'000'000u);
  s.charge(group, 1000, 6'000'000);  // queued behind the first bytes
  EXPECT_EQ(t.find(top)->next_free_ps, 165'000'000u);
  s.erase(middle);
  EXPECT_EQ(t.find(group)->parent, top) << "moved up";
  EXPECT_EQ(s.ready_ps(group), 165'000'000u);
  EXPECT_EQ(s.ready_ps(0), 0u);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
