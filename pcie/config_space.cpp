#include "pcie/config_space.h"

#include <cassert>
#include <stdexcept>

namespace hcaemu::pcie {

ConfigSpace::ConfigSpace() = default;

bool ConfigSpace::access_ok(uint32_t offset, unsigned size) {
  if (size != 1 && size != 2 && size != 4) return false;
  if (offset + size > kSize) return false;
  return (offset & ~3u) == ((offset + size - 1) & ~3u);  // inside one dword
}

uint32_t ConfigSpace::get_field(const std::array<uint8_t, kSize>& a, uint16_t offset, unsigned size) const {
  uint32_t v = 0;
  for (unsigned i = 0; i < size; ++i) v |= uint32_t(a[offset + i]) << (8 * i);
  return v;
}

void ConfigSpace::put_field(std::array<uint8_t, kSize>& a, uint16_t offset, unsigned size, uint32_t v) {
  for (unsigned i = 0; i < size; ++i) a[offset + i] = uint8_t(v >> (8 * i));
}

uint32_t ConfigSpace::read(uint32_t offset, unsigned size) const {
  if (!access_ok(offset, size)) {
    ++rejected_;
    return size >= 4 ? 0xFFFFFFFFu : (1u << (8 * size)) - 1;
  }
  return get_field(value_, uint16_t(offset), size);
}

bool ConfigSpace::write(uint32_t offset, unsigned size, uint32_t value) {
  if (!access_ok(offset, size)) {
    ++rejected_;
    return false;
  }
  const uint16_t dword = uint16_t(offset & ~3u);
  const uint32_t old_dword = get_field(value_, dword, 4);
  for (unsigned i = 0; i < size; ++i) {
    const unsigned at = offset + i;
    const uint8_t in = uint8_t(value >> (8 * i));
    uint8_t v = uint8_t((value_[at] & ~rw_[at]) | (in & rw_[at]));
    v = uint8_t(v & ~(in & rw1c_[at]));
    value_[at] = v;
  }
  const uint32_t new_dword = get_field(value_, dword, 4);
  // Observers see their whole range, old and new, even if the write covered only part of it.
  // Copy the list: an observer may reset the space, but it must not add observers meanwhile.
  const auto observers = write_observers_;
  for (const auto& o : observers) {
    if (o.offset >= offset + size || o.offset + o.length <= offset) continue;
    const unsigned shift = 8 * (o.offset - dword);
    const uint32_t mask = o.length == 4 ? 0xFFFFFFFFu : (1u << (8 * o.length)) - 1;
    o.fn(WriteEvent{o.offset, o.length, (old_dword >> shift) & mask, (new_dword >> shift) & mask});
  }
  return true;
}

void ConfigSpace::read_block(uint32_t offset, std::span<uint8_t> out) const {
  if (uint64_t(offset) + out.size() > kSize) {
    ++rejected_;
    std::fill(out.begin(), out.end(), 0xFF);
    return;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = value_[offset + i];
}

bool ConfigSpace::write_block(uint32_t offset, std::span<const uint8_t> in) {
  if (uint64_t(offset) + in.size() > kSize) {
    ++rejected_;
    return false;
  }
  size_t done = 0;
  while (done < in.size()) {
    const uint32_t at = offset + uint32_t(done);
    // Largest naturally usable piece inside the current dword.
    unsigned n = unsigned(std::min<size_t>(4 - (at & 3), in.size() - done));
    if (n == 3) n = 2;
    if (n == 2 && (at & 1)) n = 1;
    uint32_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= uint32_t(in[done + i]) << (8 * i);
    write(at, n, v);
    done += n;
  }
  return true;
}

void ConfigSpace::define(uint16_t offset, unsigned size, const RegSpec& spec) {
  if (size == 0 || size > 4 || offset + size > kSize) throw std::invalid_argument("ConfigSpace::define range");
  put_field(value_, offset, size, spec.value);
  put_field(default_, offset, size, spec.value);
  put_field(rw_, offset, size, spec.rw);
  put_field(rw1c_, offset, size, spec.rw1c);
  put_field(sticky_, offset, size, spec.sticky);
  put_field(flr_keep_, offset, size, spec.flr_keep);
}

uint32_t ConfigSpace::get(uint16_t offset, unsigned size) const {
  assert(size >= 1 && size <= 4 && offset + size <= kSize);
  return get_field(value_, offset, size);
}

void ConfigSpace::set(uint16_t offset, unsigned size, uint32_t value) {
  assert(size >= 1 && size <= 4 && offset + size <= kSize);
  put_field(value_, offset, size, value);
}

void ConfigSpace::set_rw_mask(uint16_t offset, unsigned size, uint32_t mask) {
  assert(size >= 1 && size <= 4 && offset + size <= kSize);
  put_field(rw_, offset, size, mask);
}

uint32_t ConfigSpace::rw_mask(uint16_t offset, unsigned size) const { return get_field(rw_, offset, size); }

void ConfigSpace::add_write_observer(uint16_t offset, unsigned length, WriteObserver fn) {
  if (length == 0 || length > 4 || (offset & ~3u) != ((offset + length - 1) & ~3u))
    throw std::invalid_argument("write observer range must be 1..4 bytes inside one dword");
  write_observers_.push_back(Observer{offset, length, std::move(fn)});
}

void ConfigSpace::add_reset_observer(ResetObserver fn) { reset_observers_.push_back(std::move(fn)); }

void ConfigSpace::reset(ResetKind kind) {
  for (uint32_t i = 0; i < kSize; ++i) {
    uint8_t keep = 0;
    if (kind != ResetKind::kCold) keep = sticky_[i];
    if (kind == ResetKind::kFlr) keep |= flr_keep_[i];
    value_[i] = uint8_t((value_[i] & keep) | (default_[i] & ~keep));
  }
  const auto observers = reset_observers_;
  for (const auto& fn : observers) fn(kind);
}

}  // namespace hcaemu::pcie
