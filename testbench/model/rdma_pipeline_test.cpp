// The requester hands over to arrived frames between the messages of an SQ batch
// (RdmaEngine::set_yield_hook, used by HcaFunction so ACKs need not wait for the whole batch):
// ACKs retire WQEs while the batch goes on, and an error NAK taken mid-batch ends the QP in ERR
// with the rest of the batch flushed, never sent.
#include <systemc>

#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeReqErr = 0xd;
constexpr uint8_t kSynFlushed = 0x05, kSynRemoteAccess = 0x13;
constexpr uint32_t kMessage = 2048;  // two packets at the 1024-byte path MTU

struct RdmaPipelineTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  Connection c = p.connect();
  Mr src = a.reg_mr(4 * kMessage);
  Mr dst = b.reg_mr(4 * kMessage, access_bits::kAll);
  std::vector<uint64_t> cqes_at_each_yield;

  RdmaPipelineTest() {
    a.put(src, 0, pattern(4 * kMessage, 5));
    // Between two messages, everything on the wire is delivered (B answers, A takes the answers).
    a.engine.set_yield_hook([this] {
      const bool any = p.pump() != 0;
      cqes_at_each_yield.push_back(a.engine.counters().requester_cqes + a.engine.counters().error_cqes);
      return any;
    });
  }
  Wr write(uint32_t i, uint32_t rkey) {
    return {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(i * kMessage), kMessage, src.key}},
            .remote_va = dst.va(i * kMessage), .rkey = rkey};
  }
};

TEST_F(RdmaPipelineTest, AcksRetireWqesWhileTheBatchGoesOn) {
  for (uint32_t i = 0; i < 4; ++i) a.post_send(*c.a, write(i, dst.key), false);
  ASSERT_TRUE(a.ring(*c.a));
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
  p.pump();
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

TEST_F(RdmaPipelineTest, WqesPostedDuringTheBatchAreTakenInTheSameLoop) {
  // A frame handled mid-batch that asks for the SQ (here: the hook posts and rings, as a fence
  // release would) finds the loop still running; the loop reads the producer again and goes on.
  bool posted = false;
  a.engine.set_yield_hook([this, &posted] {
    const bool any = p.pump() != 0;
    if (!posted) {
      posted = true;
      a.post_send(*c.a, write(3, dst.key), false);
      EXPECT_TRUE(a.ring(*c.a));  // process_sq of the same QP, mid-loop: deferred to the loop
    }
    return any;
  });
  for (uint32_t i = 0; i < 3; ++i) a.post_send(*c.a, write(i, dst.key), false);
  ASSERT_TRUE(a.ring(*c.a));
  p.pump();
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 4u);
  for (uint16_t i = 0; i < 4; ++i) EXPECT_EQ(sent[i].wqe_counter, i);
  EXPECT_EQ(b.get(dst, 0, 4 * kMessage), pattern(4 * kMessage, 5));
}

}  // namespace
}  // namespace hcaemu::model::test

int sc_main(int, char**) { return 0; }
