// Signature MKEYs (issue 16): mlx5dv_create_mkey with BLOCK_SIGNATURE makes a KLM key with room for
// a BSF, and mlx5dv_wr_mkey_configure + set_mkey_sig_block load its layout and BSF by one UMR WQE.
// A send through the key inserts the wire domain's PI after each block, or checks and strips the
// memory domain's; a receive checks and strips the wire's, or writes the memory's. Each case is
// checked in the receiver's memory and both sides' CQs.
#include <systemc>

#include "model/objects/block_signature.h"
#include "model/objects/umr.h"
#include "model/prm/qpc_fields.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeRespSend = 0x2, kCqeSigErr = 0xc, kCqeReqErr = 0xd;

std::span<const uint8_t> bytes_of(const char* s) { return {reinterpret_cast<const uint8_t*>(s), strlen(s)}; }

TEST(BlockSignatureChecksums, MatchTheirCatalogueCheckValues) {
  EXPECT_EQ(crc16_t10dif(0, bytes_of("123456789")), 0xd0db);
  EXPECT_EQ(crc32_block(0xffffffffu, bytes_of("123456789"), false), 0xcbf43926u);
  EXPECT_EQ(crc32_block(0xffffffffu, bytes_of("123456789"), true), 0xe3069283u);
}

// The BSFs libmlx5 writes (mlx5_umr_fill_sig_bsf).
std::array<uint8_t, 64> t10dif_wire_bsf(uint16_t app, uint32_t ref, uint8_t check_mask) {
  std::array<uint8_t, 64> b{};
  b[0] = 0x80;
  b[1] = check_mask;
  b[2] = 1;  // 512-byte blocks
  store_be32(&b[4], 0xffffffffu);
  store_be32(&b[8], 7);  // the wire PSV
  uint8_t* inl = &b[32];
  store_be16(inl, 0xc000);
  store_be16(inl + 2, app);
  store_be32(inl + 4, ref);
  inl[8] = 1;     // CRC guard
  inl[9] = 0x88;  // repeat, seed 0xffff
  inl[13] = 0x40 | 0x02;  // increment the reference tag; application and reference escape
  store_be16(inl + 14, 0xffff);
  return b;
}
std::array<uint8_t, 64> crc32_bsf(bool memory, uint8_t check_mask) {
  std::array<uint8_t, 64> b{};
  b[0] = 0x80;
  b[1] = check_mask;
  b[memory ? 3 : 2] = 1;
  store_be32(&b[4], 0xffffffffu);
  store_be32(&b[memory ? 12 : 8], 0x22000000u | 9);  // CRC32, seed all ones, PSV 9
  return b;
}

TEST(BlockSignatureBsf, ParsesTheDomainsLibmlx5Writes) {
  BlockSignature s;
  ASSERT_EQ(parse_bsf(t10dif_wire_bsf(0xabcd, 0x01234567, 0xff), s), BsfError::kNone);
  EXPECT_EQ(s.wire.type, SigType::kT10DifCrc);
  EXPECT_EQ(s.wire.block_size, 512u);
  EXPECT_TRUE(s.wire.seed_ones && s.wire.inc_ref_tag && s.wire.app_ref_escape);
  EXPECT_EQ(s.wire.app_tag, 0xabcd);
  EXPECT_EQ(s.wire.ref_tag, 0x01234567u);
  EXPECT_FALSE(s.memory.has_pi());
  ASSERT_EQ(parse_bsf(crc32_bsf(true, 0xf0), s), BsfError::kNone);
  EXPECT_EQ(s.memory.type, SigType::kCrc32);
  EXPECT_EQ(s.memory.pi_size(), 4u);
  auto both = crc32_bsf(true, 0xf0);
  store_be32(&both[8], 0x22000000u);
  both[2] = 1;
  EXPECT_EQ(parse_bsf(both, s), BsfError::kBothDomains) << "a signature in both domains is not offered";
  auto crc64 = crc32_bsf(false, 0xff);
  crc64[8] = 0x52;
  EXPECT_EQ(parse_bsf(crc64, s), BsfError::kType);
  auto odd = crc32_bsf(false, 0xf0);
  odd[2] = 5;
  EXPECT_EQ(parse_bsf(odd, s), BsfError::kBlockSize);
}

TEST(BlockSignaturePi, AT10DifCheckNamesTheFieldThatDiffersAndHonoursTheEscape) {
  BlockSignature s;
  ASSERT_EQ(parse_bsf(t10dif_wire_bsf(0xabcd, 100, 0xff), s), BsfError::kNone);
  std::vector<uint8_t> data(512, 0x5a);
  std::array<uint8_t, 8> pi{};
  compute_pi(s.wire, data, 3, pi);
  EXPECT_EQ(load_be16(&pi[0]), crc16_t10dif(0xffff, data));
  EXPECT_EQ(load_be32(&pi[4]), 103u) << "block 3's reference tag";
  EXPECT_FALSE(check_pi(s.wire, 0xff, data, 3, pi));
  auto bad = pi;
  bad[5] ^= 1;
  EXPECT_EQ(check_pi(s.wire, 0xff, data, 3, bad)->syndrome, sig_syndrome::kRefTag);
  EXPECT_FALSE(check_pi(s.wire, 0xf0, data, 3, bad)) << "the reference tag not checked";
  bad = pi;
  bad[0] ^= 1;
  EXPECT_EQ(check_pi(s.wire, 0xff, data, 3, bad)->syndrome, sig_syndrome::kGuard);
  std::array<uint8_t, 8> escaped{0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_FALSE(check_pi(s.wire, 0xff, data, 3, escaped)) << "application and reference escape";
}

struct SignatureKeyTest : ConnectedPairTest<8192> {
  // mlx5dv_create_mkey (INDIRECT | BLOCK_SIGNATURE, max_entries 3): KLM, free, umr_en, bsf_en,
  // room for 4 translation octowords and a 64-byte BSF.
  static uint32_t create_signature_key(RdmaNode& n) {
    std::vector<uint8_t> in(0x110);
    store_be32(&in[0x10], (1u << 30) | access_bits::kUmrEn | access_bits::kLocalRead | (2u << 8));
    store_be32(&in[0x14], 0xffffff00u);
    store_be32(&in[0x1c], (1u << 30) | n.pd);
    store_be32(&in[0x10 + 0x20], 4);
    store_be32(&in[0x10 + 0x34], 4);
    EXPECT_EQ(n.run(0x200, in, 0x10), 0);
    return load_be32(&n.out[0x08]) << 8;
  }
  // The configuring UMR: one KLM of `bytes` at `mr`, the BSF enabled (or not: a signature key
  // configured without one), the sig err count parity `parity`.
  static uint8_t configure(RdmaNode& n, Qp& qp, uint32_t key, const Mr& mr, uint32_t bytes,
                           const std::array<uint8_t, 64>* bsf, uint8_t parity = 1) {
    std::vector<uint8_t> w(128 + 64 + (bsf ? 64 : 0), 0);
    store_be32(&w[0], ((qp.sq_pi & 0xffff) << 8) | umr::kOpcode);
    store_be32(&w[4], (qp.qpn << 8) | uint32_t(w.size() / 16));
    w[11] = 0x08;
    store_be32(&w[12], key);
    w[16] = umr::kFlagInline;
    store_be16(&w[20], 4);
    store_be16(&w[22], bsf ? 4 : 0);
    store_be64(&w[24], umr::kMaskFree | umr::kMaskKey | umr::kMaskLen | umr::kMaskLocalWrite | umr::kMaskRemoteRead |
                           umr::kMaskRemoteWrite | umr::kMaskAtomic | umr::kMaskSigErr | umr::kMaskBsfEnable);
    store_be32(&w[64], access_bits::kLocalWrite);
    store_be32(&w[68], 0xffffff00u | (key & 0xff));
    store_be32(&w[76], (bsf ? 1u << 30 : 0) | uint32_t(parity) << 26);
    store_be64(&w[64 + 0x18], bytes);
    store_be32(&w[128], bytes);
    store_be32(&w[132], mr.key);
    store_be64(&w[136], mr.va(0));
    if (bsf) std::copy(bsf->begin(), bsf->end(), w.begin() + 192);
    n.put_wqe(qp, w);
    EXPECT_TRUE(n.ring(qp));
    const auto done = n.drain(*qp.scq);
    EXPECT_EQ(done.size(), 1u);
    return done.empty() ? 0xff : done[0].opcode;
  }
  // B's signature key over a fresh MR (`landing`) of `bytes`, configured with `bsf`.
  uint32_t receiving_key(Mr& landing, uint32_t bytes, const std::array<uint8_t, 64>& bsf) {
    landing = b.reg_mr(bytes, access_bits::kAll);
    const uint32_t key = create_signature_key(b);
    EXPECT_EQ(configure(b, *c.b, key, landing, bytes, &bsf), kCqeReq);
    return key;
  }
  // A SEND of `bytes` through `key` at A into a receive of `recv_bytes` through `recv_key` at B; a
  // signature key is zero-based, a plain MR (src, dst) starts at its iova.
  std::pair<std::vector<Cqe>, std::vector<Cqe>> send(uint32_t key, uint32_t bytes, uint32_t recv_key,
                                                     uint32_t recv_bytes) {
    const uint64_t at = key == src.key ? src.va(0) : 0, recv_at = recv_key == dst.key ? dst.va(0) : 0;
    b.post_recv(*c.b, {{recv_at, recv_bytes, recv_key}});
    a.post_send(*c.a, {.opcode = wqe_op::kSend, .sges = {{at, bytes, key}}});
    p.pump();
    return {a.drain(*c.a->scq), b.drain(*c.b->rcq)};
  }
};

TEST_F(SignatureKeyTest, ASendThroughAWireT10DifKeyCarriesEachBlocksPiAndAWireKeyStripsIt) {
  a.put(src, 0, pattern(1024, 3));
  const uint32_t ka = create_signature_key(a), kb = create_signature_key(b);
  const auto bsf = t10dif_wire_bsf(0xabcd, 0x01234567, 0xff);
  ASSERT_EQ(configure(a, *c.a, ka, src, 1024, &bsf), kCqeReq);
  // Into a plain MR first: the wire bytes themselves.
  auto [sent, got] = send(ka, 1024, dst.key, 2048);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_cnt, 1040u) << "two blocks, two 8-byte PIs";
  const auto data = a.get(src, 0, 1024);
  EXPECT_EQ(b.get(dst, 0, 512), std::vector<uint8_t>(data.begin(), data.begin() + 512));
  const auto pi0 = b.get(dst, 512, 8), pi1 = b.get(dst, 1032, 8);
  EXPECT_EQ(load_be16(pi0.data()), crc16_t10dif(0xffff, std::span(data).first(512)));
  EXPECT_EQ(load_be16(&pi0[2]), 0xabcd);
  EXPECT_EQ(load_be32(&pi0[4]), 0x01234567u);
  EXPECT_EQ(load_be32(&pi1[4]), 0x01234568u) << "the reference tag counts blocks";
  EXPECT_EQ(b.get(dst, 520, 512), std::vector<uint8_t>(data.begin() + 512, data.end()));
  // Then into B's wire-T10DIF key: checked, stripped, the data alone in B's memory.
  Mr landing = b.reg_mr(1024, access_bits::kAll);
  ASSERT_EQ(configure(b, *c.b, kb, landing, 1024, &bsf), kCqeReq);
  auto [sent2, got2] = send(ka, 1024, kb, 1024);
  ASSERT_EQ(got2.size(), 1u);
  EXPECT_EQ(got2[0].opcode, kCqeRespSend) << "a 1024-byte receive takes the 1040 wire bytes";
  EXPECT_EQ(b.get(landing, 0, 1024), data);
  EXPECT_EQ(b.engine.counters().signature_errors, 0u);
}

TEST_F(SignatureKeyTest, AMemoryCrcThatDoesNotHoldIsReportedOnceBeforeTheSendCompletesAndTheDataStillGoes) {
  a.put(src, 0, std::vector<uint8_t>(516, 'c'));  // 512 bytes of data, a CRC that is not theirs
  const uint32_t ka = create_signature_key(a);
  const auto bsf = crc32_bsf(true, 0xf0);
  ASSERT_EQ(configure(a, *c.a, ka, src, 516, &bsf), kCqeReq);
  auto [sent, got] = send(ka, 512, dst.key, 512);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].opcode, kCqeSigErr) << "the SIGERR CQE first";
  EXPECT_EQ(sent[1].opcode, kCqeReq) << "the SEND itself succeeds";
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_cnt, 512u) << "the CRC stripped";
  EXPECT_EQ(b.get(dst, 0, 512), std::vector<uint8_t>(512, 'c'));
  auto [again, got_again] = send(ka, 512, dst.key, 512);
  ASSERT_EQ(again.size(), 1u) << "reported once until the key is configured again";
  ASSERT_EQ(configure(a, *c.a, ka, src, 516, &bsf, 0), kCqeReq);  // the next parity arms it
  auto [third, got_third] = send(ka, 512, dst.key, 512);
  ASSERT_EQ(third.size(), 2u);
  EXPECT_EQ(third[0].opcode, kCqeSigErr);
  // A right CRC passes unreported.
  std::array<uint8_t, 4> crc{};
  store_be32(crc.data(), crc32_block(0xffffffffu, a.get(src, 0, 512), false));
  a.put(src, 512, crc);
  ASSERT_EQ(configure(a, *c.a, ka, src, 516, &bsf, 1), kCqeReq);
  auto [fine, got_fine] = send(ka, 512, dst.key, 512);
  ASSERT_EQ(fine.size(), 1u);
  EXPECT_EQ(fine[0].opcode, kCqeReq);
}

TEST_F(SignatureKeyTest, AReceiveThroughAMemoryCrcKeyWritesTheCrcAfterEachBlock) {
  a.put(src, 0, pattern(1024, 9));
  Mr landing;
  const uint32_t kb = receiving_key(landing, 1032, crc32_bsf(true, 0xf0));
  auto [sent, got] = send(src.key, 1024, kb, 1024);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, kCqeRespSend);
  const auto data = a.get(src, 0, 1024);
  EXPECT_EQ(b.get(landing, 0, 512), std::vector<uint8_t>(data.begin(), data.begin() + 512));
  EXPECT_EQ(load_be32(b.get(landing, 512, 4).data()), crc32_block(0xffffffffu, std::span(data).first(512), false));
  EXPECT_EQ(b.get(landing, 516, 512), std::vector<uint8_t>(data.begin() + 512, data.end()));
  EXPECT_EQ(load_be32(b.get(landing, 1028, 4).data()), crc32_block(0xffffffffu, std::span(data).last(512), false));
}

TEST_F(SignatureKeyTest, AWireCrcThatDoesNotHoldIsReportedOnTheReceiveCq) {
  auto wire = pattern(516, 5);  // a block and a CRC that is not its
  a.put(src, 0, wire);
  Mr landing;
  const uint32_t kb = receiving_key(landing, 512, crc32_bsf(false, 0xf0));
  auto [sent, got] = send(src.key, 516, kb, 512);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].opcode, kCqeSigErr);
  EXPECT_EQ(got[1].opcode, kCqeRespSend);
  EXPECT_EQ(b.get(landing, 0, 512), std::vector<uint8_t>(wire.begin(), wire.begin() + 512)) << "stripped";
}

TEST_F(SignatureKeyTest, AnSgeThatDoesNotStartOnABlockIsRefused) {
  const uint32_t ka = create_signature_key(a);
  const auto bsf = crc32_bsf(false, 0xf0);
  ASSERT_EQ(configure(a, *c.a, ka, src, 1024, &bsf), kCqeReq);
  a.post_send(*c.a, {.opcode = wqe_op::kSend, .sges = {{8, 64, ka}}});
  p.pump();
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty()) << "nothing sent";
}

TEST_F(SignatureKeyTest, AnSgePastTheKeysDataIsRefused) {
  const uint32_t ka = create_signature_key(a);
  const auto bsf = crc32_bsf(true, 0xf0);
  ASSERT_EQ(configure(a, *c.a, ka, src, 516, &bsf), kCqeReq);  // 512 data bytes and their CRC
  a.post_send(*c.a, {.opcode = wqe_op::kSend, .sges = {{0, 516, ka}}});
  p.pump();
  const auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr) << "516 stream bytes where the key holds 512";
}

TEST_F(SignatureKeyTest, RemoteAccessThroughASignatureKeyIsRefused) {
  const uint32_t ka = create_signature_key(a), kb = create_signature_key(b);
  const auto bsf = crc32_bsf(false, 0xf0);
  ASSERT_EQ(configure(a, *c.a, ka, src, 1024, &bsf), kCqeReq);
  ASSERT_EQ(configure(b, *c.b, kb, dst, 1024, &bsf), kCqeReq);
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), 64, src.key}}, .remote_va = 0, .rkey = kb});
  p.pump();
  auto done = a.drain(*c.a->scq);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].opcode, kCqeReqErr) << "a WRITE through a signature key is not modelled";
}

// Signature pipelining (qpc.drain_sigerr): after a reported error the next fenced WQE does not run;
// the SQ drains there (SQD, QUERY_QP names the WQE) until SQD_RTS_QP, after which it runs as read
// again from the SQ.
TEST_F(SignatureKeyTest, AFencedWqeAfterASignatureErrorDrainsTheSqUntilSqdToRts) {
  a.put(src, 0, std::vector<uint8_t>(516, 'c'));
  const uint32_t ka = create_signature_key(a);
  const auto bsf = crc32_bsf(true, 0xf0);
  ASSERT_EQ(configure(a, *c.a, ka, src, 516, &bsf), kCqeReq);
  set(a.f.resources.qps.find(c.a->qpn)->context, qpc::kDrainSigerr, 1);  // as INIT2INIT with opt bit 11 sets it
  Mr reply = a.reg_mr(64);
  a.put(reply, 0, pattern(16, 4));
  b.post_recv(*c.b, {{dst.va(1024), 64, dst.key}});
  a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{0, 512, ka}}, .remote_va = dst.va(0), .rkey = dst.key,
                     .signalled = false, .fence = 1});
  const uint16_t fenced = c.a->sq_pi & 0xffff;
  a.post_send(*c.a, {.opcode = wqe_op::kSend, .sges = {{reply.va(0), 16, reply.key}}, .fence = 4});
  p.pump();
  auto sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeSigErr);
  EXPECT_TRUE(b.drain(*c.b->rcq).empty()) << "the fenced SEND did not run";
  EXPECT_EQ(b.get(dst, 0, 512), std::vector<uint8_t>(512, 'c')) << "the WRITE before it did";
  std::vector<uint8_t> query(0x10);
  store_be32(&query[8], c.a->qpn);
  ASSERT_EQ(a.run(0x50b, query, 0x100), 0);
  EXPECT_EQ(a.out[0x18] >> 4, 5) << "SQ drained";
  EXPECT_EQ(load_be16(&a.out[0x18 + 0xb4]), fenced) << "where it stopped";
  std::vector<uint8_t> resume(0x100);
  store_be32(&resume[8], c.a->qpn);
  ASSERT_EQ(a.run(0x50c, resume), 0);
  p.pump();
  sent = a.drain(*c.a->scq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, kCqeReq);
  const auto got = b.drain(*c.b->rcq);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(b.get(dst, 1024, 16), pattern(16, 4));
  EXPECT_EQ(a.run(0x50c, resume), 0x10) << "SQD_RTS_QP from RTS: bad QP state";
}

TEST_F(SignatureKeyTest, ASetPsvCompletesForAPsvOfTheQpsPdOnly) {
  std::vector<uint8_t> in(0x10);
  store_be32(&in[8], (1u << 28) | a.pd);
  ASSERT_EQ(a.run(0x600, in, 0x20), 0);
  const uint32_t psv = load_be32(&a.out[0x10]) & 0xffffff;
  ASSERT_NE(psv, 0u);
  auto set_psv = [&](uint32_t index) {
    std::vector<uint8_t> w(64, 0);
    store_be32(&w[0], ((c.a->sq_pi & 0xffff) << 8) | wqe_op::kSetPsv);
    store_be32(&w[4], (c.a->qpn << 8) | 2);
    w[11] = 0x08;
    store_be32(&w[16], index);
    store_be64(&w[24], 0xffffffff00000000ull);
    a.put_wqe(*c.a, w);
    EXPECT_TRUE(a.ring(*c.a));
    const auto done = a.drain(*c.a->scq);
    return done.empty() ? uint8_t(0xff) : done[0].opcode;
  };
  EXPECT_EQ(set_psv(psv), kCqeReq);
  EXPECT_EQ(a.f.resources.psvs.find(psv)->transient_signature, 0xffffffff00000000ull);
  EXPECT_EQ(set_psv(psv + 1), kCqeReqErr) << "no such PSV";
  std::vector<uint8_t> destroy(0x10);
  store_be32(&destroy[8], psv);
  EXPECT_EQ(a.run(0x601, destroy), 0);
  EXPECT_EQ(a.run(0x601, destroy), 0x05) << "destroyed";
}

}  // namespace
}  // namespace hcaemu::model::test

int sc_main(int, char**) { return 0; }
