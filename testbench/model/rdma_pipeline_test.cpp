// The requester sends one message of an SQ batch per work item and leaves the rest to a
// resumption its scheduler queues (RdmaEngine::SqScheduler; HcaFunction lets arrived frames go
// first, so ACKs need not wait for the whole batch): ACKs retire WQEs while the batch goes on, an
// error NAK taken mid-batch ends the QP in ERR with the rest of the batch flushed, never sent, and
// WQEs rung in meanwhile are taken by the queued resumption.
#include <systemc>

#include <deque>
#include <functional>

#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeReqErr = 0xd;
constexpr uint8_t kSynFlushed = 0x05, kSynRemoteAccess = 0x13;
constexpr uint32_t kMessage = 2048;  // two packets at the 1024-byte path MTU

struct RdmaPipelineTest : ConnectedPairTest<4 * kMessage> {
  std::vector<uint64_t> cqes_at_each_yield;

  // run_batch() hands the resumptions back with the wire delivered (B answers, A takes the
  // answers) before each.
  QueuedSqScheduler scheduler;
  std::function<void()> between_messages;

  RdmaPipelineTest() {
    a.put(src, 0, pattern(4 * kMessage, 5));
    a.engine.set_sq_scheduler(&scheduler);
  }
  ~RdmaPipelineTest() override { a.engine.set_sq_scheduler(nullptr); }
  void run_batch() {
    for (;;) {
      p.pump();
      cqes_at_each_yield.push_back(a.engine.counters().requester_cqes + a.engine.counters().error_cqes);
      if (between_messages) between_messages();
      if (scheduler.queued.empty()) return;
      const SqResume next = scheduler.queued.front();
      scheduler.queued.pop_front();
      a.engine.resume_sq(next);
    }
  }
  Wr write(uint32_t i, uint32_t rkey) {
    return {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(i * kMessage), kMessage, src.key}},
            .remote_va = dst.va(i * kMessage), .rkey = rkey};
  }
};

TEST_F(RdmaPipelineTest, AcksRetireWqesWhileTheBatchGoesOn) {
  for (uint32_t i = 0; i < 4; ++i) a.post_send(*c.a, write(i, dst.key), false);
  ASSERT_TRUE(a.ring(*c.a));
  EXPECT_EQ(scheduler.queued.size(), 1u) << "one message sent, the rest resumes later";
  EXPECT_EQ(a.engine.counters().tx_packets, 2u);
  run_batch();
  EXPECT_EQ(cqes_at_each_yield, (std::vector<uint64_t>{1, 2, 3, 4})) << "each WQE completes before the next is sent";
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 4u);
  for (uint16_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sent[i].opcode, kCqeReq);
    EXPECT_EQ(sent[i].wqe_counter, i);
  }
  EXPECT_EQ(b.get(dst, 0, 4 * kMessage), pattern(4 * kMessage, 5));
  EXPECT_EQ(a.state(*c.a), QpState::kRts);
}

TEST_F(RdmaPipelineTest, ErrorNakMidBatchFlushesTheRestUnsent) {
  b.put(dst, 0, std::vector<uint8_t>(4 * kMessage, 0xee));
  a.post_send(*c.a, write(0, dst.key), false);
  a.post_send(*c.a, write(1, dst.key ^ 0x100), false);  // no such rkey at B: remote access NAK
  a.post_send(*c.a, write(2, dst.key), false);
  a.post_send(*c.a, write(3, dst.key), false);
  ASSERT_TRUE(a.ring(*c.a));
  run_batch();
  EXPECT_EQ(a.state(*c.a), QpState::kError);
  EXPECT_EQ(a.engine.counters().tx_packets, 4u) << "WQEs 2 and 3 never reach the wire";
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  EXPECT_EQ(sent[1].opcode, kCqeReqErr);
  EXPECT_EQ(sent[1].syndrome, kSynRemoteAccess);
  for (uint16_t i = 2; i < 4; ++i) {
    EXPECT_EQ(sent[i].opcode, kCqeReqErr);
    EXPECT_EQ(sent[i].syndrome, kSynFlushed);
    EXPECT_EQ(sent[i].wqe_counter, i);
  }
  const auto data = pattern(4 * kMessage, 5);
  EXPECT_EQ(b.get(dst, 0, kMessage), std::vector<uint8_t>(data.begin(), data.begin() + kMessage));
  EXPECT_EQ(b.get(dst, 2 * kMessage, 2 * kMessage), std::vector<uint8_t>(2 * kMessage, 0xee));
}

TEST_F(RdmaPipelineTest, WqesPostedDuringTheBatchAreTakenByTheQueuedResumption) {
  // A doorbell (or a fence release) for an SQ whose resumption is queued does not start a second
  // loop: the resumption reads the producer index again and goes on.
  between_messages = [this] {
    if (cqes_at_each_yield.size() != 1) return;
    a.post_send(*c.a, write(3, dst.key), false);
    EXPECT_TRUE(a.ring(*c.a));
    EXPECT_EQ(scheduler.queued.size(), 1u);
    EXPECT_TRUE(scheduler.queued.front().reread);
  };
  for (uint32_t i = 0; i < 3; ++i) a.post_send(*c.a, write(i, dst.key), false);
  ASSERT_TRUE(a.ring(*c.a));
  run_batch();
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 4u);
  for (uint16_t i = 0; i < 4; ++i) EXPECT_EQ(sent[i].wqe_counter, i);
  EXPECT_EQ(b.get(dst, 0, 4 * kMessage), pattern(4 * kMessage, 5));
}

TEST_F(RdmaPipelineTest, AResumptionForAQpMovedToResetDoesNothing) {
  for (uint32_t i = 0; i < 2; ++i) a.post_send(*c.a, write(i, dst.key), false);
  ASSERT_TRUE(a.ring(*c.a));
  ASSERT_EQ(scheduler.queued.size(), 1u);
  a.to_reset(*c.a);
  const uint64_t sent_before = a.engine.counters().tx_packets;
  a.engine.resume_sq(scheduler.queued.front());
  EXPECT_EQ(a.engine.counters().tx_packets, sent_before) << "a QP in RESET sends nothing";
}

}  // namespace
}  // namespace hcaemu::model::test

int sc_main(int, char**) { return 0; }
