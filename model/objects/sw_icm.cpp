#include "model/objects/sw_icm.h"

#include <algorithm>
#include <iterator>

namespace hcaemu::model {

bool SwIcm::place(uint64_t start, uint32_t log_size) {
  if (log_size < kLogSwIcmBlock || log_size > 62) return false;
  const uint64_t bytes = uint64_t(1) << log_size;
  const bool in_a_region = kSteeringIcm.contains(start, bytes) || kHeaderModifyIcm.contains(start, bytes) ||
                           kHeaderModifyPatternIcm.contains(start, bytes);
  if ((start & (bytes - 1)) != 0 || !in_a_region) return false;
  auto next = ranges_.lower_bound(start);
  if (next != ranges_.end() && next->first < start + bytes) return false;
  if (next != ranges_.begin() && std::prev(next)->first + std::prev(next)->second > start) return false;
  ranges_.emplace(start, bytes);
  return true;
}

bool SwIcm::remove(uint64_t start) {
  auto range = ranges_.find(start);
  if (range == ranges_.end()) return false;
  for (uint64_t page = start; page < start + range->second; page += kPageBytes) pages_.erase(page);
  ranges_.erase(range);
  return true;
}

bool SwIcm::placed(uint64_t address, uint64_t length) const {
  auto range = ranges_.upper_bound(address);
  if (range == ranges_.begin()) return false;
  --range;
  return address - range->first <= range->second && length <= range->second - (address - range->first);
}

namespace {
// Calls step(page, offset in it, bytes done, chunk) for each page [address, address + size) touches.
template <typename Step>
void by_page(uint64_t address, size_t size, Step&& step) {
  for (size_t done = 0; done < size;) {
    const uint64_t offset = (address + done) % SwIcm::kPageBytes;
    const size_t chunk = std::min<size_t>(SwIcm::kPageBytes - offset, size - done);
    step(address + done - offset, offset, done, chunk);
    done += chunk;
  }
}
}  // namespace

bool SwIcm::read(uint64_t address, std::span<uint8_t> out) const {
  if (!placed(address, out.size())) return false;
  by_page(address, out.size(), [&](uint64_t page_address, uint64_t offset, size_t done, size_t chunk) {
    const auto to = out.begin() + std::ptrdiff_t(done);
    auto page = pages_.find(page_address);
    if (page == pages_.end())
      std::fill_n(to, chunk, uint8_t(0));
    else
      std::copy_n(page->second->begin() + std::ptrdiff_t(offset), chunk, to);
  });
  return true;
}

bool SwIcm::write(uint64_t address, std::span<const uint8_t> in) {
  if (!placed(address, in.size())) return false;
  by_page(address, in.size(), [&](uint64_t page_address, uint64_t offset, size_t done, size_t chunk) {
    auto& page = pages_[page_address];
    if (!page) page = std::make_unique<Page>(Page{});
    std::copy_n(in.begin() + std::ptrdiff_t(done), chunk, page->begin() + std::ptrdiff_t(offset));
  });
  return true;
}

void SwIcm::clear() {
  ranges_.clear();
  pages_.clear();
}

}  // namespace hcaemu::model
