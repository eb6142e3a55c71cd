// UMR WQEs on the driver's UMR QP (issue 16: ibv_rereg_mr hung the guest kernel, whose UMR WQEs
// the model left unconsumed). Re-registration of access flags and PD, revocation (free), the CQE
// the driver sleeps on, and refusals that complete in error instead of never. Checked on the
// responder: after the UMR a peer's RDMA WRITE is refused or lands as the new flags say.
#include <systemc>

#include "model/objects/umr.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeReqErr = 0xd;
constexpr uint8_t kSynLocalProtection = 0x04, kSynLocalQpOperation = 0x02, kSynRemoteAccess = 0x13;

// The WQE mlx5_ib builds for a UMR without translation: ctrl, UMR ctrl (inline), MKEY segment.
struct UmrWqe {
  uint32_t key = 0;
  uint64_t mask = 0;
  uint32_t access = 0;  // mkc bits (access_bits::*)
  uint32_t pd = 0;
  bool free = false;
  uint16_t xlt_octowords = 0;
  uint8_t opcode = umr::kOpcode;
};

std::vector<uint8_t> build(const UmrWqe& u, const Qp& qp) {
  std::vector<uint8_t> w(128, 0);
  store_be32(&w[0], ((qp.sq_pi & 0xffff) << 8) | u.opcode);
  store_be32(&w[4], (qp.qpn << 8) | 8);  // ds: 128 bytes
  w[11] = 0x08;                           // CE: a CQE
  store_be32(&w[12], u.key);
  w[16] = 0x80;                           // MLX5_UMR_INLINE
  store_be16(&w[20], u.xlt_octowords);
  store_be64(&w[24], u.mask);
  store_be32(&w[64], u.access | (u.free ? 1u << 30 : 0));
  store_be32(&w[64 + 0x04], 0xffffff00u | (u.key & 0xff));
  store_be32(&w[64 + 0x0c], u.pd);
  return w;
}

constexpr uint64_t kAccessMask = umr::kMaskLocalRead | umr::kMaskLocalWrite | umr::kMaskRemoteRead |
                                 umr::kMaskRemoteWrite | umr::kMaskAtomic;

struct UmrTest : ConnectedPairTest<> {
  Cq& umr_cq = b.make_cq();
  Qp& umr_qp = b.create_qp(umr_cq, umr_cq, 0, qp_st::kRegUmr);

  UmrTest() {
    a.put(src, 0, pattern(4096, 3));
    // The driver brings its UMR QP to RTS once (mlx5r_umr_qp_rst2rts).
    for (uint16_t opcode : {0x502, 0x503, 0x504}) EXPECT_EQ(b.run(opcode, b.modify_input(umr_qp)), 0) << opcode;
  }
  std::vector<Cqe> post(const UmrWqe& u) {
    b.put_wqe(umr_qp, build(u, umr_qp));
    EXPECT_TRUE(b.ring(umr_qp));
    return b.drain(umr_cq);
  }
  // A WRITE from a into b's region; the requester's CQE opcode and syndrome.
  std::pair<uint8_t, uint8_t> write() {
    a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 512, src.key}}, .remote_va = dst.va(0),
                       .rkey = dst.key});
    p.pump();
    const auto done = a.drain(*c.a->scq);
    EXPECT_EQ(done.size(), 1u);
    return done.empty() ? std::pair<uint8_t, uint8_t>{0xff, 0} : std::pair{done[0].opcode, done[0].syndrome};
  }
};

TEST_F(UmrTest, RereregAccessTakesRemoteWriteAwayAndGivesItBack) {
  auto done = post({.key = dst.key, .mask = kAccessMask, .access = access_bits::kLocalRead | access_bits::kLocalWrite});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(done[0].send_opcode, umr::kOpcode);
  EXPECT_EQ(done[0].wqe_counter, 0u);
  EXPECT_EQ(write(), (std::pair<uint8_t, uint8_t>{kCqeReqErr, kSynRemoteAccess})) << "remote write was taken away";
  const auto all = pattern(4096, 3);
  EXPECT_NE(b.get(dst, 0, 512), std::vector<uint8_t>(all.begin(), all.begin() + 512)) << "nothing landed";

  // The RC connection is in ERR now; a fresh one, and the access back by UMR.
  Connection again = p.connect();
  c = again;
  done = post({.key = dst.key, .mask = kAccessMask, .access = access_bits::kAll});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(write(), (std::pair<uint8_t, uint8_t>{kCqeReq, 0}));
  const auto sent = pattern(4096, 3);
  EXPECT_EQ(b.get(dst, 0, 512), std::vector<uint8_t>(sent.begin(), sent.begin() + 512)) << "landed on the responder";
  EXPECT_EQ(b.engine.counters().umr_wqes, 2u);
}

TEST_F(UmrTest, RevokeFreesTheKeyAndMovesThePd) {
  const uint32_t other_pd = b.alloc_pd();
  auto done = post({.key = dst.key, .mask = umr::kMaskFree | umr::kMaskPd, .pd = other_pd, .free = true});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  const Mkey* m = b.f.resources.mkeys.find(dst.key >> 8);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->free);
  EXPECT_EQ(m->pd, other_pd);
  EXPECT_EQ(b.f.resources.pds.find(other_pd)->refs, 1u) << "the MKEY's PD reference moved";
  EXPECT_EQ(write().first, kCqeReqErr) << "a revoked key is refused";
}

TEST_F(UmrTest, RefusalsCompleteInErrorAndTheQpRecovers) {
  // An unknown key, a PD of nobody, a translation, another opcode: each an error CQE, never silence.
  const UmrWqe bad[] = {
      {.key = dst.key ^ 0x100, .mask = kAccessMask},
      {.key = dst.key, .mask = umr::kMaskPd, .pd = 0x777},
      {.key = dst.key, .mask = umr::kMaskLen, .xlt_octowords = 4},
      {.key = dst.key, .mask = kAccessMask, .opcode = 0x0a},
  };
  const uint8_t expected[] = {kSynLocalProtection, kSynLocalProtection, kSynLocalQpOperation, kSynLocalQpOperation};
  for (size_t i = 0; i < std::size(bad); ++i) {
    const auto done = post(bad[i]);
    ASSERT_EQ(done.size(), 1u) << i;
    EXPECT_EQ(done[0].opcode, kCqeReqErr) << i;
    EXPECT_EQ(done[0].syndrome, expected[i]) << i;
    EXPECT_EQ(b.state(umr_qp), QpState::kSqError) << i;
    // The driver's recovery: RESET, then RST -> RTS again.
    b.to_reset(umr_qp);
    for (uint16_t opcode : {0x502, 0x503, 0x504}) ASSERT_EQ(b.run(opcode, b.modify_input(umr_qp)), 0);
  }
  const Mkey* m = b.f.resources.mkeys.find(dst.key >> 8);
  EXPECT_TRUE(m->remote_write && !m->free) << "refused UMRs changed nothing";
  EXPECT_EQ(write(), (std::pair<uint8_t, uint8_t>{kCqeReq, 0}));
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
