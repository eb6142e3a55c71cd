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
  Qp& umr_qp = b.create_qp(umr_cq, umr_cq, RdmaNode::kNoPd, qp_st::kRegUmr);  // qpc.pd 0, as mlx5_ib 6.1

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

// ---- Translation loads (the MKEY cache: mlx5r_umr_update_mr_pas) ----

// A key as the driver's MKEY cache creates it: free, umr_en, MTT mode, room for `entries`, none loaded.
uint32_t cache_key(RdmaNode& n, uint32_t entries) {
  auto in = n.input(0x110);
  const uint8_t variant = 0x5a;
  store_be32(&in[0x10], (1u << 30) | (1u << 15) | access_bits::kLocalRead | (1u << 8));  // free, umr_en, MTT
  store_be32(&in[0x14], 0xffffff00u | variant);
  store_be32(&in[0x1c], n.pd);
  store_be32(&in[0x44], (entries + 1) / 2);  // translations_octword_size
  store_be32(&in[0x48], 12);
  EXPECT_EQ(n.run(0x200, in), 0);
  return (n.object() << 8) | variant;
}

// The PD's local DMA key (ib_alloc_pd's internal MR): PA mode over the whole address space.
uint32_t dma_key(RdmaNode& n) {
  auto in = n.input(0x110);
  store_be32(&in[0x10], access_bits::kLocalRead | access_bits::kLocalWrite);  // PA
  store_be32(&in[0x14], 0xffffff00u | 0x11);
  store_be32(&in[0x1c], (1u << 31) | n.pd);  // length64
  EXPECT_EQ(n.run(0x200, in), 0);
  return (n.object() << 8) | 0x11;
}

// A UMR WQE that loads `octowords` x 2 entries from `xlt` at entry 2 x `octo_offset` (the pointer
// form mlx5_ib uses) and, with `enable`, gives the key its range, PD and access.
struct XltWqe {
  uint32_t key = 0, lkey = 0;
  uint64_t xlt = 0;
  uint16_t octowords = 0;
  uint32_t octo_offset = 0;
  uint8_t check = umr::kFlagCheckFree;  // 1 << 5: must be free (loading a key to enable it)
  bool enable = false;
  uint32_t pd = 0;
  uint64_t start = 0, length = 0;
  bool length64 = false;
  uint32_t log_page_size = 12;  // 30: KSM entries of 1 GiB (an implicit ODP MR)
};

std::vector<uint8_t> build_xlt(const XltWqe& u, const Qp& qp) {
  std::vector<uint8_t> w(144, 0);
  store_be32(&w[0], ((qp.sq_pi & 0xffff) << 8) | umr::kOpcode);
  store_be32(&w[4], (qp.qpn << 8) | 9);  // ds: 144 bytes
  w[11] = 0x08;
  store_be32(&w[12], u.key);
  w[16] = uint8_t(u.check | (u.octo_offset != 0 ? umr::kFlagTranslationOffset : 0));
  store_be16(&w[20], u.octowords);
  store_be16(&w[22], uint16_t(u.octo_offset));
  uint64_t mask = 0;
  if (u.enable)
    mask = umr::kMaskKey | umr::kMaskFree | kAccessMask | umr::kMaskPd | umr::kMaskTranslation;
  store_be64(&w[24], mask);
  store_be32(&w[32], u.octo_offset >> 16);
  store_be32(&w[64], access_bits::kAll);  // free = 0
  store_be32(&w[64 + 0x04], 0xffffff00u | (u.key & 0xff));
  store_be32(&w[64 + 0x0c], (u.length64 ? 1u << 31 : 0) | u.pd);
  store_be64(&w[64 + 0x10], u.start);
  store_be64(&w[64 + 0x18], u.length);
  store_be32(&w[64 + 0x38], u.log_page_size);
  store_be32(&w[128], uint32_t(u.octowords) * 16);
  store_be32(&w[132], u.lkey);
  store_be64(&w[136], u.xlt);
  return w;
}

struct UmrLoadTest : UmrTest {
  static constexpr uint32_t kRoom = 8;
  uint32_t key = cache_key(b, kRoom);
  uint32_t lkey = dma_key(b);
  uint64_t xlt = b.page();
  std::vector<uint64_t> pages{b.page(), b.page(), b.page()};
  uint64_t iova = 0x7f0000001000;

  UmrLoadTest() {
    for (size_t i = 0; i < kRoom; ++i) {
      std::array<uint8_t, 8> e{};
      store_be64(e.data(), i < pages.size() ? pages[i] | 3 : 0);  // MLX5_IB_MTT_PRESENT
      EXPECT_TRUE(b.memory.write(xlt + 8 * i, e));
    }
  }
  std::vector<Cqe> post(const XltWqe& u) {
    b.put_wqe(umr_qp, build_xlt(u, umr_qp));
    EXPECT_TRUE(b.ring(umr_qp));
    return b.drain(umr_cq);
  }
  void recover() {
    b.to_reset(umr_qp);
    for (uint16_t opcode : {0x502, 0x503, 0x504}) ASSERT_EQ(b.run(opcode, b.modify_input(umr_qp)), 0);
  }
};

TEST_F(UmrLoadTest, TwoPiecesLoadAFreeKeyAndTheLastEnablesIt) {
  const uint64_t charged = b.f.resources.translation_entries;
  auto done = post({.key = key, .lkey = lkey, .xlt = xlt, .octowords = 1});  // entries 0..1
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_TRUE(b.f.resources.mkeys.find(key >> 8)->free) << "loaded, not yet enabled";
  done = post({.key = key, .lkey = lkey, .xlt = xlt + 16, .octowords = 1, .octo_offset = 1, .enable = true,
               .pd = b.pd, .start = iova, .length = 3 * 4096});  // entries 2..3, then enabled
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  const Mkey* m = b.f.resources.mkeys.find(key >> 8);
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->free);
  EXPECT_EQ(m->start, iova);
  EXPECT_EQ(m->length, 3u * 4096);
  EXPECT_EQ(b.f.resources.translation_entries, charged + 4) << "loaded entries are charged";

  // A peer's WRITE across the three pages lands where the loaded entries say, on the responder.
  const auto data = pattern(4096, 7);
  a.put(src, 0, data);
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 4096, src.key}}, .remote_va = iova + 4000,
                     .rkey = key});
  p.pump();
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  std::vector<uint8_t> first(96), second(4000);
  ASSERT_TRUE(b.memory.read(pages[0] + 4000, first));
  ASSERT_TRUE(b.memory.read(pages[1], second));
  EXPECT_EQ(first, std::vector<uint8_t>(data.begin(), data.begin() + 96));
  EXPECT_EQ(second, std::vector<uint8_t>(data.begin() + 96, data.end()));
}

TEST_F(UmrLoadTest, ALoadedUserMrIsNotInvalidatedByASendWithInvalidate) {
  ASSERT_EQ(post({.key = key, .lkey = lkey, .xlt = xlt, .octowords = 2, .enable = true, .pd = b.pd, .start = iova,
                  .length = 3 * 4096})[0].opcode,
            kCqeReq);
  // An ibv_reg_mr region stays one though its cache key has umr_en (as Soft-RoCE refuses it too).
  b.post_recv(*c.b, {{dst.va(0), 256, dst.key}});
  a.post_send(*c.a, {.opcode = wqe_op::kSendInval, .sges = {{src.va(0), 16, src.key}}, .imm = key});
  p.pump();
  const auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr) << "the responder refused the invalidation";
  EXPECT_FALSE(b.f.resources.mkeys.find(key >> 8)->free) << "the user MR is still registered";
}

TEST_F(UmrLoadTest, BadLoadsCompleteInErrorAndChangeNothing) {
  std::array<uint8_t, 8> misaligned{};
  const uint64_t bad_list = b.page();
  store_be64(misaligned.data(), pages[0] | 0x800);
  ASSERT_TRUE(b.memory.write(bad_list, misaligned));
  struct Case {
    XltWqe wqe;
    uint8_t syndrome;
    const char* what;
  };
  const Case cases[] = {
      {{.key = key, .lkey = lkey, .xlt = xlt, .octowords = 2, .octo_offset = 3}, kSynLocalQpOperation, "past its room"},
      {{.key = key, .lkey = lkey, .xlt = bad_list, .octowords = 1}, kSynLocalQpOperation, "an entry below its page size"},
      {{.key = key, .lkey = lkey ^ 0x100, .xlt = xlt, .octowords = 1}, kSynLocalProtection, "the list's key refused"},
      {{.key = key, .lkey = lkey, .xlt = xlt, .octowords = 1, .check = umr::kFlagMustBeInUse}, kSynLocalProtection,
       "an update of a key that is free"},
      {{.key = dst.key, .lkey = lkey, .xlt = xlt, .octowords = 1}, kSynLocalProtection, "a load of a key in use"},
      {{.key = src.key, .lkey = lkey, .xlt = xlt, .octowords = 1}, kSynLocalProtection, "a key of another function"},
  };
  const uint64_t charged = b.f.resources.translation_entries;
  for (const Case& k : cases) {
    const auto done = post(k.wqe);
    ASSERT_EQ(done.size(), 1u) << k.what;
    EXPECT_EQ(done[0].opcode, kCqeReqErr) << k.what;
    EXPECT_EQ(done[0].syndrome, k.syndrome) << k.what;
    recover();
  }
  // Over the function's translation budget: refused before anything is loaded.
  b.f.resources.limits.max_translation_entries = b.f.resources.translation_entries + 1;
  const auto done = post({.key = key, .lkey = lkey, .xlt = xlt, .octowords = 1});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr) << "over budget";
  const Mkey* m = b.f.resources.mkeys.find(key >> 8);
  EXPECT_TRUE(m->free);
  EXPECT_TRUE(m->mtt.empty()) << "no refused load left an entry";
  EXPECT_EQ(b.f.resources.translation_entries, charged);
}

// An implicit ODP MR as mlx5_ib 6.1 builds it: a KSM key from its MKEY cache (free, umr_en, one
// entry per octoword of room) loaded with entries of 1 GiB that name the null MKEY or a child MTT
// key (mlx5_ib_alloc_implicit_mr, then pagefault_implicit_mr). A peer's WRITE through the implicit
// key lands where the child's entries say; where the null MKEY is, nothing lands.
TEST_F(UmrLoadTest, AnImplicitOdpKeyTranslatesThroughItsChildren) {
  constexpr uint64_t kGiB = uint64_t(1) << 30;
  // The child: an MTT cache key enabled over [1 GiB, +3 pages).
  ASSERT_EQ(post({.key = key, .lkey = lkey, .xlt = xlt, .octowords = 4, .enable = true, .pd = b.pd, .start = kGiB,
                  .length = 3 * 4096})[0].opcode, kCqeReq);
  // The KSM key: room for 4 entries; entry 1 names the child, the rest the null MKEY.
  auto in = b.input(0x110);
  store_be32(&in[0x10], (1u << 30) | (1u << 15) | access_bits::kLocalRead | (3u << 8));  // free, umr_en, KSM
  store_be32(&in[0x14], 0xffffff00u | 0x6b);
  store_be32(&in[0x1c], b.pd);
  store_be32(&in[0x44], 4);
  store_be32(&in[0x48], 12);
  ASSERT_EQ(b.run(0x200, in), 0);
  const uint32_t imr = (b.object() << 8) | 0x6b;
  const uint64_t ksm = b.page();
  for (uint32_t i = 0; i < 4; ++i) {
    std::array<uint8_t, 16> e{};
    store_be32(&e[0], uint32_t(kGiB));
    store_be32(&e[4], i == 1 ? key : kNullMkey);
    store_be64(&e[8], i == 1 ? kGiB : 0);
    ASSERT_TRUE(b.memory.write(ksm + 16 * i, e));
  }
  auto done = post({.key = imr, .lkey = lkey, .xlt = ksm, .octowords = 4, .enable = true, .pd = b.pd, .length64 = true,
                    .log_page_size = 30});
  ASSERT_EQ(done.size(), 1u);
  ASSERT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(b.f.resources.mkeys.find(imr >> 8)->ksm.size(), 4u);

  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 512, src.key}}, .remote_va = kGiB + 4096 + 0x10,
                     .rkey = imr});
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  std::vector<uint8_t> landed(512);
  ASSERT_TRUE(b.memory.read(pages[1] + 0x10, landed));
  const auto all = pattern(4096, 3);
  EXPECT_EQ(landed, std::vector<uint8_t>(all.begin(), all.begin() + 512)) << "in the child's second page";
  // Where the null MKEY is: not present, and no page-fault EQ here: a remote access error.
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 8, src.key}}, .remote_va = 0x1000,
                     .rkey = imr});
  p.pump();
  sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReqErr);
  EXPECT_EQ(sent[0].syndrome, kSynRemoteAccess);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
