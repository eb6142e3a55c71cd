// The reconstruction against traffic the model itself sends (hostsim: two functions, their RC and
// UD engines, a wire that loses frames so that retransmissions, NAKs and resent READs happen): the
// messages rebuilt from the captured frames are the work requests that were posted, in order,
// with their opcodes, lengths and immediates, every one answered, and every frame mapped.
#include <gtest/gtest.h>

#include "hostsim/rdma_host.h"
#include "replay/reconstruct.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::replay {
namespace {

using namespace hostsim;

struct Posted {
  MessageKind kind;
  uint64_t bytes;
  std::optional<uint32_t> immediate;
};

TEST(EngineCapture, EveryPostedMessageIsRebuiltFromTheWire) {
  RdmaPair p;
  Reconstructor capture;
  uint64_t frame = 0;
  p.wire.filter = [&](WireFrame& f) {
    capture.add(frame, frame * 100, f.bytes);  // captured before the wire decides its fate
    return ++frame % 9 != 0;                   // every ninth frame is lost
  };
  RcAttributes attr;
  attr.ack_timeout = 10;
  Connection c = p.connect(attr);
  Mr src = p.a.reg_mr(65536), dst = p.b.reg_mr(65536);
  std::vector<Posted> posted;
  auto post = [&](const Wr& wr, Posted what) {
    p.a.post_send(*c.a, wr);
    posted.push_back(what);
  };
  for (int round = 0; round < 4; ++round) {
    const uint32_t n = 1000 + 3000 * uint32_t(round);
    p.b.post_recv(*c.b, {{dst.va(0), 16384, dst.key}});
    post({.opcode = model::wqe_op::kRdmaWrite, .sges = {{src.va(0), n, src.key}}, .remote_va = dst.va(0), .rkey = dst.key},
         {MessageKind::kWrite, n, std::nullopt});
    post({.opcode = model::wqe_op::kSendImm, .sges = {{src.va(0), n / 2, src.key}}, .imm = 0x10 + uint32_t(round)},
         {MessageKind::kSendImm, n / 2, 0x10 + uint32_t(round)});
    post({.opcode = model::wqe_op::kRdmaRead, .sges = {{src.va(0), n + 7, src.key}}, .remote_va = dst.va(0), .rkey = dst.key},
         {MessageKind::kRead, n + 7, std::nullopt});
    post({.opcode = model::wqe_op::kAtomicFa, .sges = {{src.va(32768), 8, src.key}}, .remote_va = dst.va(32768),
          .rkey = dst.key, .swap_add = 1},
         {MessageKind::kFetchAdd, 8, std::nullopt});
    for (int spins = 0; spins < 100 && (p.pump() != 0 || p.expire_timers(p.a) || p.expire_timers(p.b)); ++spins) {
    }
  }
  const auto sent = p.a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), posted.size());
  for (const Cqe& cqe : sent) ASSERT_EQ(cqe.opcode, 0) << "every message completed";
  const Reconstruction r = capture.finish();
  ASSERT_EQ(r.messages.size(), posted.size());
  for (size_t i = 0; i < posted.size(); ++i) {
    EXPECT_EQ(r.messages[i].kind, posted[i].kind) << i;
    EXPECT_EQ(r.messages[i].bytes, posted[i].bytes) << i;
    EXPECT_EQ(r.messages[i].immediate, posted[i].immediate) << i;
    EXPECT_NE(r.messages[i].done_ns, 0u) << i << ": answered in the capture";
  }
  EXPECT_GT(r.anomalies.retransmitted_packets, 0u) << "the lost frames were resent";
  EXPECT_EQ(r.mapped_roce_frames, r.roce_frames);
  EXPECT_TRUE(r.unmapped.empty()) << r.unmapped.front().reason;
  ASSERT_EQ(r.queue_pairs.size(), 1u);
  EXPECT_EQ(r.queue_pairs[0].qpn, c.a->qpn);
  EXPECT_EQ(r.queue_pairs[0].peer_qpn, c.b->qpn);
}

}  // namespace
}  // namespace hcaemu::replay

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
