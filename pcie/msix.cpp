#include "pcie/msix.h"

#include <stdexcept>

namespace hcaemu::pcie {

MsixTable::MsixTable(uint16_t vectors, uint32_t table_offset, uint32_t pba_offset)
    : entries_(vectors), pending_(vectors, false), table_offset_(table_offset), pba_offset_(pba_offset) {
  if (vectors == 0 || vectors > kMaxVectors) throw std::invalid_argument("MSI-X vector count 1..2048");
  // §6.8.2.4/5: both offsets are QWORD aligned (BIR takes bits 2:0).
  if ((table_offset & 7) || (pba_offset & 7)) throw std::invalid_argument("MSI-X offsets must be 8-byte aligned");
  const uint64_t t_end = uint64_t(table_offset) + table_bytes(), p_end = uint64_t(pba_offset) + pba_bytes();
  if (!(t_end <= pba_offset || p_end <= table_offset)) throw std::invalid_argument("MSI-X table and PBA overlap");
}

bool MsixTable::contains(uint64_t off) const {
  return (off >= table_offset_ && off < uint64_t(table_offset_) + table_bytes()) ||
         (off >= pba_offset_ && off < uint64_t(pba_offset_) + pba_bytes());
}

uint32_t MsixTable::read32(uint64_t off) const {
  if (off >= table_offset_ && off < uint64_t(table_offset_) + table_bytes()) {
    const uint64_t rel = off - table_offset_;
    const Entry& e = entries_[rel / kEntrySize];
    switch (rel % kEntrySize) {
      case kAddrLo: return e.addr_lo;
      case kAddrHi: return e.addr_hi;
      case kData: return e.data;
      default: return e.ctrl;
    }
  }
  const uint64_t first = (off - pba_offset_) * 8;  // bit number of the dword's bit 0
  uint32_t v = 0;
  for (unsigned b = 0; b < 32 && first + b < pending_.size(); ++b)
    if (pending_[first + b]) v |= 1u << b;
  return v;
}

void MsixTable::write32(uint64_t off, uint32_t v) {
  if (!(off >= table_offset_ && off < uint64_t(table_offset_) + table_bytes())) return;  // PBA is RO
  const uint64_t rel = off - table_offset_;
  const uint16_t idx = uint16_t(rel / kEntrySize);
  Entry& e = entries_[idx];
  switch (rel % kEntrySize) {
    case kAddrLo: e.addr_lo = v & ~3u; break;  // §6.8.2.7: bits 1:0 are 0 (DWORD aligned)
    case kAddrHi: e.addr_hi = v; break;
    case kData: e.data = v; break;
    default: {
      const bool was_masked = e.ctrl & kVectorMasked;
      e.ctrl = v & kVectorMasked;  // bits 31:1 reserved (ST bits unsupported)
      if (was_masked && !(e.ctrl & kVectorMasked)) flush_pending();
    }
  }
}

bool MsixTable::read(uint64_t off, unsigned size, uint64_t& value) const {
  if ((size != 4 && size != 8) || (off % size) || !contains(off) || !contains(off + size - 1)) {
    ++bad_accesses_;
    value = size == 4 ? 0xFFFFFFFFull : ~0ull;
    return false;
  }
  value = read32(off);
  if (size == 8) value |= uint64_t(read32(off + 4)) << 32;
  return true;
}

bool MsixTable::write(uint64_t off, unsigned size, uint64_t value) {
  if ((size != 4 && size != 8) || (off % size) || !contains(off) || !contains(off + size - 1)) {
    ++bad_accesses_;
    return false;
  }
  write32(off, uint32_t(value));
  if (size == 8) write32(off + 4, uint32_t(value >> 32));
  return true;
}

void MsixTable::set_control(bool enable, bool function_mask) {
  enable_ = enable;
  function_mask_ = function_mask;
  flush_pending();
}

bool MsixTable::pending(uint16_t v) const { return v < pending_.size() && pending_[v]; }
bool MsixTable::masked(uint16_t v) const { return v < entries_.size() && (entries_[v].ctrl & kVectorMasked); }
uint64_t MsixTable::address(uint16_t v) const {
  return v < entries_.size() ? (uint64_t(entries_[v].addr_hi) << 32) | entries_[v].addr_lo : 0;
}
uint32_t MsixTable::data(uint16_t v) const { return v < entries_.size() ? entries_[v].data : 0; }

void MsixTable::send(uint16_t v) {
  ++sent_;
  if (deliver_) deliver_(v, address(v), entries_[v].data);
}

MsixTable::FireResult MsixTable::fire(uint16_t v) {
  if (v >= entries_.size()) return FireResult::kBadVector;
  if (!enable_) {
    ++dropped_disabled_;  // no INTx fallback: Interrupt Pin is 0
    return FireResult::kDisabled;
  }
  if (function_mask_ || (entries_[v].ctrl & kVectorMasked)) {
    pending_[v] = true;  // §6.8.2.10: latched until the mask clears
    return FireResult::kPending;
  }
  send(v);
  return FireResult::kSent;
}

void MsixTable::flush_pending() {
  if (!enable_ || function_mask_) return;
  for (uint16_t v = 0; v < entries_.size(); ++v) {
    if (pending_[v] && !(entries_[v].ctrl & kVectorMasked)) {
      pending_[v] = false;
      send(v);
    }
  }
}

void MsixTable::reset() {
  for (auto& e : entries_) e = Entry{};
  std::fill(pending_.begin(), pending_.end(), false);
  enable_ = function_mask_ = false;
}

}  // namespace hcaemu::pcie
