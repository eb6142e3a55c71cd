#include "pcie/bars.h"

#include <bit>
#include <stdexcept>

namespace hcaemu::pcie {

uint32_t bar_flag_bits(const BarConfig& c) {
  return (c.is_64bit ? regs::kBarMemType64 : 0) | (c.prefetchable ? regs::kBarPrefetch : 0);
}

BarSet::BarSet(ConfigSpace& cs, uint16_t first_reg, const std::array<BarConfig, regs::kNumBars>& bars)
    : cs_(cs), first_reg_(first_reg), cfg_(bars) {
  for (unsigned i = 0; i < regs::kNumBars; ++i) {
    const BarConfig& c = cfg_[i];
    if (c.size == 0) continue;
    if (is_upper_[i]) throw std::invalid_argument("BAR overlaps the upper half of a 64-bit BAR");
    if (!std::has_single_bit(c.size) || c.size < 16) throw std::invalid_argument("BAR size must be a power of two >= 16");
    if (c.is_64bit) {
      if (i + 1 >= regs::kNumBars) throw std::invalid_argument("64-bit BAR in the last slot");
      is_upper_[i + 1] = true;
    } else if (c.size > (uint64_t(1) << 31)) {
      throw std::invalid_argument("32-bit BAR larger than 2 GiB");
    }
  }
  for (unsigned i = 0; i < regs::kNumBars; ++i) {
    if (is_upper_[i] && cfg_[i].size != 0) throw std::invalid_argument("upper half of 64-bit BAR must be unused");
    cs_.define(register_offset(i), 4, RegSpec{});  // unimplemented BARs: RO 0
  }
  for (unsigned i = 0; i < regs::kNumBars; ++i)
    if (cfg_[i].size) program_masks(i);
}

void BarSet::program_masks(unsigned i) {
  const BarConfig& c = cfg_[i];
  // Address bits at and above log2(size) are RW; bits 3:0 are the RO type flags.
  const uint64_t addr_mask = ~(c.size - 1);
  const uint32_t lo_rw = uint32_t(addr_mask) & ~regs::kBarFlagMask;
  const uint32_t lo_old = cs_.get(register_offset(i), 4) & lo_rw;
  cs_.define(register_offset(i), 4, RegSpec{.value = bar_flag_bits(c), .rw = lo_rw});
  cs_.set(register_offset(i), 4, bar_flag_bits(c) | lo_old);
  if (c.is_64bit) {
    const uint32_t hi_rw = uint32_t(addr_mask >> 32);
    const uint32_t hi_old = cs_.get(register_offset(i + 1), 4) & hi_rw;
    cs_.define(register_offset(i + 1), 4, RegSpec{.value = 0, .rw = hi_rw});
    cs_.set(register_offset(i + 1), 4, hi_old);
  }
}

void BarSet::resize(unsigned index, uint64_t new_size) {
  if (index >= regs::kNumBars || cfg_[index].size == 0) throw std::invalid_argument("resize of an absent BAR");
  if (!std::has_single_bit(new_size) || new_size < 16) throw std::invalid_argument("BAR size must be a power of two >= 16");
  cfg_[index].size = new_size;
  program_masks(index);
}

BarInfo BarSet::info(unsigned i) const {
  BarInfo r;
  if (i >= regs::kNumBars || cfg_[i].size == 0) return r;
  const BarConfig& c = cfg_[i];
  r.present = true;
  r.size = c.size;
  r.is_64bit = c.is_64bit;
  r.prefetchable = c.prefetchable;
  r.flags = bar_flag_bits(c);
  uint64_t base = cs_.get(register_offset(i), 4) & ~regs::kBarFlagMask;
  if (c.is_64bit) base |= uint64_t(cs_.get(register_offset(i + 1), 4)) << 32;
  r.base = base;
  return r;
}

int BarSet::decode(uint64_t addr, uint64_t len) const {
  for (unsigned i = 0; i < regs::kNumBars; ++i) {
    const BarInfo b = info(i);
    if (!b.present || b.base == 0) continue;  // 0 = not assigned
    if (addr >= b.base && len <= b.size && addr - b.base <= b.size - len) return int(i);
  }
  return -1;
}

}  // namespace hcaemu::pcie
