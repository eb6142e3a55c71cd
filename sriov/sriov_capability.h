#pragma once
// The SR-IOV extended capability of a PF (PCI-SIG SR-IOV 1.1 §3.3; PCIe Base 6.0 §9.3.3),
// installed into the PF's config space. It owns the register semantics only; whoever composes
// the HCA creates and tears down VFs when the listener says so.
#include <array>
#include <cstdint>
#include <optional>

#include "pcie/bars.h"
#include "pcie/function_config.h"
#include "pcie/pci_function.h"

namespace hcaemu::sriov {

// Register offsets inside the capability (SR-IOV 1.1 §3.3, Figure 3-1).
namespace sr {
inline constexpr uint16_t kId = 0x0010, kVersion = 1, kSize = 0x40;
inline constexpr uint16_t kCaps = 0x04;          // 32: VF Migration Capable 0, ARI Hier. Preserved 1
inline constexpr uint16_t kControl = 0x08;       // 16
inline constexpr uint16_t kStatus = 0x0A;        // 16: VF Migration Status (RW1C, never set here)
inline constexpr uint16_t kInitialVfs = 0x0C;    // 16 RO
inline constexpr uint16_t kTotalVfs = 0x0E;      // 16 RO
inline constexpr uint16_t kNumVfs = 0x10;        // 16 RW while VF Enable = 0
inline constexpr uint16_t kFuncDepLink = 0x12;   // 8 RO
inline constexpr uint16_t kFirstVfOffset = 0x14; // 16 RO
inline constexpr uint16_t kVfStride = 0x16;      // 16 RO
inline constexpr uint16_t kVfDeviceId = 0x1A;    // 16 RO
inline constexpr uint16_t kSupportedPageSizes = 0x1C;  // 32 RO
inline constexpr uint16_t kSystemPageSize = 0x20;      // 32 RW, one bit set; bit n = 2^(n+12) B
inline constexpr uint16_t kVfBar0 = 0x24;        // six dwords to 0x3B
inline constexpr uint16_t kMigrationArray = 0x3C;  // 32 RO 0: no VF migration
// Capabilities bits (§3.3.3)
inline constexpr uint32_t kCapAriPreserved = 1u << 1;
// Control bits (§3.3.4)
inline constexpr uint16_t kCtlVfEnable = 1u << 0;
inline constexpr uint16_t kCtlVfMigrationEnable = 1u << 1;  // RO 0: VF Migration Capable = 0
inline constexpr uint16_t kCtlVfMigrationIntEnable = 1u << 2;  // RO 0 likewise
inline constexpr uint16_t kCtlVfMse = 1u << 3;
inline constexpr uint16_t kCtlAriHierarchy = 1u << 4;
}  // namespace sr

struct SriovConfig {
  uint16_t total_vfs = 8;         // ConnectX-7 firmware allows at most 127 (calibration.md)
  uint16_t vf_device_id = 0x1018; // ConnectX-5 VF
  uint16_t first_vf_offset = 1;   // constant: VFs follow the PF at function 1, 2, ...
  uint16_t vf_stride = 1;
  uint8_t function_dependency_link = 0;  // our own function number: no dependencies
  uint32_t supported_page_sizes = 0x553; // 4K, 8K, 64K, 256K, 1M, 4M (the spec's required set)
  std::array<pcie::BarConfig, pcie::regs::kNumBars> vf_bars = pcie::hca_bars(pcie::kVfHcaBarSize);
  uint16_t vf_msix_vectors = 32;  // used by make_vf_function_config()
};

class SriovListener {
 public:
  virtual ~SriovListener() = default;
  virtual void vfs_enabled(uint16_t num_vfs) = 0;   // VF Enable 0 -> 1
  virtual void vfs_disabled() = 0;                  // VF Enable 1 -> 0 (written, or PF reset)
  virtual void vf_memory_space_changed(bool enabled) = 0;  // VF MSE toggled
};

class SriovCapability {
 public:
  // Appends the capability to the PF's extended list. The PF must outlive this object.
  SriovCapability(pcie::PciFunction& pf, SriovConfig cfg);
  SriovCapability(const SriovCapability&) = delete;
  SriovCapability& operator=(const SriovCapability&) = delete;

  uint16_t offset() const { return base_; }
  const SriovConfig& config() const { return cfg_; }
  void set_listener(SriovListener* l) { listener_ = l; }

  bool vf_enabled() const;
  bool vf_memory_space_enabled() const;
  bool ari_capable_hierarchy() const;
  uint16_t num_vfs() const;
  uint16_t total_vfs() const { return cfg_.total_vfs; }
  uint16_t first_vf_offset() const { return cfg_.first_vf_offset; }
  uint16_t vf_stride() const { return cfg_.vf_stride; }
  uint16_t vf_device_id() const { return cfg_.vf_device_id; }
  uint64_t system_page_size() const;  // bytes

  // VF BAR n as one VF sees it: per-VF size (>= system page size), flags, and the programmed
  // base of VF 0's slice. The aperture the PF decodes is NumVFs x size.
  pcie::BarInfo vf_bar(unsigned index) const;
  uint64_t vf_bar_aperture(unsigned index) const;
  // Base address of VF `vf`'s slice of VF BAR `index`: base + vf x size (SR-IOV §3.3.14).
  // Empty when the BAR is absent or vf >= NumVFs.
  std::optional<uint64_t> vf_bar_base(unsigned index, uint16_t vf) const;
  // Routing ID (bus << 8 | devfn) of VF `vf` (0-based): PF RID + First VF Offset + vf x Stride
  // (§3.3.10-11), modulo 2^16.
  uint16_t vf_routing_id(uint16_t pf_routing_id, uint16_t vf) const;

  uint64_t rejected_writes() const { return rejected_writes_; }

 private:
  uint16_t reg(uint16_t rel) const { return uint16_t(base_ + rel); }
  void on_control(uint32_t old_ctl, uint32_t new_ctl);
  void on_num_vfs(uint32_t old_v, uint32_t new_v);
  void on_page_size(uint32_t old_v, uint32_t new_v);
  void on_reset();
  void apply_locks(bool enabled);
  void resize_vf_bars();

  pcie::PciFunction& pf_;
  SriovConfig cfg_;
  uint16_t base_;
  std::optional<pcie::BarSet> vf_bars_;
  SriovListener* listener_ = nullptr;
  bool enabled_ = false, mse_ = false;  // last state reported to the listener
  uint64_t rejected_writes_ = 0;
};

}  // namespace hcaemu::sriov
