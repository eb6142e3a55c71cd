#include "model/queues/page_list.h"

#include <algorithm>

#include "common/endian.h"

namespace hcaemu::model {

uint64_t PageList::pages_needed(uint32_t log_page_size, uint64_t offset, uint64_t size) {
  const uint64_t page = uint64_t(1) << log_page_size;
  return (offset + size + page - 1) >> log_page_size;
}

std::optional<PageList> PageList::build(std::span<const uint8_t> pas, uint32_t log_page_size, uint64_t offset,
                                        uint64_t size, PageListError& error) {
  // Only the entries the buffer needs are decoded; from_pages judges the rest.
  const bool size_ok = log_page_size >= kMinLogPageSize && log_page_size <= kMaxLogPageSize;
  const uint64_t needed = size_ok ? pages_needed(log_page_size, offset, size) : 0;
  std::vector<uint64_t> pages;
  if (needed <= pas.size() / 8) {
    pages.reserve(needed);
    for (uint64_t i = 0; i < needed; ++i) pages.push_back(load_be64(&pas[i * 8]));
  }
  return from_pages(std::move(pages), log_page_size, offset, size, error);
}

std::optional<PageList> PageList::from_pages(std::vector<uint64_t> pages, uint32_t log_page_size, uint64_t offset,
                                             uint64_t size, PageListError& error) {
  error = PageListError::kNone;
  if (log_page_size < kMinLogPageSize || log_page_size > kMaxLogPageSize) {
    error = PageListError::kPageSize;
    return std::nullopt;
  }
  const uint64_t page = uint64_t(1) << log_page_size;
  if (offset >= page) {
    error = PageListError::kOffset;
    return std::nullopt;
  }
  if (pages_needed(log_page_size, offset, size) > pages.size()) {
    error = PageListError::kTooShort;
    return std::nullopt;
  }
  if (std::any_of(pages.begin(), pages.end(), [page](uint64_t a) { return (a & (page - 1)) != 0; })) {
    error = PageListError::kMisaligned;
    return std::nullopt;
  }
  PageList list;
  list.pages_ = std::move(pages);
  list.log_page_size_ = log_page_size;
  list.offset_ = offset;
  list.size_ = size;
  return list;
}

std::optional<PageList> PageList::slice(uint64_t at, uint64_t size) const {
  if (size == 0 || at > size_ || size > size_ - at) return std::nullopt;
  const uint64_t linear = at + offset_;
  const uint64_t first = linear >> log_page_size_;
  PageList part;
  part.log_page_size_ = log_page_size_;
  part.offset_ = linear & ((uint64_t(1) << log_page_size_) - 1);
  part.size_ = size;
  const uint64_t count = pages_needed(log_page_size_, part.offset_, size);
  part.pages_.assign(pages_.begin() + std::ptrdiff_t(first), pages_.begin() + std::ptrdiff_t(first + count));
  part.source = source;
  return part;
}

std::optional<uint64_t> PageList::translate(uint64_t at) const {
  if (at >= size_) return std::nullopt;
  const uint64_t linear = at + offset_;
  const uint64_t index = linear >> log_page_size_;
  if (index >= pages_.size()) return std::nullopt;
  return pages_[index] + (linear & ((uint64_t(1) << log_page_size_) - 1));
}

bool PageList::read_ring(pcie::HostMemory& memory, uint64_t ring_offset, uint64_t ring_bytes, uint64_t at,
                         std::span<uint8_t> dst) const {
  if (ring_bytes == 0 || dst.size() > ring_bytes) return false;
  const uint64_t start = at % ring_bytes;
  const uint64_t first = std::min<uint64_t>(dst.size(), ring_bytes - start);
  return read(memory, ring_offset + start, dst.first(first)) &&
         (first == dst.size() || read(memory, ring_offset, dst.subspan(first)));
}

bool PageList::read(pcie::HostMemory& memory, uint64_t at, std::span<uint8_t> dst) const {
  if (at > size_ || dst.size() > size_ - at) return false;
  const uint64_t page = uint64_t(1) << log_page_size_;
  size_t done = 0;
  while (done < dst.size()) {
    const uint64_t linear = at + done + offset_;
    const uint64_t chunk = std::min<uint64_t>(page - (linear & (page - 1)), dst.size() - done);
    if (!memory.read(pages_[linear >> log_page_size_] + (linear & (page - 1)), dst.subspan(done, chunk)))
      return false;
    done += chunk;
  }
  return true;
}

bool PageList::write(pcie::HostMemory& memory, uint64_t at, std::span<const uint8_t> src) const {
  if (at > size_ || src.size() > size_ - at) return false;
  const uint64_t page = uint64_t(1) << log_page_size_;
  size_t done = 0;
  while (done < src.size()) {
    const uint64_t linear = at + done + offset_;
    const uint64_t chunk = std::min<uint64_t>(page - (linear & (page - 1)), src.size() - done);
    if (!memory.write(pages_[linear >> log_page_size_] + (linear & (page - 1)), src.subspan(done, chunk)))
      return false;
    done += chunk;
  }
  return true;
}

}  // namespace hcaemu::model
