#include "pcie/capabilities.h"

#include <bit>
#include <stdexcept>

namespace hcaemu::pcie {
using namespace regs;

namespace {

// Encoded size field: 128 << n bytes (PCIe §7.5.3.3 MPS Supported, §7.5.3.4 MPS/MRRS).
uint32_t size_code(uint16_t bytes) { return uint32_t(std::countr_zero(unsigned(bytes)) - 7); }

void check(const FunctionConfig& c) {
  if (c.link_gen < 1 || c.link_gen > 5) throw std::invalid_argument("link_gen must be 1..5");
  if (!std::has_single_bit(unsigned(c.link_width)) || c.link_width > 32)
    throw std::invalid_argument("link_width must be 1, 2, 4, 8, 16 or 32");
  if (!std::has_single_bit(unsigned(c.mps_supported)) || c.mps_supported < 128 || c.mps_supported > 4096)
    throw std::invalid_argument("mps_supported must be a power of two in 128..4096");
  if (c.msix_vectors == 0 || c.msix_vectors > 2048) throw std::invalid_argument("msix_vectors must be 1..2048");
  if (c.msix_table_bar >= kNumBars || c.msix_pba_bar >= kNumBars) throw std::invalid_argument("MSI-X BIR");
  const uint64_t t_end = c.msix_table_offset + uint64_t(c.msix_vectors) * 16;
  const uint64_t p_end = c.msix_pba_offset + (uint64_t(c.msix_vectors) + 63) / 64 * 8;
  // A VF's own BAR config is unused (its BARs come from the PF's SR-IOV cap), so skip the fit check.
  if (!c.is_vf && (t_end > c.bars[c.msix_table_bar].size || p_end > c.bars[c.msix_pba_bar].size))
    throw std::invalid_argument("MSI-X table/PBA do not fit their BAR");
}

}  // namespace

void install_header(ConfigSpace& cs, const FunctionConfig& c) {
  check(c);
  const bool vf = c.is_vf;
  // SR-IOV §3.4.1.1/2: a VF's Vendor and Device ID read 0xFFFF; software uses the PF's values.
  cs.define(kVendorId, 2, {.value = vf ? 0xFFFFu : c.vendor_id});
  cs.define(kDeviceId, 2, {.value = vf ? 0xFFFFu : c.device_id});
  // Command: bits 15:11 and the legacy PCI bits are RsvdP/RO 0. SR-IOV §3.4.1.3: on a VF only
  // Bus Master is RW; Memory Space is RO 0 (the PF's VF MSE governs VF memory).
  const uint16_t cmd_rw = vf ? kCmdBusMaster
                             : (kCmdMemorySpace | kCmdBusMaster | kCmdParityErrorResp | kCmdSerrEnable | kCmdIntxDisable);
  cs.define(kCommand, 2, {.rw = cmd_rw});
  cs.define(kStatus, 2, {.value = kStatusCapList, .rw1c = kStatusRw1cMask});
  cs.define(kRevisionId, 1, {.value = c.revision_id});
  cs.define(kClassCode, 3, {.value = c.class_code & 0xFFFFFF});
  cs.define(kCacheLineSize, 1, {.rw = vf ? 0u : 0xFFu});  // RW with no effect (PCIe §7.5.1.1.7)
  cs.define(kHeaderType, 1, {.value = 0x00});             // type 0, single function
  cs.define(kSubsystemVendorId, 2, {.value = c.subsystem_vendor_id});
  cs.define(kSubsystemId, 2, {.value = c.subsystem_id});
  cs.define(kExpansionRom, 4, {});                        // no ROM
  cs.define(kCapPtr, 1, {.value = kPcieCapOffset});
  cs.define(kInterruptLine, 1, {.rw = vf ? 0u : 0xFFu});
  cs.define(kInterruptPin, 1, {.value = 0});
}

void install_pcie_cap(ConfigSpace& cs, const FunctionConfig& c, uint8_t next) {
  const uint16_t b = kPcieCapOffset;
  const bool vf = c.is_vf;
  cs.define(b, 1, {.value = kCapIdExp});
  cs.define(b + 1, 1, {.value = next});
  cs.define(b + kExpFlags, 2, {.value = kExpVersion2 | (kExpTypeEndpoint << 4)});
  cs.define(b + kExpDevCap, 4,
            {.value = size_code(c.mps_supported) | kDevCapExtTag | kDevCapRoleBasedErr | kDevCapFlr});
  // Device Control (§7.5.3.4). Defaults: relaxed ordering and no-snoop enabled, MPS 128 B,
  // MRRS 512 B. MPS survives FLR (§6.6.2 lists it among the link-level fields an FLR keeps);
  // Aux Power PM Enable is RWS. On a VF every field but Initiate FLR is RsvdP (SR-IOV §3.5.4).
  const uint16_t devctl_default = kDevCtlRelaxedOrder | kDevCtlNoSnoop | (2u << kDevCtlMrrsShift);
  const uint16_t devctl_rw = vf ? kDevCtlInitiateFlr
                                : (kDevCtlErrReportMask | kDevCtlRelaxedOrder | kDevCtlMpsMask | kDevCtlExtTag |
                                   kDevCtlAuxPower | kDevCtlNoSnoop | kDevCtlMrrsMask | kDevCtlInitiateFlr);
  cs.define(b + kExpDevCtl, 2,
            {.value = vf ? 0u : devctl_default, .rw = devctl_rw, .sticky = vf ? 0u : kDevCtlAuxPower,
             .flr_keep = vf ? 0u : kDevCtlMpsMask});
  cs.define(b + kExpDevSta, 2, {.rw1c = kDevStaErrMask});
  // Link (§7.5.3.6-8): max speed/width from the config; the link trained at that speed/width.
  cs.define(b + kExpLnkCap, 4, {.value = c.link_gen | (uint32_t(c.link_width) << kLnkCapWidthShift) | kLnkCapAspmOptComp});
  cs.define(b + kExpLnkCtl, 2, {.rw = vf ? 0u : kLnkCtlRwMask, .flr_keep = vf ? 0u : kLnkCtlRwMask});
  cs.define(b + kExpLnkSta, 2, {.value = c.link_gen | (uint32_t(c.link_width) << 4) | kLnkStaSlotClock});
  // Device Capabilities 2 (§7.5.3.15): completion timeout ranges A-D, timeout disable supported.
  cs.define(b + kExpDevCap2, 4, {.value = 0xF | (1u << 4)});
  // Device Control 2 (§7.5.3.16): completion timeout value 3:0 and disable 4 RW; AtomicOp
  // Requester Enable 6 RW (RsvdP on a VF).
  cs.define(b + kExpDevCtl2, 2, {.rw = vf ? 0u : 0x005Fu});
  cs.define(b + kExpDevSta2, 2, {});
  // Link Capabilities 2: Supported Link Speeds Vector bits 1..gen.
  cs.define(b + kExpLnkCap2, 4, {.value = ((1u << c.link_gen) - 1) << 1});
  // Link Control 2: Target Link Speed 3:0 is RWS on the PF (defaults to the max), RsvdP on a VF.
  cs.define(b + kExpLnkCtl2, 2, {.value = c.link_gen, .rw = vf ? 0u : 0xFu, .sticky = vf ? 0u : 0xFu});
  cs.define(b + kExpLnkSta2, 2, {});
}

void install_pm_cap(ConfigSpace& cs, const FunctionConfig& c, uint8_t next) {
  const uint16_t b = kPmCapOffset;
  cs.define(b, 1, {.value = kCapIdPm});
  cs.define(b + 1, 1, {.value = next});
  // PMC (PM §3.2.3): version 1.2, no D1/D2, no PME (so PME_En/PME_Status are RO 0).
  cs.define(b + kPmCaps, 2, {.value = kPmcVersion12});
  // PMCSR (PM §3.2.4): power state RW (D0/D3hot; writes of D1/D2 are dropped by PciFunction),
  // No_Soft_Reset = 1: D3hot -> D0 keeps the function's state.
  cs.define(b + kPmCtrl, 2, {.value = kPmcsrNoSoftReset, .rw = kPmcsrStateMask});
  cs.define(b + 6, 2, {});  // PMCSR_BSE and Data: unimplemented
}

void install_msix_cap(ConfigSpace& cs, const FunctionConfig& c, uint8_t next) {
  const uint16_t b = kMsixCapOffset;
  cs.define(b, 1, {.value = kCapIdMsix});
  cs.define(b + 1, 1, {.value = next});
  cs.define(b + kMsixCtrl, 2, {.value = uint32_t(c.msix_vectors - 1) & kMsixCtrlTableSizeMask,
                               .rw = kMsixCtrlEnable | kMsixCtrlFuncMask});
  cs.define(b + kMsixTable, 4, {.value = c.msix_table_offset | c.msix_table_bar});
  cs.define(b + kMsixPba, 4, {.value = c.msix_pba_offset | c.msix_pba_bar});
}

void install_vendor_cap(ConfigSpace& cs, uint8_t next) {
  // The ConnectX vendor-specific capability (VSC) is a gateway into the device's internal address
  // spaces (crash dumps, semaphores). None is modelled: every register reads 0 and ignores writes,
  // and the ctrl register's "space supported" status stays 0, so mlx5 finds the capability at
  // probe and, should it ever try a gateway access, is told the space is not supported.
  const uint16_t b = kVendorCapOffset;
  cs.define(b, 1, {.value = kCapIdVendor});
  cs.define(b + 1, 1, {.value = next});
  cs.define(b + 2, 1, {.value = kVendorCapSize});
  cs.define(b + 3, 1, {});
  for (uint16_t off = b + 4; off < b + kVendorCapSize; off += 4) cs.define(off, 4, {});
}

uint16_t ExtCapChain::append(uint16_t id, uint8_t version, uint16_t size) {
  if (size < kExtHdrSize || (size & 3)) throw std::invalid_argument("extended cap size must be a dword multiple");
  const uint16_t at = next_free_;
  if (uint32_t(at) + size > ConfigSpace::kSize) throw std::length_error("extended config space full");
  cs_.define(at, 4, {.value = ext_header(id, version, 0)});
  for (uint16_t off = at + 4; off < at + size; off += 4) cs_.define(off, 4, {});
  if (last_) {
    const uint32_t h = cs_.get(last_, 4);
    cs_.define(last_, 4, {.value = (h & 0x000FFFFF) | (uint32_t(at) << 20)});
  }
  last_ = at;
  next_free_ = uint16_t((at + size + kExtCapAlign - 1) & ~(kExtCapAlign - 1));
  return at;
}

void install_ari_cap(ConfigSpace& cs, uint16_t at, const FunctionConfig& c) {
  // ARI Capability (PCIe §7.8.7.2): no MFVC/ACS function groups; next function number 15:8.
  cs.define(at + kAriCap, 2, {.value = uint32_t(c.ari_next_function) << 8});
  cs.define(at + kAriCtl, 2, {});  // function-group enables are RO 0 without the capabilities
}

void install_dsn_cap(ConfigSpace& cs, uint16_t at, const FunctionConfig& c) {
  cs.define(at + kDsnLow, 4, {.value = uint32_t(c.serial_number)});
  cs.define(at + kDsnHigh, 4, {.value = uint32_t(c.serial_number >> 32)});
}

void install_standard_layout(ConfigSpace& cs, const FunctionConfig& c, ExtCapChain& ext) {
  install_header(cs, c);
  install_pcie_cap(cs, c, kPmCapOffset);
  install_pm_cap(cs, c, kMsixCapOffset);
  install_msix_cap(cs, c, kVendorCapOffset);
  install_vendor_cap(cs, 0);
  const uint16_t dsn = ext.append(kExtCapIdDsn, 1, kDsnCapSize);
  install_dsn_cap(cs, dsn, c);
  const uint16_t ari = ext.append(kExtCapIdAri, 1, kAriCapSize);
  install_ari_cap(cs, ari, c);
  if (ari != kAriCapOffset || dsn != kDsnCapOffset) throw std::logic_error("ext cap layout drifted from pci_regs.h");
}

uint16_t find_capability(const ConfigSpace& cs, uint8_t id) {
  if (!(cs.get(kStatus, 2) & kStatusCapList)) return 0;
  uint16_t pos = cs.get(kCapPtr, 1) & ~3u;
  for (int ttl = 48; ttl > 0 && pos >= kHeaderEnd; --ttl) {
    const uint32_t ent = cs.get(pos, 2);
    if ((ent & 0xFF) == id) return pos;
    pos = (ent >> 8) & ~3u;
  }
  return 0;
}

uint16_t find_ext_capability(const ConfigSpace& cs, uint16_t id) {
  uint16_t pos = kExtCapStart;
  for (int ttl = (ConfigSpace::kSize - kExtCapStart) / 8; ttl > 0 && pos >= kExtCapStart; --ttl) {
    const uint32_t h = cs.get(pos, 4);
    if (h == 0) return 0;
    if ((h & 0xFFFF) == id) return pos;
    pos = uint16_t(h >> 20) & ~3u;
  }
  return 0;
}

}  // namespace hcaemu::pcie
