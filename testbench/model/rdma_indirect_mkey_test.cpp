// Indirect MKEYs (issue 16): mlx5dv_create_mkey makes a free KLM MKEY with umr_en, and
// mlx5dv_wr_mkey_configure lays it out with a UMR WQE on the user's QP: a list of pieces of MRs
// (set_mkey_layout_list) or pieces repeated with a stride (set_mkey_layout_interleaved). A peer's
// RDMA through the key's rkey lands piece by piece; each case is checked on the responder's memory.
#include <systemc>

#include "model/objects/umr.h"
#include "testbench/model/rdma_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {
namespace {

constexpr uint8_t kCqeReq = 0x0, kCqeReqErr = 0xd;
constexpr uint8_t kSynMwBind = 0x06;

struct Piece {
  uint32_t key = 0;
  uint64_t va = 0;
  uint32_t bytes = 0;
  uint32_t skip = 0;  // interleaved: bytes between repeats
};

// The WQE libmlx5 builds for mlx5dv_wr_mkey_configure + set_mkey_access_flags + set_mkey_layout:
// ctrl (imm: the key), UMR ctrl (inline, octowords, mask FREE|KEY|LEN|access), MKEY segment (no
// start address: the key is zero-based), the inline layout padded to 64 bytes.
std::vector<uint8_t> configure_wqe(const Qp& qp, uint32_t key, const std::vector<Piece>& pieces, uint32_t repeats) {
  std::vector<uint8_t> layout;
  auto put32 = [&](uint32_t v) { layout.resize(layout.size() + 4); store_be32(&layout[layout.size() - 4], v); };
  auto put64 = [&](uint64_t v) { layout.resize(layout.size() + 8); store_be64(&layout[layout.size() - 8], v); };
  uint64_t length = 0;
  if (repeats == 0) {
    for (const Piece& p : pieces) {
      put32(p.bytes);
      put32(p.key);
      put64(p.va);
      length += p.bytes;
    }
  } else {
    uint32_t block = 0;
    for (const Piece& p : pieces) block += p.bytes;
    put32(block);
    put32(0x400);
    put32(repeats);
    put32(uint32_t(pieces.size()));
    for (const Piece& p : pieces) {
      put32(((p.bytes + p.skip) << 16) | p.bytes);
      put32(p.key);
      put64(p.va);
    }
    length = uint64_t(block) * repeats;
  }
  const size_t xlat = layout.size();
  layout.resize((layout.size() + 63) / 64 * 64, 0);
  std::vector<uint8_t> w(128 + layout.size(), 0);
  store_be32(&w[0], ((qp.sq_pi & 0xffff) << 8) | umr::kOpcode);
  store_be32(&w[4], (qp.qpn << 8) | uint32_t(w.size() / 16));
  w[11] = 0x08;
  store_be32(&w[12], key);
  w[16] = umr::kFlagInline;
  store_be16(&w[20], uint16_t((xlat + 63) / 64 * 64 / 16));
  store_be64(&w[24], umr::kMaskFree | umr::kMaskKey | umr::kMaskLen | umr::kMaskLocalWrite | umr::kMaskRemoteRead |
                         umr::kMaskRemoteWrite | umr::kMaskAtomic);
  store_be32(&w[64], access_bits::kLocalWrite | access_bits::kRemoteRead | access_bits::kRemoteWrite);
  store_be32(&w[68], 0xffffff00u | (key & 0xff));
  store_be64(&w[64 + 0x18], length);
  std::copy(layout.begin(), layout.end(), w.begin() + 128);
  return w;
}

struct IndirectMkeyTest : ConnectedPairTest<> {
  IndirectMkeyTest() { a.put(src, 0, pattern(4096, 7)); }

  // mlx5dv_create_mkey (INDIRECT, max_entries 4): KLM, free, umr_en, lr, qpn 0xffffff, room for 4.
  uint32_t create_indirect_mkey() {
    std::vector<uint8_t> in(0x110);
    store_be32(&in[0x10], (1u << 30) | access_bits::kUmrEn | access_bits::kLocalRead | (2u << 8));
    store_be32(&in[0x14], 0xffffff00u);
    store_be32(&in[0x1c], b.pd);
    store_be32(&in[0x10 + 0x34], 4);
    EXPECT_EQ(b.run(0x200, in, 0x10), 0);
    return load_be32(&b.out[0x08]) << 8;
  }
  uint8_t configure(uint32_t key, const std::vector<Piece>& pieces, uint32_t repeats = 0) {
    b.put_wqe(*c.b, configure_wqe(*c.b, key, pieces, repeats));
    EXPECT_TRUE(b.ring(*c.b));
    const auto done = b.drain(*c.b->scq);
    EXPECT_EQ(done.size(), 1u);
    return done.empty() ? 0xff : done[0].opcode;
  }
  uint8_t write(uint64_t va, uint32_t rkey, uint32_t bytes) {
    a.post_send(*c.a, {.opcode = wqe_op::kRdmaWrite, .sges = {{src.va(0), bytes, src.key}}, .remote_va = va, .rkey = rkey});
    p.pump();
    const auto done = a.drain(*c.a->scq);
    EXPECT_EQ(done.size(), 1u);
    return done.empty() ? 0xff : done[0].opcode;
  }
};

TEST_F(IndirectMkeyTest, AListKeyScattersAWriteOverItsPieces) {
  const uint32_t key = create_indirect_mkey();
  ASSERT_EQ(configure(key, {{dst.key, dst.va(2048), 100}, {dst.key, dst.va(512), 156}}), kCqeReq);
  ASSERT_EQ(write(0, key, 256), kCqeReq) << "zero-based: byte 0 of the key";
  EXPECT_EQ(b.get(dst, 2048, 100), a.get(src, 0, 100));
  EXPECT_EQ(b.get(dst, 512, 156), a.get(src, 100, 156));
  EXPECT_EQ(b.get(dst, 0, 512), std::vector<uint8_t>(512, 0)) << "nothing elsewhere";
  EXPECT_EQ(write(200, key, 64), kCqeReqErr) << "past the key's 256 bytes";
}

TEST_F(IndirectMkeyTest, AnInterleavedKeyRepeatsItsPiecesWithTheirStride) {
  const uint32_t key = create_indirect_mkey();
  // Repeat: 16 bytes at 0 (then skip 16), 8 bytes at 1024 (then skip 24); three times: 72 bytes.
  ASSERT_EQ(configure(key, {{dst.key, dst.va(0), 16, 16}, {dst.key, dst.va(1024), 8, 24}}, 3), kCqeReq);
  ASSERT_EQ(write(0, key, 72), kCqeReq);
  const auto sent = a.get(src, 0, 72);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(b.get(dst, r * 32, 16), std::vector<uint8_t>(sent.begin() + r * 24, sent.begin() + r * 24 + 16)) << r;
    EXPECT_EQ(b.get(dst, 1024 + r * 32, 8), std::vector<uint8_t>(sent.begin() + r * 24 + 16, sent.begin() + r * 24 + 24));
    EXPECT_EQ(b.get(dst, r * 32 + 16, 16), std::vector<uint8_t>(16, 0)) << "the skipped bytes stay";
  }
}

TEST_F(IndirectMkeyTest, ALayoutOnAMissingKeyOrPastAnMrIsABindError) {
  const uint32_t key = create_indirect_mkey();
  EXPECT_EQ(configure(key, {{dst.key + 0x100, dst.va(0), 64}}), kCqeReqErr) << "no such MR";
  EXPECT_TRUE(b.f.resources.mkeys.find(key >> 8)->free) << "the key stays free";
  c = p.connect();
  EXPECT_EQ(configure(key, {{dst.key, dst.va(4096 - 32), 64}}), kCqeReqErr) << "past the MR";
  c = p.connect();
  EXPECT_EQ(configure(key, {{dst.key, dst.va(0), 16}, {dst.key, dst.va(0), 16}, {dst.key, dst.va(0), 16},
                            {dst.key, dst.va(0), 16}, {dst.key, dst.va(0), 16}}),
            kCqeReqErr)
      << "more entries than the key has room for";
  (void)kSynMwBind;
}

}  // namespace
}  // namespace hcaemu::model::test

int sc_main(int, char**) { return 0; }
