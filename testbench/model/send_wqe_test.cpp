// Send WQE parsing (queues/send_wqe.cpp): the layout of every supported opcode per service type, each
// error kind, inline data across WQEBB boundaries, multi-SGE lists, the datagram and XRC segments.
#include "model/queues/send_wqe.h"

#include <gtest/gtest.h>

#include "common/endian.h"
#include "model/objects/resources.h"

namespace hcaemu::model::test {
namespace {

constexpr uint32_t kQpn = 0x1234;

// Lays out a WQE segment by segment the way libmlx5 does; finish() fills ds and pads to WQEBBs.
struct WqeBuilder {
  std::vector<uint8_t> b;

  explicit WqeBuilder(uint8_t opcode, uint32_t qpn = kQpn, uint16_t index = 0x4321, uint8_t fm_ce_se = 0,
                      uint32_t imm = 0, uint8_t opmod = 0)
      : b(16, 0) {
    store_be32(&b[0], (uint32_t(opmod) << 24) | (uint32_t(index) << 8) | opcode);
    store_be32(&b[4], qpn << 8);
    b[11] = fm_ce_se;
    store_be32(&b[12], imm);
  }
  size_t grow(size_t n) {
    const size_t at = b.size();
    b.resize(at + n, 0);
    return at;
  }
  WqeBuilder& raddr(uint64_t va, uint32_t rkey) {
    const size_t at = grow(16);
    store_be64(&b[at], va);
    store_be32(&b[at + 8], rkey);
    return *this;
  }
  WqeBuilder& atomic(uint64_t swap_add, uint64_t compare) {
    const size_t at = grow(16);
    store_be64(&b[at], swap_add);
    store_be64(&b[at + 8], compare);
    return *this;
  }
  WqeBuilder& xrc(uint32_t srqn) {
    store_be32(&b[grow(16)], srqn);
    return *this;
  }
  WqeBuilder& datagram(uint32_t qkey, uint32_t remote_qpn) {
    const size_t at = grow(48);
    store_be32(&b[at], qkey);
    store_be32(&b[at + 8], 0x80000000u | remote_qpn);
    b[at + 0x0c] = 0x35;
    b[at + 0x0d] = 0x7;
    store_be16(&b[at + 0x0e], 0xc001);
    for (int i = 0; i < 6; ++i) b[at + 0x14 + i] = uint8_t(0xa0 + i);
    b[at + 0x1a] = 0x48;
    b[at + 0x1b] = 64;
    store_be32(&b[at + 0x1c], (1u << 30) | (3u << 20) | 0xabcde);
    for (int i = 0; i < 16; ++i) b[at + 0x20 + i] = uint8_t(0x10 + i);
    return *this;
  }
  WqeBuilder& data(uint32_t byte_count, uint32_t lkey, uint64_t addr) {
    const size_t at = grow(16);
    store_be32(&b[at], byte_count);
    store_be32(&b[at + 4], lkey);
    store_be64(&b[at + 8], addr);
    return *this;
  }
  WqeBuilder& inl(const std::vector<uint8_t>& bytes) {
    const size_t at = grow((4 + bytes.size() + 15) & ~size_t(15));
    store_be32(&b[at], 0x80000000u | uint32_t(bytes.size()));
    std::copy(bytes.begin(), bytes.end(), &b[at + 4]);
    return *this;
  }
  // ds from the segments written (or `ds`), then the padding of the last WQEBB filled with junk.
  std::vector<uint8_t> finish(int ds = -1) {
    std::vector<uint8_t> w = b;
    w[7] = uint8_t(ds < 0 ? w.size() / 16 : uint32_t(ds));
    const size_t whole = (w.size() + 63) & ~size_t(63);
    w.resize(whole, 0xee);
    return w;
  }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed = 1) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 13);
  return v;
}

WqeError parse(const std::vector<uint8_t>& w, uint8_t st, SendWqe& out, uint32_t max_sges = wqe_format::kMaxDs) {
  return parse_send_wqe(w, st, kQpn, out, max_sges);
}

TEST(SendWqe, RcSendWithTwoSgesAndControlFields) {
  const auto w = WqeBuilder(wqe_op::kSend, kQpn, 0xbeef, 0x80 | 0x08 | 0x02)
                     .data(100, 0x201, 0x1000)
                     .data(28, 0x302, 0x2000)
                     .finish();
  SendWqe s;
  ASSERT_EQ(parse(w, qp_st::kRc, s), WqeError::kNone);
  EXPECT_EQ(s.opcode, wqe_op::kSend);
  EXPECT_EQ(s.wqe_index, 0xbeef);
  EXPECT_EQ(s.qpn, kQpn);
  EXPECT_EQ(s.ds, 3);
  EXPECT_EQ(s.wqebbs(), 1u);
  EXPECT_EQ(s.fence, 4);
  EXPECT_TRUE(s.signalled);
  EXPECT_TRUE(s.solicited);
  ASSERT_EQ(s.sges.size(), 2u);
  EXPECT_EQ(s.sges[0].length, 100u);
  EXPECT_EQ(s.sges[0].lkey, 0x201u);
  EXPECT_EQ(s.sges[0].addr, 0x1000u);
  EXPECT_EQ(s.sges[1].addr, 0x2000u);
  EXPECT_FALSE(s.has_inline);
  EXPECT_EQ(s.length(), 128u);
  EXPECT_FALSE(s.ud.has_value());
}

TEST(SendWqe, CompletionAndEventFlags) {
  SendWqe s;
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend, kQpn, 0, 0x00).finish(), qp_st::kRc, s), WqeError::kNone);
  EXPECT_FALSE(s.signalled);
  EXPECT_FALSE(s.solicited);
  EXPECT_EQ(s.fence, 0);
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend, kQpn, 0, 0x04).finish(), qp_st::kRc, s), WqeError::kNone);
  EXPECT_FALSE(s.signalled);  // CE 1: only on the first error
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend, kQpn, 0, 0x0c | 0x20).finish(), qp_st::kRc, s), WqeError::kNone);
  EXPECT_TRUE(s.signalled);  // CE 3: CQE and EQE
  EXPECT_EQ(s.fence, 1);
}

TEST(SendWqe, ZeroLengthSendHasNoSegments) {
  SendWqe s;
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend).finish(), qp_st::kRc, s), WqeError::kNone);
  EXPECT_TRUE(s.sges.empty());
  EXPECT_EQ(s.length(), 0u);
}

TEST(SendWqe, ImmediateIsTheBigEndianValueInHostOrder) {
  SendWqe s;
  auto w = WqeBuilder(wqe_op::kSendImm).data(8, 0x201, 0x1000).finish();
  w[12] = 0x12, w[13] = 0x34, w[14] = 0x56, w[15] = 0x78;
  ASSERT_EQ(parse(w, qp_st::kRc, s), WqeError::kNone);
  EXPECT_EQ(s.imm, 0x12345678u);
}

TEST(SendWqe, SendWithInvalidateCarriesTheRkeyOnlyOnReliableServices) {
  const auto w = WqeBuilder(wqe_op::kSendInval, kQpn, 0, 0, 0x00abcd07).data(16, 0x201, 0x1000).finish();
  SendWqe s;
  ASSERT_EQ(parse(w, qp_st::kRc, s), WqeError::kNone);
  EXPECT_EQ(s.imm, 0x00abcd07u);
  EXPECT_EQ(parse(w, qp_st::kUc, s), WqeError::kBadOpcode);
}

TEST(SendWqe, RdmaWriteWithDataAndWriteImmWithInline) {
  SendWqe s;
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kRdmaWrite).raddr(0x7f0000001000, 0x5507).data(4096, 0x201, 0x3000).finish(),
                  qp_st::kRc, s),
            WqeError::kNone);
  EXPECT_EQ(s.remote_va, 0x7f0000001000u);
  EXPECT_EQ(s.rkey, 0x5507u);
  EXPECT_EQ(s.length(), 4096u);

  const auto payload = pattern(20);
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kRdmaWriteImm, kQpn, 0, 0, 77).raddr(0x2000, 0x601).inl(payload).finish(),
                  qp_st::kUc, s),
            WqeError::kNone);
  EXPECT_TRUE(s.has_inline);
  EXPECT_EQ(s.inline_data, payload);
  EXPECT_EQ(s.length(), 20u);
  EXPECT_EQ(s.imm, 77u);
  EXPECT_EQ(s.ds, 4);  // ctrl + raddr + 2 inline (4 + 20 bytes)
}

TEST(SendWqe, RdmaReadIsAScatterListWithoutInline) {
  SendWqe s;
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kRdmaRead).raddr(0x9000, 0x701).data(64, 0x201, 0x100).data(64, 0x201, 0x200).finish(),
                  qp_st::kRc, s),
            WqeError::kNone);
  EXPECT_EQ(s.remote_va, 0x9000u);
  EXPECT_EQ(s.sges.size(), 2u);
  EXPECT_EQ(s.length(), 128u);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kRdmaRead).raddr(0x9000, 0x701).inl(pattern(8)).finish(), qp_st::kRc, s),
            WqeError::kBadInline);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kRdmaRead).raddr(0x9000, 0x701).finish(), qp_st::kUc, s), WqeError::kBadOpcode);
}

TEST(SendWqe, AtomicsNeedAlignmentAndOneEightByteSge) {
  SendWqe s;
  for (uint8_t op : {wqe_op::kAtomicCs, wqe_op::kAtomicFa}) {
    SCOPED_TRACE(int(op));
    ASSERT_EQ(parse(WqeBuilder(op).raddr(0x8008, 0x701).atomic(5, 6).data(8, 0x201, 0x100).finish(), qp_st::kRc, s),
              WqeError::kNone);
    EXPECT_EQ(s.swap_add, 5u);
    EXPECT_EQ(s.compare, 6u);
    EXPECT_EQ(s.remote_va, 0x8008u);
    EXPECT_EQ(s.length(), 8u);
    EXPECT_EQ(s.ds, 4);
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8004, 0x701).atomic(5, 6).data(8, 0x201, 0x100).finish(), qp_st::kRc, s),
              WqeError::kMisalignedAtomic);
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8008, 0x701).atomic(5, 6).finish(), qp_st::kRc, s), WqeError::kBadAtomicSge);
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8008, 0x701).atomic(5, 6).data(16, 0x201, 0x100).finish(), qp_st::kRc, s),
              WqeError::kBadAtomicSge);
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8008, 0x701).atomic(5, 6).data(8, 0x201, 0x100).data(8, 0x201, 0x108).finish(),
                    qp_st::kRc, s),
              WqeError::kBadAtomicSge);
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8008, 0x701).atomic(5, 6).inl(pattern(8)).finish(), qp_st::kRc, s),
              WqeError::kBadAtomicSge);
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8008, 0x701).atomic(5, 6).data(8, 0x201, 0x100).finish(), qp_st::kUc, s),
              WqeError::kBadOpcode);
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8008, 0x701).finish(), qp_st::kRc, s), WqeError::kBadDs);  // no atomic seg
  }
}

TEST(SendWqe, UdSendCarriesTheAddressVector) {
  SendWqe s;
  const auto payload = pattern(30);
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend).datagram(0x11111111, 0xabcdef).inl(payload).finish(), qp_st::kUd, s),
            WqeError::kNone);
  ASSERT_TRUE(s.ud.has_value());
  const UdAddress& a = *s.ud;
  EXPECT_EQ(a.qkey, 0x11111111u);
  EXPECT_EQ(a.remote_qpn, 0xabcdefu);
  EXPECT_TRUE(a.extended);
  EXPECT_EQ(a.stat_rate_sl, 0x35);
  EXPECT_EQ(a.fl_mlid, 0x7);
  EXPECT_EQ(a.rlid, 0xc001);
  EXPECT_EQ(a.rmac, (std::array<uint8_t, 6>{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5}));
  EXPECT_EQ(a.tclass, 0x48);
  EXPECT_EQ(a.hop_limit, 64);
  EXPECT_TRUE(a.grh);
  EXPECT_EQ(a.sgid_index, 3);
  EXPECT_EQ(a.flow_label, 0xabcdeu);
  EXPECT_EQ(a.rgid[0], 0x10);
  EXPECT_EQ(a.rgid[15], 0x1f);
  EXPECT_EQ(s.inline_data, payload);
  EXPECT_EQ(s.ds, 1 + 3 + 3);
  EXPECT_EQ(s.wqebbs(), 2u);

  // QP1 (GSI) has the same layout; SEND_IMM too; WRITE/READ/atomics/SEND_INVAL are not UD operations.
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSendImm).datagram(0x80010000, 1).data(256, 0x201, 0x4000).finish(), qp_st::kQp1, s),
            WqeError::kNone);
  EXPECT_EQ(s.ud->remote_qpn, 1u);
  EXPECT_EQ(s.sges.size(), 1u);
  for (uint8_t op : {wqe_op::kRdmaWrite, wqe_op::kRdmaWriteImm, wqe_op::kRdmaRead, wqe_op::kAtomicCs, wqe_op::kSendInval})
    EXPECT_EQ(parse(WqeBuilder(op).datagram(1, 2).raddr(0, 0).finish(), qp_st::kUd, s), WqeError::kBadOpcode) << int(op);
  // A datagram segment that does not fit in ds.
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).data(1, 2, 3).finish(), qp_st::kUd, s), WqeError::kBadDs);
}

TEST(SendWqe, XrcSegmentNamesTheRemoteSrq) {
  SendWqe s;
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend).xrc(0x000321).data(8, 0x201, 0x100).finish(), qp_st::kXrc, s), WqeError::kNone);
  EXPECT_EQ(s.xrc_srqn, 0x321u);
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kRdmaRead).xrc(0x42).raddr(0x5000, 0x901).data(8, 0x201, 0x100).finish(),
                  qp_st::kXrc, s),
            WqeError::kNone);
  EXPECT_EQ(s.xrc_srqn, 0x42u);
  EXPECT_EQ(s.remote_va, 0x5000u);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).finish(), qp_st::kXrc, s), WqeError::kBadDs);
}

TEST(SendWqe, NopNeedsOnlyTheControlSegment) {
  SendWqe s;
  for (uint8_t st : {qp_st::kRc, qp_st::kUc, qp_st::kUd, qp_st::kXrc, qp_st::kQp1})
    EXPECT_EQ(parse(WqeBuilder(wqe_op::kNop, kQpn, 0, 0x08).finish(), st, s), WqeError::kNone) << int(st);
  EXPECT_TRUE(s.signalled);
  EXPECT_EQ(s.length(), 0u);
}

TEST(SendWqe, UnsupportedOpcodesAndServiceTypes) {
  SendWqe s;
  for (uint8_t op : {uint8_t(0x0e), wqe_op::kMaskedAtomicCs, wqe_op::kMaskedAtomicFa, wqe_op::kLocalInval,
                     uint8_t(0x19), uint8_t(0xff)})
    EXPECT_EQ(parse(WqeBuilder(op).raddr(0x8000, 1).atomic(0, 0).data(8, 0x201, 0).finish(), qp_st::kRc, s),
              WqeError::kBadOpcode)
        << int(op);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).finish(), qp_st::kRegUmr, s), WqeError::kBadOpcode);
  // UMR (memory window bind/invalidate): on connected QPs only; its segments are objects/umr.h's.
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kUmr).finish(), qp_st::kRc, s), WqeError::kNone);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kUmr).finish(), qp_st::kUd, s), WqeError::kBadOpcode);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).finish(), 0x7, s), WqeError::kBadOpcode);
}

TEST(SendWqe, BadDs) {
  SendWqe s;
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).finish(0), qp_st::kRc, s), WqeError::kBadDs);
  // ds says 5 segments but only one WQEBB was fetched.
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).finish(5), qp_st::kRc, s), WqeError::kBadDs);
  // Shorter than a control segment.
  EXPECT_EQ(parse_send_wqe(std::vector<uint8_t>(15, 0), qp_st::kRc, kQpn, s), WqeError::kBadDs);
  EXPECT_EQ(parse_send_wqe({}, qp_st::kRc, kQpn, s), WqeError::kBadDs);
  // WRITE without room for its remote address segment.
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kRdmaWrite).finish(), qp_st::kRc, s), WqeError::kBadDs);
  // The bytes past ds are never looked at (here they hold a data segment).
  const auto w = WqeBuilder(wqe_op::kSend).data(8, 0x201, 0x100).data(8, 0x201, 0x200).finish(2);
  ASSERT_EQ(parse(w, qp_st::kRc, s), WqeError::kNone);
  EXPECT_EQ(s.sges.size(), 1u);
}

TEST(SendWqe, QpnMismatch) {
  SendWqe s;
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend, kQpn + 1).finish(), qp_st::kRc, s), WqeError::kQpnMismatch);
  EXPECT_EQ(s.qpn, kQpn + 1);
}

TEST(SendWqe, InlineAcrossWqebbBoundaries) {
  SendWqe s;
  // 16 ctrl + 16 raddr + 4 + 150 bytes: the payload covers WQEBBs 0 to 2.
  const auto payload = pattern(150, 7);
  const auto w = WqeBuilder(wqe_op::kRdmaWrite).raddr(0x1000, 0x301).inl(payload).finish();
  ASSERT_EQ(w.size(), 192u);
  ASSERT_EQ(parse(w, qp_st::kRc, s), WqeError::kNone);
  EXPECT_EQ(s.inline_data, payload);
  EXPECT_EQ(s.ds, 2 + 10);
  EXPECT_EQ(s.wqebbs(), 3u);
}

TEST(SendWqe, InlineErrors) {
  SendWqe s;
  // Inline length overruns ds.
  auto w = WqeBuilder(wqe_op::kSend).inl(pattern(12)).finish();
  store_be32(&w[16], 0x80000000u | 13);
  EXPECT_EQ(parse(w, qp_st::kRc, s), WqeError::kBadInline);
  store_be32(&w[16], 0xffffffffu);
  EXPECT_EQ(parse(w, qp_st::kRc, s), WqeError::kBadInline);
  // Inline mixed with pointers, either order.
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).inl(pattern(4)).data(8, 0x201, 0).finish(), qp_st::kRc, s),
            WqeError::kBadInline);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).data(8, 0x201, 0).inl(pattern(4)).finish(), qp_st::kRc, s),
            WqeError::kBadInline);
}

TEST(SendWqe, SeveralInlineSegmentsConcatenateAndEmptyInlineIsAllowed) {
  SendWqe s;
  const auto a = pattern(5, 1), b = pattern(30, 2);
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend).inl(a).inl({}).inl(b).finish(), qp_st::kRc, s), WqeError::kNone);
  ASSERT_EQ(s.inline_data.size(), 35u);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), s.inline_data.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), s.inline_data.begin() + 5));
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend).inl({}).finish(), qp_st::kRc, s), WqeError::kNone);
  EXPECT_TRUE(s.has_inline);
  EXPECT_EQ(s.length(), 0u);
}

TEST(SendWqe, SgeLimits) {
  SendWqe s;
  WqeBuilder big(wqe_op::kSend);
  for (uint32_t i = 0; i < 62; ++i) big.data(1 + i, 0x201, 0x1000 * i);
  ASSERT_EQ(parse(big.finish(), qp_st::kRc, s), WqeError::kNone);
  EXPECT_EQ(s.ds, 63);
  EXPECT_EQ(s.wqebbs(), 16u);
  EXPECT_EQ(s.sges.size(), 62u);
  EXPECT_EQ(s.sges[61].addr, 0x1000u * 61);

  const auto three = WqeBuilder(wqe_op::kSend).data(1, 1, 0).data(1, 1, 0).data(1, 1, 0).finish();
  EXPECT_EQ(parse(three, qp_st::kRc, s, 3), WqeError::kNone);
  EXPECT_EQ(parse(three, qp_st::kRc, s, 2), WqeError::kTooManySges);
}

TEST(SendWqe, ByteCountZeroMeansTwoGigabytes) {
  SendWqe s;
  ASSERT_EQ(parse(WqeBuilder(wqe_op::kSend).data(0, 0x201, 0x1000).finish(), qp_st::kRc, s), WqeError::kNone);
  ASSERT_EQ(s.sges.size(), 1u);
  EXPECT_EQ(s.sges[0].length, 0x80000000u);
  EXPECT_EQ(s.length(), uint64_t(1) << 31);
  // Longer than a message may be.
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).data(0, 0x201, 0).data(1, 0x201, 0).finish(), qp_st::kRc, s),
            WqeError::kTooLong);
  EXPECT_EQ(parse(WqeBuilder(wqe_op::kSend).data(0x7fffffff, 0x201, 0).data(0x7fffffff, 0x201, 0).finish(), qp_st::kRc, s),
            WqeError::kTooLong);
}

TEST(SendWqe, PeekDs) {
  EXPECT_EQ(peek_ds(WqeBuilder(wqe_op::kSend).data(1, 1, 1).finish()), 2);
  auto w = WqeBuilder(wqe_op::kSend).finish(0xff);
  EXPECT_EQ(peek_ds(w), 0x3f);  // bits [7:6] of the byte are not ds
  EXPECT_EQ(peek_ds(std::span(w).first(15)), 0);
}

TEST(SendWqe, ErrorNames) {
  EXPECT_STREQ(wqe_error_name(WqeError::kNone), "none");
  EXPECT_STREQ(wqe_error_name(WqeError::kBadDs), "bad_ds");
  EXPECT_STREQ(wqe_error_name(WqeError::kBadOpcode), "bad_opcode");
  EXPECT_STREQ(wqe_error_name(WqeError::kBadInline), "bad_inline");
  EXPECT_STREQ(wqe_error_name(WqeError::kTooManySges), "too_many_sges");
  EXPECT_STREQ(wqe_error_name(WqeError::kMisalignedAtomic), "misaligned_atomic");
  EXPECT_STREQ(wqe_error_name(WqeError::kBadAtomicSge), "bad_atomic_sge");
  EXPECT_STREQ(wqe_error_name(WqeError::kQpnMismatch), "qpn_mismatch");
  EXPECT_STREQ(wqe_error_name(WqeError::kTooLong), "too_long");
  EXPECT_STREQ(wqe_error_name(WqeError(200)), "unknown");
}

}  // namespace
}  // namespace hcaemu::model::test
