#pragma once
// Register offsets and bit fields of a PCIe type-0 function, each next to the section it comes from.
// PCI = PCI Local Bus 3.0; PCIe = PCI Express Base 6.0; PM = PCI Bus Power Management 1.2.
// Layout is data: builders and tests both read these names, nobody writes raw offsets.
#include <cstdint>

namespace hcaemu::pcie::regs {

// ---- Type 0 header (PCI §6.1, PCIe §7.5.1.1/§7.5.1.2) ----
inline constexpr uint16_t kVendorId = 0x00;       // RO
inline constexpr uint16_t kDeviceId = 0x02;       // RO
inline constexpr uint16_t kCommand = 0x04;        // PCIe §7.5.1.1.3
inline constexpr uint16_t kStatus = 0x06;         // PCIe §7.5.1.1.4
inline constexpr uint16_t kRevisionId = 0x08;     // RO
inline constexpr uint16_t kClassCode = 0x09;      // RO, 3 bytes: prog-if, subclass, base class
inline constexpr uint16_t kCacheLineSize = 0x0C;  // RW, no effect on PCIe (§7.5.1.1.7)
inline constexpr uint16_t kLatencyTimer = 0x0D;   // RO 0 on PCIe
inline constexpr uint16_t kHeaderType = 0x0E;     // RO; bit 7 multi-function
inline constexpr uint16_t kBist = 0x0F;           // RO 0: no BIST
inline constexpr uint16_t kBar0 = 0x10;           // PCIe §7.5.1.2.1, six dwords to 0x27
inline constexpr unsigned kNumBars = 6;
inline constexpr uint16_t kCardbusCis = 0x28;     // RO 0
inline constexpr uint16_t kSubsystemVendorId = 0x2C;
inline constexpr uint16_t kSubsystemId = 0x2E;
inline constexpr uint16_t kExpansionRom = 0x30;   // RO 0: no ROM, so the BIOS sizing read-back is 0
inline constexpr uint16_t kCapPtr = 0x34;         // RO; low 2 bits reserved
inline constexpr uint16_t kInterruptLine = 0x3C;  // RW scratch for software (PF), RO 0 on a VF
inline constexpr uint16_t kInterruptPin = 0x3D;   // RO 0: no INTx, MSI-X only
inline constexpr uint16_t kMinGnt = 0x3E;
inline constexpr uint16_t kMaxLat = 0x3F;
inline constexpr uint16_t kHeaderEnd = 0x40;

// Command bits (PCIe §7.5.1.1.3)
inline constexpr uint16_t kCmdIoSpace = 1u << 0;          // RO 0: no I/O BARs
inline constexpr uint16_t kCmdMemorySpace = 1u << 1;      // RW (RO 0 on a VF, SR-IOV §3.4.1.3)
inline constexpr uint16_t kCmdBusMaster = 1u << 2;        // RW
inline constexpr uint16_t kCmdParityErrorResp = 1u << 6;  // RW (RsvdP on a VF)
inline constexpr uint16_t kCmdSerrEnable = 1u << 8;       // RW (RsvdP on a VF)
inline constexpr uint16_t kCmdIntxDisable = 1u << 10;     // RW (RO 0 on a VF)

// Status bits (PCIe §7.5.1.1.4)
inline constexpr uint16_t kStatusCapList = 1u << 4;             // RO 1
inline constexpr uint16_t kStatusMasterDataParity = 1u << 8;    // RW1C
inline constexpr uint16_t kStatusSignaledTargetAbort = 1u << 11;
inline constexpr uint16_t kStatusReceivedTargetAbort = 1u << 12;
inline constexpr uint16_t kStatusReceivedMasterAbort = 1u << 13;
inline constexpr uint16_t kStatusSignaledSystemError = 1u << 14;
inline constexpr uint16_t kStatusDetectedParityError = 1u << 15;
inline constexpr uint16_t kStatusRw1cMask = 0xF900;

// BAR low bits (PCIe §7.5.1.2.1)
inline constexpr uint32_t kBarMemType64 = 0x4;   // bits 2:1 = 10b
inline constexpr uint32_t kBarPrefetch = 0x8;
inline constexpr uint32_t kBarFlagMask = 0xF;

// ---- Capability IDs (PCI Code and ID Assignment §2, §3) ----
inline constexpr uint8_t kCapIdPm = 0x01;
inline constexpr uint8_t kCapIdExp = 0x10;
inline constexpr uint8_t kCapIdMsix = 0x11;
inline constexpr uint8_t kCapIdVendor = 0x09;
inline constexpr uint16_t kExtCapIdDsn = 0x0003;
inline constexpr uint16_t kExtCapIdAri = 0x000E;
inline constexpr uint16_t kExtCapIdSriov = 0x0010;

// ---- Where our capabilities live (chosen here; list order PCIe -> PM -> MSI-X -> vendor) ----
inline constexpr uint16_t kPcieCapOffset = 0x40;  // 0x3C bytes, to 0x7B
inline constexpr uint16_t kPmCapOffset = 0x80;    // 8 bytes
inline constexpr uint16_t kMsixCapOffset = 0x90;  // 12 bytes
// Vendor-specific capability as on a ConnectX (mlx5 looks for it at probe and warns without it):
// header, then the gateway registers ctrl/space, counter, semaphore, address, data.
inline constexpr uint16_t kVendorCapOffset = 0xa0;  // 24 bytes
inline constexpr uint8_t kVendorCapSize = 0x18;
inline constexpr uint16_t kExtCapStart = 0x100;   // PCIe §7.6: the first extended header is here
// DSN comes first: QEMU hides ARI and SR-IOV from its guests, and a hidden capability at 0x100
// shows in the guest as a "Null" header; DSN at 0x100 keeps the guest's list clean.
inline constexpr uint16_t kDsnCapOffset = 0x100;  // 12 bytes
inline constexpr uint16_t kAriCapOffset = 0x110;  // 8 bytes
inline constexpr uint16_t kFirstFreeExtOffset = 0x120;  // SR-IOV lands here on the PF
inline constexpr unsigned kExtCapAlign = 16;      // our allocator's alignment (spec needs only 4)

// ---- PCI Express Capability (PCIe §7.5.3), offsets from the cap start ----
inline constexpr uint16_t kExpFlags = 0x02;     // version 3:0, device/port type 7:4
inline constexpr uint16_t kExpDevCap = 0x04;
inline constexpr uint16_t kExpDevCtl = 0x08;
inline constexpr uint16_t kExpDevSta = 0x0A;
inline constexpr uint16_t kExpLnkCap = 0x0C;
inline constexpr uint16_t kExpLnkCtl = 0x10;
inline constexpr uint16_t kExpLnkSta = 0x12;
inline constexpr uint16_t kExpDevCap2 = 0x24;
inline constexpr uint16_t kExpDevCtl2 = 0x28;
inline constexpr uint16_t kExpDevSta2 = 0x2A;
inline constexpr uint16_t kExpLnkCap2 = 0x2C;
inline constexpr uint16_t kExpLnkCtl2 = 0x30;
inline constexpr uint16_t kExpLnkSta2 = 0x32;
inline constexpr uint16_t kExpCapSize = 0x3C;
inline constexpr uint16_t kExpVersion2 = 0x2;
inline constexpr uint16_t kExpTypeEndpoint = 0x0;          // bits 7:4 = 0000b
// Device Capabilities (§7.5.3.3)
inline constexpr uint32_t kDevCapMpsMask = 0x7;            // 2:0 MPS supported (128 << n)
inline constexpr uint32_t kDevCapExtTag = 1u << 5;
inline constexpr uint32_t kDevCapRoleBasedErr = 1u << 15;
inline constexpr uint32_t kDevCapFlr = 1u << 28;
// Device Control (§7.5.3.4)
inline constexpr uint16_t kDevCtlErrReportMask = 0x000F;   // CERE/NFERE/FERE/URRE, RW
inline constexpr uint16_t kDevCtlRelaxedOrder = 1u << 4;   // RW, default 1
inline constexpr uint16_t kDevCtlMpsShift = 5;             // 7:5 RW, default 000b = 128 B
inline constexpr uint16_t kDevCtlMpsMask = 0x7 << 5;
inline constexpr uint16_t kDevCtlExtTag = 1u << 8;
inline constexpr uint16_t kDevCtlAuxPower = 1u << 10;      // RWS: sticky
inline constexpr uint16_t kDevCtlNoSnoop = 1u << 11;       // RW, default 1
inline constexpr uint16_t kDevCtlMrrsShift = 12;           // 14:12 RW, default 010b = 512 B
inline constexpr uint16_t kDevCtlMrrsMask = 0x7 << 12;
inline constexpr uint16_t kDevCtlInitiateFlr = 1u << 15;   // RW, always reads 0
// Device Status (§7.5.3.5)
inline constexpr uint16_t kDevStaErrMask = 0x000F;         // CED/NFED/FED/URD, RW1C
inline constexpr uint16_t kDevStaTransPending = 1u << 5;   // RO
// Link Capabilities / Status (§7.5.3.6, §7.5.3.8)
inline constexpr uint32_t kLnkCapSpeedMask = 0xF;
inline constexpr uint32_t kLnkCapWidthShift = 4;
inline constexpr uint32_t kLnkCapAspmOptComp = 1u << 22;
inline constexpr uint16_t kLnkCtlRwMask = 0x00CB;          // ASPM 1:0, RCB 3, CCC 6, ExtSynch 7
inline constexpr uint16_t kLnkStaSlotClock = 1u << 12;

// ---- Power Management capability (PM §3.2) ----
inline constexpr uint16_t kPmCaps = 0x02;       // PMC
inline constexpr uint16_t kPmCtrl = 0x04;       // PMCSR
inline constexpr uint16_t kPmCapSize = 0x08;
inline constexpr uint16_t kPmcVersion12 = 0x3;
inline constexpr uint16_t kPmcsrStateMask = 0x3;  // 1:0 power state, RW
inline constexpr uint16_t kPmcsrNoSoftReset = 1u << 3;
inline constexpr uint8_t kPmStateD0 = 0;
inline constexpr uint8_t kPmStateD3hot = 3;

// ---- MSI-X capability (PCI §6.8.2) ----
inline constexpr uint16_t kMsixCtrl = 0x02;
inline constexpr uint16_t kMsixTable = 0x04;    // BIR 2:0, offset 31:3
inline constexpr uint16_t kMsixPba = 0x08;
inline constexpr uint16_t kMsixCapSize = 0x0C;
inline constexpr uint16_t kMsixCtrlTableSizeMask = 0x07FF;  // N-1, RO
inline constexpr uint16_t kMsixCtrlFuncMask = 1u << 14;
inline constexpr uint16_t kMsixCtrlEnable = 1u << 15;

// ---- Extended capability header (PCIe §7.6.3): id 15:0, version 19:16, next 31:20 ----
inline constexpr uint16_t kExtHdrSize = 4;
inline constexpr uint32_t ext_header(uint16_t id, uint8_t version, uint16_t next) {
  return uint32_t(id) | (uint32_t(version & 0xF) << 16) | (uint32_t(next & 0xFFF) << 20);
}
// ARI (PCIe §7.8.7)
inline constexpr uint16_t kAriCap = 0x04;       // next function number 15:8
inline constexpr uint16_t kAriCtl = 0x06;
inline constexpr uint16_t kAriCapSize = 0x08;
// Device Serial Number (PCIe §7.9.3)
inline constexpr uint16_t kDsnLow = 0x04;
inline constexpr uint16_t kDsnHigh = 0x08;
inline constexpr uint16_t kDsnCapSize = 0x0C;

}  // namespace hcaemu::pcie::regs
