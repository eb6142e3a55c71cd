#include "model/objects/device_memory.h"

#include <algorithm>

namespace hcaemu::model {

DeviceMemoryWindow device_memory_window(uint64_t bar0_size) {
  constexpr uint64_t kMaxBytes = 256 << 10, kPage = 4096;
  const uint64_t bytes = std::min(kMaxBytes, bar0_size / 8 / kPage * kPage);
  if (bytes == 0) return {};
  return {.bar_offset = bar0_size - bytes, .bytes = uint32_t(bytes), .ops_offset = bar0_size - (kMemicOperations + 1) * bytes};
}

void DeviceMemory::configure(DeviceMemoryWindow window) {
  window_ = window;
  bytes_.assign(window.bytes, 0);
  allocations_.clear();
}

bool DeviceMemory::contains(uint64_t bar_offset, uint64_t length) const {
  return bar_offset >= window_.bar_offset && bar_offset - window_.bar_offset <= window_.bytes &&
         length <= window_.bytes - (bar_offset - window_.bar_offset);
}

DeviceMemory::AllocError DeviceMemory::allocate(uint64_t range_start, uint64_t range_size, uint32_t size,
                                                uint32_t log_alignment, uint64_t& placed) {
  if (size == 0 || size % kAllocationGranule != 0 || log_alignment > kMaxLogAlignment || range_size < size ||
      !contains(range_start, range_size))
    return AllocError::kBadParameter;
  const uint64_t align = uint64_t(1) << (kLogMinAlignment + log_alignment);
  const uint64_t range_end = range_start + range_size;
  uint64_t at = (range_start + align - 1) / align * align;
  // Allocations in order of address: step past each one that overlaps the candidate.
  for (auto it = allocations_.begin(); at + size <= range_end; ) {
    while (it != allocations_.end() && it->first + it->second <= at) ++it;
    if (it == allocations_.end() || it->first >= at + size) {
      allocations_.emplace(at, size);
      std::fill_n(bytes_.begin() + ptrdiff_t(at - window_.bar_offset), size, uint8_t(0));
      placed = at;
      return AllocError::kNone;
    }
    at = (it->first + it->second + align - 1) / align * align;
  }
  return AllocError::kNoRoom;
}

bool DeviceMemory::release(uint64_t bar_offset, uint32_t size) {
  auto it = allocations_.find(bar_offset);
  if (it == allocations_.end() || it->second != size) return false;
  std::fill_n(bytes_.begin() + ptrdiff_t(bar_offset - window_.bar_offset), size, uint8_t(0));
  allocations_.erase(it);
  operations_.erase(bar_offset);
  return true;
}

void DeviceMemory::release_all() {
  allocations_.clear();
  operations_.clear();
  std::fill(bytes_.begin(), bytes_.end(), uint8_t(0));
}

bool DeviceMemory::read(uint64_t window_offset, std::span<uint8_t> out) const {
  if (window_offset > bytes_.size() || out.size() > bytes_.size() - window_offset) return false;
  std::copy_n(bytes_.begin() + ptrdiff_t(window_offset), out.size(), out.begin());
  return true;
}

bool DeviceMemory::write(uint64_t window_offset, std::span<const uint8_t> in) {
  if (window_offset > bytes_.size() || in.size() > bytes_.size() - window_offset) return false;
  std::copy(in.begin(), in.end(), bytes_.begin() + ptrdiff_t(window_offset));
  return true;
}

std::optional<uint64_t> DeviceMemory::enable_operation(uint64_t bar_offset, uint8_t operation) {
  if (operation >= kMemicOperations || window_.ops_offset == 0 || allocations_.count(bar_offset) == 0)
    return std::nullopt;
  operations_[bar_offset] |= uint8_t(1u << operation);
  return window_.ops_offset + uint64_t(operation) * window_.bytes + (bar_offset - window_.bar_offset);
}

bool DeviceMemory::disable_operation(uint64_t bar_offset, uint8_t operation) {
  auto it = operations_.find(bar_offset);
  if (operation >= kMemicOperations || it == operations_.end() || (it->second & (1u << operation)) == 0)
    return false;
  it->second &= uint8_t(~(1u << operation));
  if (it->second == 0) operations_.erase(it);
  return true;
}

bool DeviceMemory::in_operations(uint64_t bar_offset, uint64_t length) const {
  const uint64_t span = uint64_t(kMemicOperations) * window_.bytes;
  return present() && window_.ops_offset != 0 && bar_offset >= window_.ops_offset && bar_offset - window_.ops_offset <= span &&
         length <= span - (bar_offset - window_.ops_offset);
}

bool DeviceMemory::operate(uint64_t bar_offset, bool is_read, std::span<uint8_t> data) {
  if (is_read) std::fill(data.begin(), data.end(), uint8_t(0));
  if (data.size() != 1 || !in_operations(bar_offset, 1)) return false;
  const uint64_t mirror = bar_offset - window_.ops_offset;
  const auto operation = MemicOperation(mirror / window_.bytes);
  const uint64_t byte = window_.bar_offset + mirror % window_.bytes;
  // The allocation holding the byte, if it has turned this operation on.
  auto it = allocations_.upper_bound(byte);
  if (it == allocations_.begin()) return false;
  --it;
  auto on = operations_.find(it->first);
  if (byte >= it->first + it->second || on == operations_.end() || (on->second & (1u << uint8_t(operation))) == 0)
    return false;
  uint8_t& value = bytes_[size_t(byte - window_.bar_offset)];
  switch (operation) {
    case MemicOperation::kIncrement:
      if (is_read) return false;
      value = uint8_t(value + data[0]);
      return true;
    case MemicOperation::kTestAndSet:
      if (!is_read) return false;
      data[0] = value;
      value = 1;
      return true;
  }
  return false;
}

namespace {
// Splits [addr, addr + size) at kDeviceMemoryAddress: the host part (bytes below it), then the rest.
uint64_t host_part(uint64_t addr, uint64_t size) {
  return addr >= kDeviceMemoryAddress ? 0 : std::min<uint64_t>(size, kDeviceMemoryAddress - addr);
}
}  // namespace

bool FunctionMemory::read(uint64_t addr, std::span<uint8_t> dst) {
  if (addr >= kSwIcmAddress) return icm_.read(addr - kSwIcmAddress, dst);
  const uint64_t n = host_part(addr, dst.size());
  if (n > 0 && (host_ == nullptr || !host_->read(addr, dst.first(n)))) return false;
  return n == dst.size() || device_.read(addr + n - kDeviceMemoryAddress, dst.subspan(n));
}

bool FunctionMemory::write(uint64_t addr, std::span<const uint8_t> src) {
  if (addr >= kSwIcmAddress) return icm_.write(addr - kSwIcmAddress, src);
  const uint64_t n = host_part(addr, src.size());
  // A range over both (chunks merged across the boundary) writes its device part first.
  if (n < src.size() && !device_.write(addr + n - kDeviceMemoryAddress, src.subspan(n))) return false;
  return n == 0 || (host_ != nullptr && host_->write(addr, src.first(n)));
}

bool FunctionMemory::read_pipelined(uint64_t addr, std::span<uint8_t> dst, uint64_t issue_ps, uint64_t& ready_ps) {
  ready_ps = issue_ps;  // device memory is on the chip: no PCIe round trip
  if (addr >= kSwIcmAddress) return icm_.read(addr - kSwIcmAddress, dst);
  const uint64_t n = host_part(addr, dst.size());
  if (n > 0 && (host_ == nullptr || !host_->read_pipelined(addr, dst.first(n), issue_ps, ready_ps))) return false;
  return n == dst.size() || device_.read(addr + n - kDeviceMemoryAddress, dst.subspan(n));
}

}  // namespace hcaemu::model
