#pragma once
// One VF as a guest sees it through passthrough (what Linux vfio-pci does for a VF, and what we
// serve on a VF's vfio-user socket). The VF's own config space follows SR-IOV §3.4: Vendor and
// Device ID read 0xFFFF, BAR registers read 0, Command.Memory Space is RO 0. The view overlays:
// Vendor = the PF's vendor, Device = the PF's VF Device ID, six BAR registers that size and hold
// addresses like normal BARs with the VF BAR sizes/flags from the PF's SR-IOV capability, and a
// virtual Memory Space bit. Everything else passes through to the VF's PciFunction, which this
// view owns. Create it after VF Enable (the VF BAR sizes are fixed from then on).
#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "pcie/pci_function.h"
#include "sriov/sriov_capability.h"

namespace hcaemu::sriov {

// The FunctionConfig of VF `vf_index` (0-based) of `pf`: same IDs/class/serial/link, is_vf set,
// the SR-IOV config's VF BAR layout and MSI-X vector count.
pcie::FunctionConfig make_vf_function_config(const pcie::FunctionConfig& pf, const SriovConfig& sriov);

class VfConfigView {
 public:
  // `pf_sriov` must outlive the view. Throws std::invalid_argument when the VF's MSI-X table
  // does not fit its (virtual) BAR or vf_index >= TotalVFs.
  VfConfigView(pcie::FunctionConfig vf_cfg, const SriovCapability& pf_sriov, uint16_t vf_index,
               uint16_t pf_vendor_id);

  uint32_t config_read(uint16_t offset, unsigned size) const;
  void config_write(uint16_t offset, unsigned size, uint32_t value);
  void config_read_block(uint16_t offset, std::span<uint8_t> out) const;
  void config_write_block(uint16_t offset, std::span<const uint8_t> in);

  uint16_t vf_index() const { return vf_index_; }
  pcie::PciFunction& function() { return *vf_; }  // the VF itself (FLR callback, MSI-X, ...)
  const pcie::PciFunction& function() const { return *vf_; }
  // Virtual BAR as the guest programmed it (size/flags from the PF's VF BAR n). The vfio-user
  // REGION_INFO size comes from here.
  pcie::BarInfo bar(unsigned index) const { return bars_.info(index); }
  // Where VF `vf_index`'s slice of VF BAR n sits in the PF's VF BAR aperture (host view).
  std::optional<uint64_t> physical_bar_base(unsigned index) const { return sriov_.vf_bar_base(index, vf_index_); }
  bool guest_memory_enable() const;  // the virtual Command.Memory Space bit alone
  // Whether the VF decodes its BARs at all: virtual MSE, and on the PF side VF Enable, VF MSE and
  // this VF being within NumVFs.
  bool memory_space_enabled() const;

 private:
  static constexpr uint16_t kOverlayEnd = pcie::regs::kHeaderEnd;
  uint32_t overlay_mask(uint16_t offset, unsigned size) const;

  std::unique_ptr<pcie::PciFunction> vf_;
  const SriovCapability& sriov_;
  uint16_t vf_index_;
  pcie::ConfigSpace shadow_;  // only the first 64 bytes are used
  pcie::BarSet bars_;
  std::array<uint8_t, kOverlayEnd> vmask_{};  // bits taken from shadow_ instead of the VF
};

}  // namespace hcaemu::sriov
