// MKEY checks and translation (objects/memory_protection.cpp): key lookup, free state, PD, each access
// flag, bounds at the first and last byte, PA and MTT modes with page crossings, overflow, and
// the chunk copies through a simulated host memory.
#include "model/objects/memory_protection.h"
#include "model/objects/device_memory.h"

#include <gtest/gtest.h>

#include "testbench/host/sim_host_memory.h"

namespace hcaemu::model::test {
namespace {

constexpr uint32_t kPd = 5;
constexpr uint64_t kPage = 4096;

struct Keys {
  Resources r;

  uint32_t add(Mkey m) {
    if (m.variant == 0) m.variant = 0x3c;
    const uint8_t variant = m.variant;
    return (r.mkeys.insert(std::move(m)) << 8) | variant;
  }
  static Mkey pa(uint64_t start, uint64_t length) {
    Mkey m;
    m.pd = kPd;
    m.access_mode = Mkey::kAccessPa;
    m.local_read = m.local_write = m.remote_read = m.remote_write = m.atomic = true;
    m.start = start;
    m.length = length;
    return m;
  }
  // MTT key over [start, start + length) with the given page addresses.
  static Mkey mtt(uint64_t start, uint64_t length, std::vector<uint64_t> pages, uint32_t log_page_size = 12) {
    Mkey m = pa(start, length);
    m.access_mode = Mkey::kAccessMtt;
    m.log_page_size = log_page_size;
    m.mtt = std::move(pages);
    return m;
  }
};

ProtectionError tr(const Resources& r, uint32_t key, uint64_t va, uint64_t length, std::vector<DmaChunk>& out,
                   uint8_t access = access::kLocalRead, uint32_t pd = kPd) {
  return translate(r, key, pd, va, length, access, out);
}

bool same(const std::vector<DmaChunk>& a, const std::vector<DmaChunk>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].address != b[i].address || a[i].length != b[i].length) return false;
  return true;
}

TEST(MemoryProtection, PaModeTakesTheAddressAsItIs) {
  Keys k;
  const uint32_t key = k.add(Keys::pa(0x10000, 0x3000));
  std::vector<DmaChunk> out;
  ASSERT_EQ(tr(k.r, key, 0x10100, 0x2000, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x10100, 0x2000}}));
}

TEST(MemoryProtection, BadKeys) {
  Keys k;
  const uint32_t key = k.add(Keys::pa(0, 0x1000));
  std::vector<DmaChunk> out;
  EXPECT_EQ(tr(k.r, key ^ 0x01, 0, 8, out), ProtectionError::kBadKey);        // variant differs
  EXPECT_EQ(tr(k.r, key + 0x100, 0, 8, out), ProtectionError::kBadKey);       // no such index
  EXPECT_EQ(tr(k.r, 0x100, 0, 8, out), ProtectionError::kBadKey);             // MLX5_INVALID_LKEY
  EXPECT_EQ(tr(k.r, 0, 0, 8, out), ProtectionError::kBadKey);
  EXPECT_EQ(tr(k.r, key ^ 0x01, 0, 0, out), ProtectionError::kBadKey);        // length 0 still checks the key
  EXPECT_TRUE(out.empty());

  // A key handed out by another function's table does not exist in this one.
  Keys other;
  const uint32_t foreign = other.add(Keys::pa(0, 0x1000));
  other.add(Keys::pa(0, 0x1000));
  const uint32_t foreign2 = other.add(Keys::pa(0, 0x1000));
  EXPECT_EQ(tr(other.r, foreign2, 0, 8, out), ProtectionError::kNone);
  EXPECT_EQ(tr(k.r, foreign2, 0, 8, out), ProtectionError::kBadKey);
  (void)foreign;
}

TEST(MemoryProtection, FreeKeyAndPdMismatch) {
  Keys k;
  Mkey free_key = Keys::pa(0, 0x1000);
  free_key.free = true;
  const uint32_t f = k.add(free_key);
  const uint32_t key = k.add(Keys::pa(0, 0x1000));
  std::vector<DmaChunk> out;
  EXPECT_EQ(tr(k.r, f, 0, 8, out), ProtectionError::kFreeKey);
  EXPECT_EQ(tr(k.r, key, 0, 8, out, access::kLocalRead, kPd + 1), ProtectionError::kPdMismatch);
  EXPECT_EQ(tr(k.r, key, 0, 0, out, access::kLocalRead, kPd + 1), ProtectionError::kPdMismatch);
  EXPECT_TRUE(out.empty());
}

TEST(MemoryProtection, EachAccessFlag) {
  struct Case {
    uint8_t access;
    bool Mkey::*flag;
  };
  const Case cases[] = {{access::kLocalWrite, &Mkey::local_write},
                        {access::kRemoteRead, &Mkey::remote_read},
                        {access::kRemoteWrite, &Mkey::remote_write},
                        {access::kAtomic, &Mkey::atomic}};
  for (const Case& c : cases) {
    SCOPED_TRACE(int(c.access));
    Keys k;
    Mkey without = Keys::pa(0, 0x1000);
    without.*c.flag = false;
    Mkey only = Keys::pa(0, 0x1000);
    only.local_read = only.local_write = only.remote_read = only.remote_write = only.atomic = false;
    only.*c.flag = true;
    const uint32_t a = k.add(without), b = k.add(only);
    std::vector<DmaChunk> out;
    EXPECT_EQ(tr(k.r, a, 0, 8, out, c.access), ProtectionError::kAccess);
    EXPECT_EQ(tr(k.r, a, 0, 8, out, c.access | access::kLocalRead), ProtectionError::kAccess);
    EXPECT_EQ(tr(k.r, a, 0, 0, out, c.access), ProtectionError::kAccess);
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(tr(k.r, b, 0, 8, out, c.access), ProtectionError::kNone);
    EXPECT_EQ(tr(k.r, b, 0, 8, out, c.access | access::kLocalRead), ProtectionError::kNone);  // lr always granted
    EXPECT_EQ(tr(k.r, a, 0, 8, out, access::kLocalRead), ProtectionError::kNone);
  }
  // Several flags at once: all of them must be granted.
  Keys k;
  Mkey rw = Keys::pa(0, 0x1000);
  rw.atomic = false;
  const uint32_t key = k.add(rw);
  std::vector<DmaChunk> out;
  EXPECT_EQ(tr(k.r, key, 0, 8, out, access::kRemoteRead | access::kRemoteWrite), ProtectionError::kNone);
  EXPECT_EQ(tr(k.r, key, 0, 8, out, access::kRemoteRead | access::kAtomic), ProtectionError::kAccess);
}

TEST(MemoryProtection, LocalReadNeedsNoFlag) {
  Keys k;
  Mkey m = Keys::pa(0, 0x1000);
  m.local_read = false;
  const uint32_t key = k.add(m);
  std::vector<DmaChunk> out;
  EXPECT_EQ(tr(k.r, key, 0, 8, out, access::kLocalRead), ProtectionError::kNone);
}

TEST(MemoryProtection, BoundsAtTheFirstAndLastByte) {
  Keys k;
  const uint64_t start = 0x20000, length = 0x1800;
  const uint32_t key = k.add(Keys::pa(start, length));
  std::vector<DmaChunk> out;
  EXPECT_EQ(tr(k.r, key, start, 1, out), ProtectionError::kNone);
  EXPECT_EQ(tr(k.r, key, start - 1, 1, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, key, start - 1, 2, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, key, start + length - 1, 1, out), ProtectionError::kNone);
  EXPECT_EQ(tr(k.r, key, start + length, 1, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, key, start + length - 1, 2, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, key, start, length, out), ProtectionError::kNone);
  EXPECT_EQ(tr(k.r, key, start, length + 1, out), ProtectionError::kBounds);
  out.clear();
  // Length 0 is outside nothing.
  EXPECT_EQ(tr(k.r, key, 0, 0, out), ProtectionError::kNone);
  EXPECT_EQ(tr(k.r, key, start + length, 0, out), ProtectionError::kNone);
  EXPECT_TRUE(out.empty());
  // A key of length 0 grants no byte.
  const uint32_t empty = k.add(Keys::pa(start, 0));
  EXPECT_EQ(tr(k.r, empty, start, 1, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, empty, start, 0, out), ProtectionError::kNone);
}

TEST(MemoryProtection, OverflowAndHugeLengths) {
  Keys k;
  Mkey whole = Keys::pa(0, 0);
  whole.length64 = true;
  const uint32_t all = k.add(whole);
  const uint32_t top = k.add(Keys::pa(~uint64_t(0) - 0xfff, 0x1000));  // the last page of the space
  std::vector<DmaChunk> out;
  const uint64_t max = ~uint64_t(0);
  EXPECT_EQ(tr(k.r, all, max - 15, 17, out), ProtectionError::kBounds);  // wraps
  EXPECT_EQ(tr(k.r, all, max, max, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, top, max, 2, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, top, 0, 1, out), ProtectionError::kBounds);
  // In bounds, but host addresses end where the device memory's begin (kDeviceMemoryAddress).
  EXPECT_EQ(tr(k.r, top, max, 1, out), ProtectionError::kTranslation);
  const uint64_t host_max = kDeviceMemoryAddress - 1;
  EXPECT_EQ(tr(k.r, all, host_max - 15, 16, out), ProtectionError::kNone);  // ends at the last host byte
  EXPECT_EQ(tr(k.r, all, host_max - 15, 17, out), ProtectionError::kTranslation);
  // More than a message in one go.
  out.clear();
  EXPECT_EQ(tr(k.r, all, 0, (uint64_t(1) << 31) + 1, out), ProtectionError::kBounds);
  EXPECT_EQ(tr(k.r, all, 0x1000, uint64_t(1) << 31, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x1000, 0x80000000u}}));
}

TEST(MemoryProtection, MttPageCrossingsAndMerging) {
  Keys k;
  // Region starts 0x800 into its first page; the pages are scattered, entries carry flag bits.
  const uint64_t start = 0x7f0000000800;
  const uint32_t key = k.add(Keys::mtt(start, 3 * kPage, {0x500000 | 3, 0x300000 | 3, 0x301000 | 1, 0x900000}));
  std::vector<DmaChunk> out;
  // Within the first page.
  ASSERT_EQ(tr(k.r, key, start + 0x10, 0x100, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x500810, 0x100}}));
  // From the middle of page 0 into page 3: pages 1 and 2 are contiguous and merge.
  out.clear();
  ASSERT_EQ(tr(k.r, key, start + 0x400, 0x1400 + 0x1000 + 0x10, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x500c00, 0x400}, {0x300000, 0x2000}, {0x900000, 0x10}}));
  // The last byte of the region lies in page 3 (start is not page-aligned).
  out.clear();
  ASSERT_EQ(tr(k.r, key, start + 3 * kPage - 1, 1, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x9007ff, 1}}));
  // The whole region.
  out.clear();
  ASSERT_EQ(tr(k.r, key, start, 3 * kPage, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x500800, 0x800}, {0x300000, 0x2000}, {0x900000, 0x800}}));
}

// An implicit ODP MR (KSM over the whole address space, 1 GiB per entry): an entry names a child
// MTT key at the child's address, or the null MKEY (not present: a page fault); a child's entry of 0
// is not present either. A range across two entries translates through both children.
TEST(MemoryProtection, KsmEntriesTranslateThroughTheirChildOrAreNotPresent) {
  constexpr uint64_t kGiB = uint64_t(1) << 30;
  Keys k;
  // Children as mlx5_ib makes them: iova = entry index x 1 GiB, MTT over all of it.
  const uint32_t child1 = k.add(Keys::mtt(1 * kGiB, kGiB, {0x700000 | 3, 0}));
  const uint32_t child2 = k.add(Keys::mtt(2 * kGiB, kGiB, {0x800000 | 3}));
  Mkey imr = Keys::pa(0, 0);
  imr.access_mode = Mkey::kAccessKsm;
  imr.length64 = true;
  imr.log_page_size = 30;
  imr.mtt_capacity = 8;
  imr.ksm = {{kNullMkey, 0}, {child1, 1 * kGiB}, {child2, 2 * kGiB}};
  const uint32_t key = k.add(std::move(imr));
  std::vector<DmaChunk> out;
  ASSERT_EQ(tr(k.r, key, 1 * kGiB + 0x10, 0x100, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x700010, 0x100}}));
  out.clear();
  ASSERT_EQ(tr(k.r, key, 2 * kGiB - 0x10, 0x20, out), ProtectionError::kTranslation)
      << "child 1 has only two entries' room: past them the child refuses";
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(tr(k.r, key, 0x1000, 8, out), ProtectionError::kNotPresent) << "the null MKEY";
  EXPECT_EQ(tr(k.r, key, 1 * kGiB + kPage, 8, out), ProtectionError::kNotPresent) << "the child's entry is 0";
  EXPECT_EQ(tr(k.r, key, 5 * kGiB, 8, out), ProtectionError::kNotPresent) << "an entry never loaded, inside the room";
  EXPECT_EQ(tr(k.r, key, 9 * kGiB, 8, out), ProtectionError::kTranslation) << "past the room";
  EXPECT_TRUE(out.empty());
  k.r.mkeys.find(child2 >> 8)->free = true;
  EXPECT_EQ(tr(k.r, key, 2 * kGiB, 8, out), ProtectionError::kTranslation) << "a child that went free";
}

TEST(MemoryProtection, MttMissingOrZeroEntriesAndListsRestoredOnError) {
  Keys k;
  const uint32_t short_list = k.add(Keys::mtt(0x10000, 3 * kPage, {0x400000, 0x401000}));
  const uint32_t zero = k.add(Keys::mtt(0x10000, 2 * kPage, {0x400000, 0x0 | 3}));
  std::vector<DmaChunk> out{{0x3ff000, 0x1000}};  // ends where the translation starts: would merge
  EXPECT_EQ(tr(k.r, short_list, 0x10000, 3 * kPage, out), ProtectionError::kTranslation);
  EXPECT_TRUE(same(out, {{0x3ff000, 0x1000}}));
  EXPECT_EQ(tr(k.r, zero, 0x10000, 2 * kPage, out), ProtectionError::kNotPresent);  // an ODP page fault
  EXPECT_TRUE(same(out, {{0x3ff000, 0x1000}}));
  ASSERT_EQ(tr(k.r, zero, 0x10000, kPage, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x3ff000, 0x2000}}));
  ASSERT_EQ(tr(k.r, short_list, 0x10000 + 2 * kPage - 1, 1, out), ProtectionError::kNone);

  Mkey klm = Keys::pa(0, kPage);
  klm.access_mode = 2;
  const uint32_t bad_mode = k.add(klm);
  EXPECT_EQ(tr(k.r, bad_mode, 0, 1, out), ProtectionError::kTranslation);
}

TEST(MemoryProtection, MttLargePages) {
  Keys k;
  const uint64_t big = uint64_t(1) << 21;
  const uint32_t key = k.add(Keys::mtt(0x40000000 + 0x1000, 2 * big, {0x80000000, 0x20000000, 0x60000000}, 21));
  std::vector<DmaChunk> out;
  ASSERT_EQ(tr(k.r, key, 0x40000000 + big - 0x10, 0x20, out), ProtectionError::kNone);
  EXPECT_TRUE(same(out, {{0x80000000 + big - 0x10, 0x10}, {0x20000000, 0x10}}));
}

TEST(MemoryProtection, TranslateSges) {
  Keys k;
  const uint32_t a = k.add(Keys::mtt(0x10000, 2 * kPage, {0x400000, 0x800000}));
  const uint32_t b = k.add(Keys::pa(0x401000, kPage));
  const Sge good[] = {{0x10800, a, 0x800}, {0x401000, b, 0x100}, {0x11000, a, 0x10}};
  std::vector<DmaChunk> out;
  uint64_t total = 0;
  ASSERT_EQ(translate_sges(k.r, good, kPd, access::kLocalWrite, out, total), ProtectionError::kNone);
  EXPECT_EQ(total, 0x910u);
  EXPECT_TRUE(same(out, {{0x400800, 0x900}, {0x800000, 0x10}}));  // the second SGE continues the first

  const Sge bad[] = {{0x10800, a, 0x800}, {0x401000, b, kPage + 1}};
  out = {{1, 1}};
  EXPECT_EQ(translate_sges(k.r, bad, kPd, access::kLocalWrite, out, total), ProtectionError::kBounds);
  EXPECT_EQ(total, 0u);
  EXPECT_TRUE(same(out, {{1, 1}}));
  EXPECT_EQ(translate_sges(k.r, good, kPd + 1, access::kLocalWrite, out, total), ProtectionError::kPdMismatch);
  ASSERT_EQ(translate_sges(k.r, {}, kPd, access::kLocalWrite, out, total), ProtectionError::kNone);
  EXPECT_EQ(total, 0u);
}

TEST(MemoryProtection, ReadAndWriteChunks) {
  testbench::SimHostMemory ram(0x100000, 0x10000);
  const std::vector<DmaChunk> chunks = {{0x100100, 0x10}, {0x104000, 0x20}, {0x108000, 0x8}};
  std::vector<uint8_t> in(0x30);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i + 1);
  // 0x30 bytes starting 0x6 bytes in: 0xa in chunk 0, 0x20 in chunk 1, 0x6 in chunk 2.
  ASSERT_TRUE(write_chunks(ram, chunks, 0x6, in));
  EXPECT_EQ(*ram.at(0x100106), 1);
  EXPECT_EQ(*ram.at(0x10010f), 0xa);
  EXPECT_EQ(*ram.at(0x104000), 0xb);
  EXPECT_EQ(*ram.at(0x108005), 0x30);
  EXPECT_EQ(*ram.at(0x108006), 0);
  std::vector<uint8_t> back(0x30);
  ASSERT_TRUE(read_chunks(ram, chunks, 0x6, back));
  EXPECT_EQ(back, in);

  // Past the end of the list: refused before any DMA.
  std::vector<uint8_t> one(1, 0x77);
  EXPECT_FALSE(write_chunks(ram, chunks, 0x38, one));
  EXPECT_FALSE(read_chunks(ram, chunks, ~uint64_t(0), one));
  EXPECT_EQ(ram.refused(), 0u);
  EXPECT_TRUE(read_chunks(ram, chunks, 0x38, {}));
  EXPECT_TRUE(write_chunks(ram, chunks, 0x37, one));
  EXPECT_EQ(*ram.at(0x108007), 0x77);

  // The host refuses a chunk outside its memory.
  const std::vector<DmaChunk> outside = {{0x100000, 4}, {0x900000, 4}};
  std::vector<uint8_t> eight(8);
  EXPECT_FALSE(read_chunks(ram, outside, 0, eight));
  EXPECT_FALSE(write_chunks(ram, outside, 0, eight));
  EXPECT_GT(ram.refused(), 0u);
  // A chunk that wraps the address space is never handed to the host.
  const std::vector<DmaChunk> wraps = {{~uint64_t(0) - 1, 4}};
  const uint64_t refused = ram.refused();
  std::vector<uint8_t> four(4);
  EXPECT_FALSE(read_chunks(ram, wraps, 0, four));
  EXPECT_EQ(ram.refused(), refused);
}

TEST(MemoryProtection, ErrorNames) {
  EXPECT_STREQ(protection_error_name(ProtectionError::kNone), "none");
  EXPECT_STREQ(protection_error_name(ProtectionError::kBadKey), "bad_key");
  EXPECT_STREQ(protection_error_name(ProtectionError::kFreeKey), "free_key");
  EXPECT_STREQ(protection_error_name(ProtectionError::kPdMismatch), "pd_mismatch");
  EXPECT_STREQ(protection_error_name(ProtectionError::kAccess), "access");
  EXPECT_STREQ(protection_error_name(ProtectionError::kBounds), "bounds");
  EXPECT_STREQ(protection_error_name(ProtectionError::kTranslation), "translation");
  EXPECT_STREQ(protection_error_name(ProtectionError(99)), "unknown");
}

}  // namespace
}  // namespace hcaemu::model::test
