// Memory windows (issue 16; IBA 10.6.7): ibv_alloc_mw makes a free KLM MKEY, libmlx5 binds it with
// a UMR WQE on an RC QP (one inline KLM on an MR), a peer's RDMA reaches the MR through the window's
// rkey within the window's range and rights only, a type 2 window only through the QP it was bound
// through, and LOCAL_INV (or a SEND with Invalidate) frees it. Bind errors complete in error with
// the MW bind syndrome. Each case is checked on the responder's memory.
#include <systemc>

#include "model/objects/umr.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeReqErr = 0xd;
constexpr uint8_t kSynMwBind = 0x06, kSynRemoteAccess = 0x13;

struct Bind {
  uint32_t window = 0;      // ctrl imm: the window's key
  uint8_t new_tag = 0;      // the key tag after the bind
  bool type2 = true;
  uint32_t mr_key = 0;
  uint64_t mr_address = 0;  // where in the MR the window starts
  uint64_t start = 0;       // the window's address (the rkey user's va)
  uint64_t length = 0;      // 0: unbind (type 1) / LOCAL_INV (type 2)
  uint32_t access = access_bits::kRemoteRead | access_bits::kRemoteWrite;
};

// The WQE libmlx5's set_bind_wr builds (ctrl, UMR ctrl, MKEY segment, one inline KLM in 64 bytes).
std::vector<uint8_t> bind_wqe(const Bind& b, const Qp& qp) {
  const bool range = b.length != 0;
  std::vector<uint8_t> w(range ? 192 : 128, 0);
  store_be32(&w[0], ((qp.sq_pi & 0xffff) << 8) | umr::kOpcode);
  store_be32(&w[4], (qp.qpn << 8) | uint32_t(w.size() / 16));
  w[11] = 0x08;
  store_be32(&w[12], b.window);
  w[16] = uint8_t(0x80 | 0x10 | (b.type2 ? (range ? umr::kFlagCheckFree : umr::kFlagCheckQpn) : 0));
  store_be16(&w[20], range ? 4 : 0);
  uint64_t mask = umr::kMaskFree | umr::kMaskKey | (b.type2 ? umr::kMaskQpn : 0);
  if (range)
    mask |= umr::kMaskLen | umr::kMaskStartAddr | umr::kMaskLocalWrite | umr::kMaskRemoteRead | umr::kMaskRemoteWrite |
            umr::kMaskAtomic;
  store_be64(&w[24], mask);
  store_be32(&w[64], range ? b.access : 1u << 30);
  store_be32(&w[68], (b.type2 && range ? qp.qpn << 8 : 0xffffff00u) | b.new_tag);
  if (range) {
    store_be64(&w[64 + 0x10], b.start);
    store_be64(&w[64 + 0x18], b.length);
    store_be32(&w[128], uint32_t(b.length));
    store_be32(&w[132], b.mr_key);
    store_be64(&w[136], b.mr_address);
  }
  return w;
}

struct MwTest : ConnectedPairTest<> {
  static constexpr uint64_t kWindowVa = 0x7000'0000;

  MwTest() { a.put(src, 0, pattern(4096, 9)); }

  // ibv_alloc_mw as mlx5_ib_alloc_mw sends it: a free KLM MKEY with umr_en, remote invalidation for type 2.
  uint32_t alloc_mw(bool type2, uint32_t pd = 0) {
    std::vector<uint8_t> in(0x110);
    store_be32(&in[0x10], (1u << 30) | access_bits::kUmrEn | access_bits::kLocalRead | (2u << 8));
    store_be32(&in[0x14], 0xffffff00u | 0x11);
    store_be32(&in[0x1c], (type2 ? 1u << 24 : 0) | (pd != 0 ? pd : b.pd));
    EXPECT_EQ(b.run(0x200, in, 0x10), 0);
    return (load_be32(&b.out[0x08]) << 8) | 0x11;
  }
  std::vector<Cqe> post_bind(Qp& qp, const Bind& bind) {
    b.put_wqe(qp, bind_wqe(bind, qp));
    EXPECT_TRUE(b.ring(qp));
    return b.drain(*qp.scq);
  }
  // A WRITE of 64 bytes from A at `va` through `rkey` on connection `conn`; the requester's CQE.
  std::pair<uint8_t, uint8_t> write(Connection& conn, uint64_t va, uint32_t rkey, uint32_t at = 0) {
    a.post_send(*conn.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(at), 64, src.key}}, .remote_va = va, .rkey = rkey});
    p.pump();
    const auto done = a.drain(*conn.a->scq);
    EXPECT_EQ(done.size(), 1u);
    return done.empty() ? std::pair<uint8_t, uint8_t>{0xff, 0} : std::pair{done[0].opcode, done[0].syndrome};
  }
  Bind window_on_dst(uint32_t window, uint8_t tag, bool type2) {
    return {.window = window, .new_tag = tag, .type2 = type2, .mr_key = dst.key, .mr_address = dst.va(1024),
            .start = kWindowVa, .length = 512};
  }
};

TEST_F(MwTest, Type2WindowReachesItsRangeOfTheMrThroughItsQpOnly) {
  const uint32_t window = alloc_mw(true);
  auto done = post_bind(*c.b, window_on_dst(window, 0x42, true));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_EQ(done[0].send_opcode, umr::kOpcode);
  const uint32_t rkey = (window & ~0xffu) | 0x42;
  EXPECT_EQ(write(c, kWindowVa + 16, rkey), (std::pair<uint8_t, uint8_t>{kCqeReq, 0}));
  EXPECT_EQ(b.get(dst, 1024 + 16, 64), a.get(src, 0, 64)) << "landed at the window's place in the MR";
  EXPECT_EQ(b.get(dst, 0, 64), std::vector<uint8_t>(64, 0)) << "nothing elsewhere";
  // Through another QP of the same PD: refused (type 2B), and the data stays as it was.
  Connection other = p.connect();
  EXPECT_EQ(write(other, kWindowVa + 128, rkey, 64), (std::pair<uint8_t, uint8_t>{kCqeReqErr, kSynRemoteAccess}));
  EXPECT_EQ(b.get(dst, 1024 + 128, 64), std::vector<uint8_t>(64, 0));
  // Past the window's end, or with the window's old key: refused.
  EXPECT_EQ(write(c, kWindowVa + 500, rkey).first, kCqeReqErr);
  EXPECT_EQ(b.engine.counters().mw_binds, 1u);
}

TEST_F(MwTest, LocalInvalidateFreesAType2WindowAndOnlyItsQpMayDoIt) {
  const uint32_t window = alloc_mw(true);
  ASSERT_EQ(post_bind(*c.b, window_on_dst(window, 0x42, true))[0].opcode, kCqeReq);
  const uint32_t rkey = (window & ~0xffu) | 0x42;
  auto done = post_bind(*c.b, {.window = rkey, .type2 = true});  // IBV_WR_LOCAL_INV
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReq);
  EXPECT_TRUE(b.f.resources.mkeys.find(window >> 8)->free);
  EXPECT_EQ(write(c, kWindowVa, rkey), (std::pair<uint8_t, uint8_t>{kCqeReqErr, kSynRemoteAccess}));
  EXPECT_EQ(b.get(dst, 1024, 64), std::vector<uint8_t>(64, 0));
  // Bound again through another QP (the refused WRITE took c down); invalidating it from a third is
  // a bind error.
  Connection other = p.connect();
  ASSERT_EQ(post_bind(*other.b, window_on_dst(window, 0x43, true))[0].opcode, kCqeReq);
  Connection third = p.connect();
  done = post_bind(*third.b, {.window = (window & ~0xffu) | 0x43, .type2 = true});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr);
  EXPECT_EQ(done[0].syndrome, kSynMwBind);
  EXPECT_FALSE(b.f.resources.mkeys.find(window >> 8)->free);
}

TEST_F(MwTest, Type1WindowRebindsAndAnyQpOfThePdUsesIt) {
  const uint32_t window = alloc_mw(false);
  ASSERT_EQ(post_bind(*c.b, window_on_dst(window, 0x01, false))[0].opcode, kCqeReq);
  Bind again = window_on_dst(window, 0x02, false);
  again.mr_address = dst.va(2048);  // rebinding a bound type 1 window moves it
  ASSERT_EQ(post_bind(*c.b, again)[0].opcode, kCqeReq);
  Connection other = p.connect();
  EXPECT_EQ(write(other, kWindowVa, (window & ~0xffu) | 0x02), (std::pair<uint8_t, uint8_t>{kCqeReq, 0}));
  EXPECT_EQ(b.get(dst, 2048, 64), a.get(src, 0, 64));
  EXPECT_EQ(write(other, kWindowVa, (window & ~0xffu) | 0x01).first, kCqeReqErr) << "the old key";
}

TEST_F(MwTest, BindErrorsCompleteWithTheMwBindSyndrome) {
  const uint32_t window = alloc_mw(true);
  Mr read_only = b.reg_mr(4096, access_bits::kLocalRead | access_bits::kRemoteRead);
  Bind bad = window_on_dst(window, 0x42, true);
  bad.mr_key = read_only.key;
  bad.mr_address = read_only.va(0);  // remote write through a window on an MR without local write
  auto done = post_bind(*c.b, bad);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr);
  EXPECT_EQ(done[0].syndrome, kSynMwBind);
  EXPECT_EQ(b.state(*c.b), QpState::kError);
  EXPECT_TRUE(b.f.resources.mkeys.find(window >> 8)->free) << "nothing bound";
  // Each of the others on a fresh connection: past the MR's end, another PD's window, twice bound.
  auto refused = [&](const Bind& bind) {
    Connection fresh = p.connect();
    const auto d = post_bind(*fresh.b, bind);
    return d.size() == 1 && d[0].opcode == kCqeReqErr && d[0].syndrome == kSynMwBind;
  };
  Bind past = window_on_dst(window, 0x42, true);
  past.mr_address = dst.va(4096 - 256);
  EXPECT_TRUE(refused(past));
  EXPECT_TRUE(refused(window_on_dst(alloc_mw(true, b.alloc_pd()), 0x42, true)));
  Connection fresh = p.connect();
  ASSERT_EQ(post_bind(*fresh.b, window_on_dst(window, 0x42, true))[0].opcode, kCqeReq);
  EXPECT_TRUE(refused(window_on_dst((window & ~0xffu) | 0x42, 0x43, true))) << "type 2 must be free to bind";
  EXPECT_EQ(b.engine.counters().mw_bind_errors, 4u);
}

TEST_F(MwTest, SendWithInvalidateFreesAType2Window) {
  const uint32_t window = alloc_mw(true);
  ASSERT_EQ(post_bind(*c.b, window_on_dst(window, 0x42, true))[0].opcode, kCqeReq);
  const uint32_t rkey = (window & ~0xffu) | 0x42;
  b.post_recv(*c.b, {{dst.va(0), 256, dst.key}});
  a.post_send(*c.a, {.opcode = wqe_op::kSendInval, .sges = {{src.va(0), 16, src.key}}, .imm = rkey});
  p.pump();
  EXPECT_EQ(a.drain(*c.a->scq).size(), 1u);
  EXPECT_TRUE(b.f.resources.mkeys.find(window >> 8)->free);
  EXPECT_EQ(write(c, kWindowVa, rkey).first, kCqeReqErr);
}

}  // namespace
}  // namespace hcaemu::model::test

// libsystemc references sc_main; GoogleTest provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
