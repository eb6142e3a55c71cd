#pragma once
// MSI-X table and Pending Bit Array as one memory region inside a BAR (PCI Local Bus 3.0
// §6.8.2.6-§6.8.2.10). Under QEMU the guest's table accesses never reach us (QEMU emulates the
// table and owns the mask state, vfio-user.md §6); elsewhere (testbenches, a host model, the
// coming headless host) the device's interrupts go through this one, and fire() gives its rules:
// a vector fires only when MSI-X is enabled; with the function or the vector masked the pending
// bit latches, and the message goes out when the mask clears.
#include <cstdint>
#include <functional>
#include <vector>

namespace hcaemu::pcie {

class MsixTable {
 public:
  static constexpr uint32_t kEntrySize = 16;      // §6.8.2.6: addr lo, addr hi, data, vector control
  static constexpr uint32_t kAddrLo = 0x0, kAddrHi = 0x4, kData = 0x8, kVectorCtrl = 0xC;
  static constexpr uint32_t kVectorMasked = 0x1;  // vector control bit 0, set at reset
  static constexpr uint16_t kMaxVectors = 2048;

  enum class FireResult { kSent, kPending, kDisabled, kBadVector };
  // Message delivery: a DWORD write of `data` to `address` (what the host's interrupt
  // controller sees), for `vector`.
  using Deliver = std::function<void(uint16_t vector, uint64_t address, uint32_t data)>;

  // Offsets are relative to the start of the BAR that holds the table and the PBA.
  MsixTable(uint16_t vectors, uint32_t table_offset, uint32_t pba_offset);

  uint16_t vectors() const { return uint16_t(entries_.size()); }
  uint32_t table_offset() const { return table_offset_; }
  uint32_t pba_offset() const { return pba_offset_; }
  uint32_t table_bytes() const { return uint32_t(entries_.size()) * kEntrySize; }
  uint32_t pba_bytes() const { return ((uint32_t(entries_.size()) + 63) / 64) * 8; }
  bool contains(uint64_t bar_offset) const;

  // Memory accesses: 4 or 8 bytes, naturally aligned (§6.8.2: software must not use other
  // sizes). PBA writes are ignored (its bits are RO). Returns false (read: all ones) and counts
  // a bad access when the size/alignment is wrong or the offset is outside table and PBA.
  bool read(uint64_t bar_offset, unsigned size, uint64_t& value) const;
  bool write(uint64_t bar_offset, unsigned size, uint64_t value);

  // From the MSI-X capability's Message Control (enable bit 15, function mask bit 14).
  void set_control(bool enable, bool function_mask);
  bool enabled() const { return enable_; }
  bool function_masked() const { return function_mask_; }

  FireResult fire(uint16_t vector);
  bool pending(uint16_t vector) const;
  bool masked(uint16_t vector) const;
  uint64_t address(uint16_t vector) const;
  uint32_t data(uint16_t vector) const;

  void set_deliver(Deliver fn) { deliver_ = std::move(fn); }
  void reset();  // every vector masked, addresses/data 0, nothing pending

  uint64_t bad_accesses() const { return bad_accesses_; }
  uint64_t sent() const { return sent_; }
  uint64_t dropped_disabled() const { return dropped_disabled_; }

 private:
  struct Entry {
    uint32_t addr_lo = 0, addr_hi = 0, data = 0, ctrl = kVectorMasked;
  };
  uint32_t read32(uint64_t off) const;
  void write32(uint64_t off, uint32_t v);
  void send(uint16_t v);
  void flush_pending();  // sends every pending vector that is no longer masked

  std::vector<Entry> entries_;
  std::vector<bool> pending_;
  uint32_t table_offset_, pba_offset_;
  bool enable_ = false, function_mask_ = false;
  Deliver deliver_;
  mutable uint64_t bad_accesses_ = 0;
  uint64_t sent_ = 0, dropped_disabled_ = 0;
};

}  // namespace hcaemu::pcie
