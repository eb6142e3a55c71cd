#pragma once
// A 4 KiB PCIe configuration space with per-bit access semantics (PCIe Base 6.0 §7.4 register
// attributes). Each byte carries: value, default, RW mask, RW1C mask, sticky mask (RWS/RW1CS/ROS:
// survives every reset but a cold one) and an FLR-keep mask (fields §6.6.2 says an FLR leaves
// alone, such as Max_Payload_Size). Bits in no mask are RO: HwInit, RsvdP (keep their value) and
// RsvdZ (stored as 0, so they read 0).
//
// Access rule (decided here): an access of 1, 2 or 4 bytes is accepted when it stays inside one
// dword, which is what a single CfgRd/CfgWr TLP with byte enables can express; so a 2-byte
// access at offset 1 is fine, a 4-byte access at offset 2 is not. Rejected or out-of-range
// reads return all ones (as a master abort would); rejected writes are dropped and counted.
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace hcaemu::pcie {

enum class ResetKind : uint8_t {
  kCold,  // power-on / fundamental cold reset: everything back to defaults, sticky bits too
  kHot,   // conventional (hot/warm) reset: sticky bits keep their value
  kFlr,   // function-level reset (PCIe §6.6.2): sticky bits and FLR-keep fields keep their value
};

// Masks for one register, used when a builder defines it.
struct RegSpec {
  uint32_t value = 0;     // default, loaded now and on every reset (unless sticky/kept)
  uint32_t rw = 0;        // bits software may write
  uint32_t rw1c = 0;      // bits software clears by writing 1
  uint32_t sticky = 0;    // bits that survive hot reset and FLR
  uint32_t flr_keep = 0;  // bits that survive FLR only
};

class ConfigSpace {
 public:
  static constexpr uint32_t kSize = 4096;

  struct WriteEvent {
    uint16_t offset;     // start of the observed range
    unsigned length;     // 1..4
    uint32_t old_value;  // the observed range before the write
    uint32_t new_value;  // after the masked write
  };
  using WriteObserver = std::function<void(const WriteEvent&)>;
  using ResetObserver = std::function<void(ResetKind)>;

  ConfigSpace();

  // ---- Software (guest/host) accesses ----
  uint32_t read(uint32_t offset, unsigned size) const;
  bool write(uint32_t offset, unsigned size, uint32_t value);  // false when rejected
  // Bulk access for a vfio-user REGION_READ/WRITE of any count: split into dword-contained
  // pieces. A range leaving the 4 KiB space is rejected whole (read: all 0xFF).
  void read_block(uint32_t offset, std::span<uint8_t> out) const;
  bool write_block(uint32_t offset, std::span<const uint8_t> in);

  // ---- Device-side setup and state (no masks applied) ----
  void define(uint16_t offset, unsigned size, const RegSpec& spec);
  uint32_t get(uint16_t offset, unsigned size) const;
  void set(uint16_t offset, unsigned size, uint32_t value);  // hardware update, default unchanged
  void set_rw_mask(uint16_t offset, unsigned size, uint32_t mask);  // e.g. lock a field
  uint32_t rw_mask(uint16_t offset, unsigned size) const;

  // Called after a software write that touches [offset, offset+length); length 1..4 and the
  // range must stay inside one dword. Observers run in registration order.
  void add_write_observer(uint16_t offset, unsigned length, WriteObserver fn);
  // Called at the end of reset(), after the registers hold their post-reset values.
  void add_reset_observer(ResetObserver fn);

  void reset(ResetKind kind);

  uint64_t rejected_accesses() const { return rejected_; }

 private:
  struct Observer {
    uint16_t offset;
    unsigned length;
    WriteObserver fn;
  };
  static bool access_ok(uint32_t offset, unsigned size);
  uint32_t get_field(const std::array<uint8_t, kSize>& a, uint16_t offset, unsigned size) const;
  void put_field(std::array<uint8_t, kSize>& a, uint16_t offset, unsigned size, uint32_t v);

  std::array<uint8_t, kSize> value_{}, default_{}, rw_{}, rw1c_{}, sticky_{}, flr_keep_{};
  std::vector<Observer> write_observers_;
  std::vector<ResetObserver> reset_observers_;
  mutable uint64_t rejected_ = 0;
};

}  // namespace hcaemu::pcie
