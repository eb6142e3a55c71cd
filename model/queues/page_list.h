#pragma once
// A queue buffer (EQ, CQ, QP, SRQ ring) as the driver describes it: a PAS list of big-endian
// 64-bit page addresses, a page size of 4 KiB << n and a start offset inside the first page.
// The buffer may be fragmented: byte X of the buffer lives at
//   pas[(X + offset) >> log_page_size] + ((X + offset) & (page_size - 1)).
// Built only from validated input (every page aligned, offset + size inside the list); all access
// goes through the function's HostMemory, so a bad address is a refused DMA, never a wild write.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/budget_charge.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

enum class PageListError {
  kNone,
  kPageSize,      // log page size out of the supported range
  kOffset,        // start offset not inside the first page
  kTooShort,      // the PAS list does not cover offset + size
  kMisaligned,    // a page address is not aligned to the page size
};

class PageList {
 public:
  static constexpr uint32_t kMinLogPageSize = 12;
  static constexpr uint32_t kMaxLogPageSize = 30;

  PageList() = default;

  // `pas` holds the BE64 entries as they appear in the command (its length bounds the list);
  // `log_page_size` is absolute (12 = 4 KiB); `offset` and `size` are in bytes.
  static std::optional<PageList> build(std::span<const uint8_t> pas, uint32_t log_page_size, uint64_t offset,
                                       uint64_t size, PageListError& error);

  // The same from page addresses already decoded (a DevX UMEM's MTT, flags stripped).
  static std::optional<PageList> from_pages(std::vector<uint64_t> pages, uint32_t log_page_size, uint64_t offset,
                                            uint64_t size, PageListError& error);

  // Bytes [at, at + size) of this buffer as a list of their own (a queue inside a UMEM); nullopt
  // when the range leaves the buffer. The slice shares `source` with this list.
  std::optional<PageList> slice(uint64_t at, uint64_t size) const;

  // Entries the list needs for `size` bytes starting `offset` bytes into the first page.
  static uint64_t pages_needed(uint32_t log_page_size, uint64_t offset, uint64_t size);

  // Host address of byte `at` of the buffer; nullopt past the end.
  std::optional<uint64_t> translate(uint64_t at) const;

  // Reads/writes `len` bytes at buffer offset `at`, splitting at page boundaries. False when the
  // range leaves the buffer or the host refuses the DMA.
  bool read(pcie::HostMemory& memory, uint64_t at, std::span<uint8_t> dst) const;
  bool write(pcie::HostMemory& memory, uint64_t at, std::span<const uint8_t> src) const;
  // Reads from a ring of `ring_bytes` that starts at `ring_offset` in the buffer: `dst` from ring
  // position `at` (taken modulo the ring), continuing at the ring's start when it reaches the end
  // (a WQE running past the last WQEBB of a work queue).
  bool read_ring(pcie::HostMemory& memory, uint64_t ring_offset, uint64_t ring_bytes, uint64_t at,
                 std::span<uint8_t> dst) const;

  uint64_t size() const { return size_; }
  uint64_t offset() const { return offset_; }
  uint32_t log_page_size() const { return log_page_size_; }
  const std::vector<uint64_t>& pages() const { return pages_; }

  // The list's entries against the function's translation budget (firmware/resource_helpers.h),
  // given back when the list goes.
  BudgetCharge charge;
  // What the pages belong to when they are not the list's own (a UMEM: objects/umem.h): held so
  // the owner sees it is still in use while any slice lives.
  std::shared_ptr<const void> source;

 private:
  std::vector<uint64_t> pages_;
  uint32_t log_page_size_ = kMinLogPageSize;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

}  // namespace hcaemu::model
