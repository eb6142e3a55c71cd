#pragma once
// Everything that distinguishes one PCIe function of the HCA from another. The defaults describe
// a ConnectX-5-like PF (mlx5_core binds PCI ID 15b3:1017; its VFs are 15b3:1018).
#include <array>
#include <cstdint>

#include "pcie/bars.h"
#include "pcie/pci_regs.h"

namespace hcaemu::pcie {

// BAR layout decided for the HCA. BAR0: HCA registers (init segment, command interface) and the
// UAR/doorbell pages; prefetchable like a real ConnectX. BAR2: MSI-X table + PBA alone, so QEMU
// can overlay them without splitting an mmap (vfio-user.md §6). BAR2 is 64-bit non-prefetchable:
// the table must not be prefetchable (reads of PBA/vector control must hit the device), and
// 64-bit keeps BARs in identical pairs (0/1, 2/3) for PF and VFs and lets firmware place the
// window above 4 GiB on a root bus; behind a bridge it still fits the 32-bit window.
inline constexpr unsigned kHcaBar = 0;
inline constexpr unsigned kMsixBar = 2;
inline constexpr uint64_t kPfHcaBarSize = 32ull << 20;  // 32 MiB
inline constexpr uint64_t kVfHcaBarSize = 1ull << 20;   // per VF; used by sriov defaults
inline constexpr uint64_t kMsixBarSize = 16ull << 10;   // 16 KiB: table at 0, PBA at 0x2000
inline constexpr uint32_t kMsixTableOffset = 0x0000;
inline constexpr uint32_t kMsixPbaOffset = 0x2000;

constexpr std::array<BarConfig, regs::kNumBars> hca_bars(uint64_t hca_bar_size) {
  std::array<BarConfig, regs::kNumBars> b{};
  b[kHcaBar] = BarConfig{.size = hca_bar_size, .is_64bit = true, .prefetchable = true};
  b[kMsixBar] = BarConfig{.size = kMsixBarSize, .is_64bit = true, .prefetchable = false};
  return b;
}

struct FunctionConfig {
  uint16_t vendor_id = 0x15b3;          // Mellanox/NVIDIA
  uint16_t device_id = 0x1017;          // ConnectX-5 PF
  uint8_t revision_id = 0x00;
  uint32_t class_code = 0x020000;       // Ethernet controller, as real ConnectX reports
  uint16_t subsystem_vendor_id = 0x15b3;
  uint16_t subsystem_id = 0x0007;
  std::array<BarConfig, regs::kNumBars> bars = hca_bars(kPfHcaBarSize);
  uint16_t msix_vectors = 64;           // table size; 64 vectors fit in the 8 KiB before the PBA
  uint8_t msix_table_bar = kMsixBar;
  uint32_t msix_table_offset = kMsixTableOffset;
  uint8_t msix_pba_bar = kMsixBar;
  uint32_t msix_pba_offset = kMsixPbaOffset;
  uint8_t link_gen = 3;                 // 1..5 = 2.5/5/8/16/32 GT/s
  uint8_t link_width = 16;              // lanes: 1, 2, 4, 8, 16, 32
  uint16_t mps_supported = 512;         // bytes, 128..4096
  uint64_t serial_number = 0x0002c90300000001ull;  // EUI-64 style, Mellanox OUI 00:02:c9
  bool is_vf = false;                   // SR-IOV §3.4: VF header rules (IDs 0xFFFF, BARs 0, no MSE)
  uint8_t ari_next_function = 0;        // ARI cap: next function number in this device (0 = last)
};

}  // namespace hcaemu::pcie
