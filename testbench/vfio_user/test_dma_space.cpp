// DmaSpace without a socket: interval rules, bounds, permissions, fd handling, concurrency.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include "qemu-bridge/dma_space.h"
#include "testbench/vfio_user/fake_backend.h"

namespace hcaemu::vfio_user {
namespace {

constexpr uint32_t kRW = DmaSpace::kRead | DmaSpace::kWrite;

// A memfd of `size` bytes filled with byte i = (i * 7 + seed) & 0xff.
UniqueFd make_memfd(size_t size, uint8_t seed = 1) {
  UniqueFd fd(::memfd_create("dma-test", MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid());
  std::vector<uint8_t> b(size);
  for (size_t i = 0; i < size; ++i) b[i] = uint8_t(i * 7 + seed);
  EXPECT_EQ(::pwrite(fd.get(), b.data(), b.size(), 0), ssize_t(size));
  return fd;
}
UniqueFd dup_fd(const UniqueFd& f) { return UniqueFd(::dup(f.get())); }
uint8_t pattern(size_t i, uint8_t seed = 1) { return uint8_t(i * 7 + seed); }

class FakeMessenger : public DmaMessenger {
 public:
  std::vector<uint8_t> mem = std::vector<uint8_t>(8192, 0x5a);
  uint64_t base = 0;
  int calls = 0;
  int answer = 0;  // what dma_read returns: 0, or an errno
  int dma_read(uint64_t addr, std::span<uint8_t> dst) override {
    ++calls;
    if (answer != 0) return answer;
    std::copy_n(mem.begin() + (addr - base), dst.size(), dst.begin());
    return 0;
  }
  int dma_write(uint64_t addr, std::span<const uint8_t> src) override {
    ++calls;
    std::copy(src.begin(), src.end(), mem.begin() + (addr - base));
    return 0;
  }
};

TEST(DmaSpace, MapReadWriteMemfd) {
  DmaSpace s;
  auto fd = make_memfd(3 * 4096);
  UniqueFd keep = dup_fd(fd);
  // A non page aligned fd offset: mapped from the page below, with the remainder kept.
  ASSERT_EQ(s.map(0x100000, 4096, kRW, std::move(fd), 4096 + 16), 0);
  std::vector<uint8_t> out(64);
  ASSERT_TRUE(s.read(0x100000, out));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], pattern(4096 + 16 + i));
  std::vector<uint8_t> in(8, 0xee);
  ASSERT_TRUE(s.write(0x100000 + 100, in));
  uint8_t back[8];
  ASSERT_EQ(::pread(keep.get(), back, 8, 4096 + 16 + 100), 8);
  for (auto b : back) EXPECT_EQ(b, 0xee);
}

// Issue 14: a client that truncates the memfd behind a map used to make the next DMA raise SIGBUS
// and end hcaemu with every VM on it. Now the access fails, is counted, and everything else goes on.
TEST(DmaSpace, TruncatedClientMemoryFailsTheAccessNotTheProcess) {
  DmaSpace s;
  auto fd = make_memfd(3 * 4096);
  UniqueFd client = dup_fd(fd);
  ASSERT_EQ(s.map(0x100000, 3 * 4096, kRW, std::move(fd), 0), 0);
  auto other_fd = make_memfd(4096, 9);
  ASSERT_EQ(s.map(0x200000, 4096, kRW, std::move(other_fd), 0), 0);
  ASSERT_EQ(::ftruncate(client.get(), 4096), 0);  // the client takes pages 1 and 2 away

  std::vector<uint8_t> out(64);
  EXPECT_TRUE(s.read(0x100000, out));  // page 0 is still there
  EXPECT_FALSE(s.read(0x100000 + 4096, out));
  std::vector<uint8_t> in(64, 0xee);
  EXPECT_FALSE(s.write(0x100000 + 2 * 4096 + 8, in));
  EXPECT_FALSE(s.read(0x100000 + 4096 - 32, out));  // straddles into the lost page
  EXPECT_EQ(s.faults(), 3u);
  EXPECT_EQ(s.host_faults(), 3u) << "the function fails on them (HostFault test)";
  ASSERT_TRUE(s.read(0x200000, out));  // another map is untouched
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], pattern(i, 9));

  ASSERT_EQ(::ftruncate(client.get(), 3 * 4096), 0);  // grown back: the pages read as zeros
  ASSERT_TRUE(s.read(0x100000 + 4096, out));
  for (uint8_t b : out) EXPECT_EQ(b, 0);
}

TEST(DmaSpaceDeathTest, AFaultOutsideAGuardedCopyStillEndsTheProcess) {
  // The handler catches only the copies of DmaSpace; a bug of ours keeps its default crash.
  DmaSpace s;
  auto fd = make_memfd(4096);
  UniqueFd keep = dup_fd(fd);
  ASSERT_EQ(s.map(0x100000, 4096, kRW, std::move(fd), 0), 0);
  std::vector<uint8_t> out(8);
  ASSERT_TRUE(s.read(0x100000, out));  // installs the handler
  EXPECT_DEATH(
      {
        void* p = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, keep.get(), 0);
        ::ftruncate(keep.get(), 0);
        volatile uint8_t b = *static_cast<volatile uint8_t*>(p);
        (void)b;
      },
      "");
}

// Issue 14: one client could map without a limit and exhaust hcaemu's address space for every VM.
TEST(DmaSpace, FdMapsStayWithinTheClientsAddressSpaceBudget) {
  DmaSpace s(16, nullptr, 3 * 4096);
  ASSERT_EQ(s.map(0x10000, 2 * 4096, kRW, make_memfd(2 * 4096), 0), 0);
  EXPECT_EQ(s.mapped_bytes(), 2u * 4096);
  EXPECT_EQ(s.map(0x20000, 2 * 4096, kRW, make_memfd(2 * 4096), 0), ENOSPC);  // would take 4 pages
  ASSERT_EQ(s.map(0x20000, 4096, kRW, make_memfd(4096), 0), 0);                 // 3 fit
  EXPECT_EQ(s.map(0x30000, 4096, kRW, make_memfd(4096), 0), ENOSPC);
  EXPECT_EQ(s.map(0x40000, 1u << 20, kRW, UniqueFd(), 0), 0);  // fd-less maps take no address space
  ASSERT_EQ(s.unmap(0x10000, 2 * 4096), 0);
  EXPECT_EQ(s.mapped_bytes(), 4096u);
  EXPECT_EQ(s.map(0x30000, 2 * 4096, kRW, make_memfd(2 * 4096), 0), 0);  // the budget came back
  s.unmap_all();
  EXPECT_EQ(s.mapped_bytes(), 0u);
}

TEST(DmaSpace, OnePastTheEndIsRefusedAndTouchesNothing) {
  DmaSpace s;
  auto fd = make_memfd(4096);
  UniqueFd keep = dup_fd(fd);
  ASSERT_EQ(s.map(0x2000, 4096, kRW, std::move(fd), 0), 0);
  std::vector<uint8_t> out(4096, 0);
  EXPECT_FALSE(s.read(0x2001, out));
  EXPECT_FALSE(s.read(0x1fff, std::span<uint8_t>(out.data(), 2)));
  std::vector<uint8_t> in(2, 0xff);
  EXPECT_FALSE(s.write(0x2000 + 4095, in));
  uint8_t last;
  ASSERT_EQ(::pread(keep.get(), &last, 1, 4095), 1);
  EXPECT_EQ(last, pattern(4095));  // the in-range byte was not written either
  EXPECT_TRUE(s.read(0x2000, out));
  EXPECT_FALSE(s.read(UINT64_MAX - 1, std::span<uint8_t>(out.data(), 4)));  // wraps
}

TEST(DmaSpace, AdjacentMapsAreContiguousButHolesAreNot) {
  DmaSpace s;
  ASSERT_EQ(s.map(0x10000, 4096, kRW, make_memfd(4096, 1), 0), 0);
  ASSERT_EQ(s.map(0x11000, 4096, kRW, make_memfd(4096, 2), 0), 0);
  ASSERT_EQ(s.map(0x13000, 4096, kRW, make_memfd(4096, 3), 0), 0);  // hole at 0x12000
  std::vector<uint8_t> out(32);
  ASSERT_TRUE(s.read(0x11000 - 16, out));
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(out[i], pattern(4096 - 16 + i, 1));
  for (size_t i = 16; i < 32; ++i) EXPECT_EQ(out[i], pattern(i - 16, 2));
  EXPECT_FALSE(s.read(0x12000 - 16, out));
  EXPECT_FALSE(s.read(0x13000 - 16, out));
}

TEST(DmaSpace, PermissionsAreEnforced) {
  DmaSpace s;
  ASSERT_EQ(s.map(0x1000, 4096, DmaSpace::kRead, make_memfd(4096), 0), 0);
  ASSERT_EQ(s.map(0x2000, 4096, kRW, make_memfd(4096), 0), 0);
  std::vector<uint8_t> b(16);
  EXPECT_TRUE(s.read(0x1000, b));
  EXPECT_FALSE(s.write(0x1000, b));
  EXPECT_FALSE(s.write(0x2000 - 8, b));  // spans the read-only map: refused whole
  EXPECT_TRUE(s.write(0x2000, b));
}

TEST(DmaSpace, OverlapsAreEexist) {
  DmaSpace s;
  ASSERT_EQ(s.map(0x10000, 0x2000, kRW, {}, 0), 0);
  EXPECT_EQ(s.map(0x10000, 0x2000, kRW, {}, 0), EEXIST);
  EXPECT_EQ(s.map(0xf000, 0x1001, kRW, {}, 0), EEXIST);
  EXPECT_EQ(s.map(0x11fff, 0x10, kRW, {}, 0), EEXIST);
  EXPECT_EQ(s.map(0x8000, 0x10000, kRW, {}, 0), EEXIST);  // covers it
  EXPECT_EQ(s.map(0xf000, 0x1000, kRW, {}, 0), 0);        // touching below
  EXPECT_EQ(s.map(0x12000, 0x1000, kRW, {}, 0), 0);       // touching above
  EXPECT_EQ(s.map_count(), 3u);
}

TEST(DmaSpace, InvalidMapsAndUnmapMatching) {
  DmaSpace s(2);
  EXPECT_EQ(s.map(0x1000, 0, kRW, {}, 0), EINVAL);
  EXPECT_EQ(s.map(UINT64_MAX - 10, 100, kRW, {}, 0), EINVAL);
  EXPECT_EQ(s.map(0x1000, 0x1000, 0, {}, 0), EINVAL);
  EXPECT_EQ(s.map(0x1000, 0x1000, 4, {}, 0), EINVAL);
  EXPECT_EQ(s.map(0x1000, 0x2000, kRW, make_memfd(4096), 0), EINVAL);  // fd smaller than the map
  ASSERT_EQ(s.map(0x1000, 0x1000, kRW, {}, 0), 0);
  ASSERT_EQ(s.map(0x3000, 0x1000, kRW, {}, 0), 0);
  EXPECT_EQ(s.map(0x5000, 0x1000, kRW, {}, 0), ENOSPC);
  EXPECT_EQ(s.unmap(0x2000, 0x1000), ENOENT);
  EXPECT_EQ(s.unmap(0x1800, 0x800), ENOENT);
  EXPECT_EQ(s.unmap(0x1000, 0x800), EINVAL);
  EXPECT_EQ(s.unmap(0x1000, 0x1000), 0);
  EXPECT_EQ(s.unmap(0x1000, 0x1000), ENOENT);
  s.unmap_all();
  EXPECT_EQ(s.map_count(), 0u);
}

TEST(DmaSpace, FdIsClosedAfterMapAndUnmapReleases) {
  const int before = test::open_fd_count();
  {
    DmaSpace s;
    ASSERT_EQ(s.map(0x1000, 4096, kRW, make_memfd(4096), 0), 0);
    EXPECT_EQ(test::open_fd_count(), before);  // the mapping holds the memory, not the fd
    EXPECT_EQ(s.map(0x1000, 4096, kRW, make_memfd(4096), 0), EEXIST);
    EXPECT_EQ(test::open_fd_count(), before);  // a refused map closes its fd too
  }
  EXPECT_EQ(test::open_fd_count(), before);
}

TEST(DmaSpace, FdLessMapsUseTheMessenger) {
  FakeMessenger m;
  m.base = 0x40000;
  DmaSpace s(16);
  ASSERT_EQ(s.map(0x40000, 8192, kRW, {}, 0), 0);
  std::vector<uint8_t> out(16);
  EXPECT_FALSE(s.read(0x40000, out));  // no messenger: refused
  s.set_messenger(&m);
  ASSERT_TRUE(s.read(0x40000, out));
  EXPECT_EQ(out[0], 0x5a);
  std::vector<uint8_t> in(4, 0x11);
  ASSERT_TRUE(s.write(0x40010, in));
  EXPECT_EQ(m.mem[0x10], 0x11);
  // Mixed: a shared map right below an fd-less one.
  ASSERT_EQ(s.map(0x3f000, 4096, kRW, make_memfd(4096), 0), 0);
  ASSERT_TRUE(s.read(0x40000 - 8, out));
  EXPECT_EQ(out[0], pattern(4096 - 8));
  EXPECT_EQ(out[8], 0x5a);
  EXPECT_EQ(m.calls, 3);
  // A client that does not answer is the host's fault; a refused address is the guest's.
  m.answer = EFAULT;
  EXPECT_FALSE(s.read(0x40000, out));
  EXPECT_EQ(s.host_faults(), 0u);
  m.answer = ETIMEDOUT;
  EXPECT_FALSE(s.read(0x40000, out));
  EXPECT_EQ(s.host_faults(), 1u);
}

TEST(DmaSpace, UnmapWaitsForInFlightAccesses) {
  DmaSpace s;
  std::atomic<bool> stop{false};
  std::atomic<long> ok{0};
  std::thread reader([&] {
    std::vector<uint8_t> b(4096);
    while (!stop) {
      if (s.read(0x100000, b)) ++ok;
      s.write(0x100000, b);
    }
  });
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(s.map(0x100000, 1 << 16, kRW, make_memfd(1 << 16), 0), 0);
    std::this_thread::yield();
    ASSERT_EQ(s.unmap(0x100000, 1 << 16), 0);  // a use-after-munmap would crash or trip ASan
  }
  stop = true;
  reader.join();
  SUCCEED() << ok.load() << " reads succeeded";
}

}  // namespace
}  // namespace hcaemu::vfio_user
