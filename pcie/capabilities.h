#pragma once
// Builders that lay out the type-0 header and the capability lists at the named offsets of
// pci_regs.h. Standard list: 0x34 -> PCI Express -> Power Management -> MSI-X -> vendor-specific. Extended list from
// 0x100: ARI -> Device Serial Number -> whatever the caller appends (SR-IOV on the PF).
#include <cstdint>

#include "pcie/config_space.h"
#include "pcie/function_config.h"

namespace hcaemu::pcie {

void install_header(ConfigSpace& cs, const FunctionConfig& cfg);      // not the BARs: see BarSet
void install_pcie_cap(ConfigSpace& cs, const FunctionConfig& cfg, uint8_t next);
void install_pm_cap(ConfigSpace& cs, const FunctionConfig& cfg, uint8_t next);
void install_msix_cap(ConfigSpace& cs, const FunctionConfig& cfg, uint8_t next);
void install_vendor_cap(ConfigSpace& cs, uint8_t next);

// The extended capability chain. append() places a capability of `size` bytes (header included)
// at the next 16-byte boundary after the previous one, writes its RO header with next = 0 and
// links the previous header to it. Returns the offset; throws std::length_error when full.
class ExtCapChain {
 public:
  explicit ExtCapChain(ConfigSpace& cs) : cs_(cs) {}
  uint16_t append(uint16_t id, uint8_t version, uint16_t size);
  uint16_t last() const { return last_; }

 private:
  ConfigSpace& cs_;
  uint16_t last_ = 0;  // 0 = chain empty
  uint16_t next_free_ = regs::kExtCapStart;
};

void install_ari_cap(ConfigSpace& cs, uint16_t at, const FunctionConfig& cfg);  // body only
void install_dsn_cap(ConfigSpace& cs, uint16_t at, const FunctionConfig& cfg);  // body only

// Header + standard caps + ARI + DSN, everything a function has before SR-IOV.
void install_standard_layout(ConfigSpace& cs, const FunctionConfig& cfg, ExtCapChain& ext);

// Capability look-up for other components (the tests walk the list on their own).
uint16_t find_capability(const ConfigSpace& cs, uint8_t id);          // 0 = absent
uint16_t find_ext_capability(const ConfigSpace& cs, uint16_t id);     // 0 = absent

}  // namespace hcaemu::pcie
