#pragma once
// Memory BAR registers with the sizing semantics firmware and Linux rely on (PCIe Base 6.0
// §7.5.1.2.1): the type bits are RO, the address bits below the size are RO 0 and the ones above
// are RW, so writing all ones reads back the size mask. A 64-bit BAR takes two registers; the
// upper one holds address bits 63:32. The same class serves the type-0 header (at 0x10) and the
// SR-IOV VF BARs (at cap + 0x24), which size exactly like this, per VF.
#include <array>
#include <cstdint>

#include "pcie/config_space.h"
#include "pcie/pci_regs.h"

namespace hcaemu::pcie {

struct BarConfig {
  uint64_t size = 0;  // bytes; 0 = BAR not implemented (reads 0, stays 0). Power of two >= 16.
  bool is_64bit = true;
  bool prefetchable = false;
};

// Configured facts about one BAR plus what software has programmed.
struct BarInfo {
  bool present = false;
  uint64_t size = 0;
  bool is_64bit = false;
  bool prefetchable = false;
  uint32_t flags = 0;  // the RO low bits (3:0) as the register reports them
  uint64_t base = 0;   // currently programmed address (flag bits stripped)
};

class BarSet {
 public:
  // Defines six BAR registers at `first_reg` in `cs`. For a 64-bit BAR n, entry n+1 must be
  // unused (size 0): it becomes the upper half. Throws std::invalid_argument on a bad layout.
  BarSet(ConfigSpace& cs, uint16_t first_reg, const std::array<BarConfig, regs::kNumBars>& bars);

  BarInfo info(unsigned index) const;
  uint64_t base(unsigned index) const { return info(index).base; }
  uint64_t size(unsigned index) const { return index < regs::kNumBars ? cfg_[index].size : 0; }
  const std::array<BarConfig, regs::kNumBars>& configs() const { return cfg_; }
  uint16_t register_offset(unsigned index) const { return uint16_t(first_reg_ + 4 * index); }
  // Index of the BAR whose programmed window contains [addr, addr+len), or -1.
  int decode(uint64_t addr, uint64_t len) const;

  // Changes one BAR's size (SR-IOV: VF BAR sizes follow System Page Size). Keeps the address
  // bits that are still RW.
  void resize(unsigned index, uint64_t new_size);

 private:
  void program_masks(unsigned index);

  ConfigSpace& cs_;
  uint16_t first_reg_;
  std::array<BarConfig, regs::kNumBars> cfg_;
  std::array<bool, regs::kNumBars> is_upper_{};
};

// Flag bits a memory BAR reports in bits 3:0.
uint32_t bar_flag_bits(const BarConfig& c);

}  // namespace hcaemu::pcie
