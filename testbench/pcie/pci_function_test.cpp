// A PF's config space register by register, BAR sizing as firmware/Linux do it, the capability
// walk as Linux does it, FLR, PM and the MSI-X control wiring.
#include "pcie/pci_function.h"

#include <gtest/gtest.h>

#include "testbench/pcie/pci_walk.h"

using namespace hcaemu::pcie;
using namespace hcaemu::pcie::regs;
using hcaemu::test::size_bar;
using hcaemu::test::walk_ext_caps;
using hcaemu::test::walk_std_caps;

namespace {

class PfTest : public ::testing::Test {
 protected:
  PciFunction f{FunctionConfig{}};
  hcaemu::test::CfgRead rd = [this](uint16_t o, unsigned s) { return f.config_read(o, s); };
  hcaemu::test::CfgWrite wr = [this](uint16_t o, unsigned s, uint32_t v) { f.config_write(o, s, v); };
  uint16_t devctl() { return uint16_t(f.config_read(kPcieCapOffset + kExpDevCtl, 2)); }
};

TEST_F(PfTest, IdsAreReadOnly) {
  EXPECT_EQ(f.config_read(kVendorId, 2), 0x15b3u);
  EXPECT_EQ(f.config_read(kDeviceId, 2), 0x1017u);
  f.config_write(kVendorId, 4, 0x12345678);
  EXPECT_EQ(f.config_read(kVendorId, 4), 0x101715b3u);
  EXPECT_EQ(f.config_read(kRevisionId, 4) >> 8, 0x020000u) << "class code: Ethernet controller";
  f.config_write(kRevisionId, 4, 0xFFFFFFFF);
  EXPECT_EQ(f.config_read(kRevisionId, 4), 0x02000000u);
  EXPECT_EQ(f.config_read(kSubsystemVendorId, 2), 0x15b3u);
  EXPECT_EQ(f.config_read(kHeaderType, 1), 0x00u);
}

TEST_F(PfTest, CommandRwBitsAndReserved) {
  f.config_write(kCommand, 2, 0xFFFF);
  EXPECT_EQ(f.config_read(kCommand, 2), 0x0546u) << "MSE, BME, PER, SERR, IntxDisable only";
  EXPECT_TRUE(f.memory_space_enabled());
  EXPECT_TRUE(f.bus_master_enabled());
  f.config_write(kCommand, 2, kCmdBusMaster);
  EXPECT_FALSE(f.memory_space_enabled());
  EXPECT_TRUE(f.bus_master_enabled());
}

TEST_F(PfTest, CommandChangeCallback) {
  uint16_t seen_old = 0xFFFF, seen_new = 0xFFFF;
  f.on_command_change([&](uint16_t o, uint16_t n) { seen_old = o; seen_new = n; });
  f.config_write(kCommand, 2, kCmdMemorySpace);
  EXPECT_EQ(seen_old, 0u);
  EXPECT_EQ(seen_new, kCmdMemorySpace);
}

TEST_F(PfTest, StatusRw1cAndCapListRo) {
  EXPECT_EQ(f.config_read(kStatus, 2), kStatusCapList);
  f.config_space().set(kStatus, 2, kStatusCapList | kStatusReceivedMasterAbort | kStatusDetectedParityError);
  f.config_write(kStatus, 2, 0x0000);
  EXPECT_EQ(f.config_read(kStatus, 2), kStatusCapList | kStatusReceivedMasterAbort | kStatusDetectedParityError);
  f.config_write(kStatus, 2, kStatusReceivedMasterAbort | kStatusCapList);
  EXPECT_EQ(f.config_read(kStatus, 2), kStatusCapList | kStatusDetectedParityError) << "cap list bit is RO";
  // A dword write to Command with Status bits all ones clears them too, as Linux does.
  f.config_write(kCommand, 4, 0xFFFF0000);
  EXPECT_EQ(f.config_read(kStatus, 2), kStatusCapList);
}

TEST_F(PfTest, CapPtrInterruptPinAndFixedRegisters) {
  EXPECT_EQ(f.config_read(kCapPtr, 1), kPcieCapOffset);
  f.config_write(kCapPtr, 1, 0x80);
  EXPECT_EQ(f.config_read(kCapPtr, 1), kPcieCapOffset);
  EXPECT_EQ(f.config_read(kInterruptPin, 1), 0u);
  f.config_write(kInterruptLine, 1, 0x0B);
  EXPECT_EQ(f.config_read(kInterruptLine, 1), 0x0Bu);
  f.config_write(kInterruptPin, 1, 1);
  EXPECT_EQ(f.config_read(kInterruptPin, 1), 0u);
  f.config_write(kExpansionRom, 4, 0xFFFFF800);
  EXPECT_EQ(f.config_read(kExpansionRom, 4), 0u) << "no ROM";
  EXPECT_EQ(f.config_read(kLatencyTimer, 1), 0u);
  // RsvdZ: unused space between capabilities reads 0 and stays 0.
  f.config_write(0x7C, 4, 0xFFFFFFFF);
  EXPECT_EQ(f.config_read(0x7C, 4), 0u);
  f.config_write(0xFF0, 4, 0xFFFFFFFF);
  EXPECT_EQ(f.config_read(0xFF0, 4), 0u);
}

TEST_F(PfTest, Bar0SizedLikeLinux) {
  f.config_write(kBar0, 4, 0xF0000000);
  f.config_write(kBar0 + 4, 4, 0x00000001);
  const auto s = size_bar(rd, wr, kBar0);
  EXPECT_TRUE(s.is_64);
  EXPECT_EQ(s.flags, kBarMemType64 | kBarPrefetch);
  EXPECT_EQ(s.size, kPfHcaBarSize);
  EXPECT_EQ(f.config_read(kBar0, 4), 0xF000000Cu) << "restored";
  EXPECT_EQ(f.bar(0).base, 0x1F0000000ull);
  // Address bits below the size are RO 0.
  f.config_write(kBar0, 4, 0xF1234560);
  EXPECT_EQ(f.config_read(kBar0, 4), 0xF000000Cu);
  // Sizing readback of the raw registers.
  f.config_write(kBar0, 4, 0xFFFFFFFF);
  EXPECT_EQ(f.config_read(kBar0, 4), 0xFE00000Cu);
  f.config_write(kBar0 + 4, 4, 0xFFFFFFFF);
  EXPECT_EQ(f.config_read(kBar0 + 4, 4), 0xFFFFFFFFu);
}

TEST_F(PfTest, MsixBarSizedLikeLinux) {
  const auto s = size_bar(rd, wr, kBar0 + 4 * kMsixBar);
  EXPECT_TRUE(s.is_64);
  EXPECT_EQ(s.flags, kBarMemType64) << "non-prefetchable";
  EXPECT_EQ(s.size, kMsixBarSize);
  const BarInfo b = f.bar(kMsixBar);
  EXPECT_TRUE(b.present);
  EXPECT_EQ(b.size, kMsixBarSize);
  EXPECT_FALSE(b.prefetchable);
}

TEST_F(PfTest, UnusedBarsReadZeroAndStayZero) {
  for (unsigned i : {4u, 5u}) {
    f.config_write(kBar0 + 4 * i, 4, 0xFFFFFFFF);
    EXPECT_EQ(f.config_read(kBar0 + 4 * i, 4), 0u) << "BAR" << i;
    EXPECT_FALSE(f.bar(i).present);
  }
  EXPECT_FALSE(f.bar(1).present) << "upper half of BAR0";
}

TEST_F(PfTest, BarDecode) {
  f.config_write(kBar0, 4, 0xE0000000);
  f.config_write(kBar0 + 8, 4, 0xD0000000);
  EXPECT_EQ(f.bars().decode(0xE0001000, 8), 0);
  EXPECT_EQ(f.bars().decode(0xD0002000, 4), 2);
  EXPECT_EQ(f.bars().decode(0xE0000000 + kPfHcaBarSize - 4, 8), -1) << "straddles the end";
}

TEST_F(PfTest, CapabilityWalkLikeLinux) {
  bool loop = true;
  const auto std_caps = walk_std_caps(rd, loop);
  EXPECT_FALSE(loop);
  ASSERT_EQ(std_caps.size(), 4u);
  EXPECT_EQ(std_caps[0].id, kCapIdExp);
  EXPECT_EQ(std_caps[0].offset, kPcieCapOffset);
  EXPECT_EQ(std_caps[1].id, kCapIdPm);
  EXPECT_EQ(std_caps[2].id, kCapIdMsix);
  // The vendor-specific capability mlx5 looks for at probe ("Failed to get valid vendor specific
  // ID" without it): its length byte, and a gateway whose registers read 0 and ignore writes.
  EXPECT_EQ(std_caps[3].id, kCapIdVendor);
  EXPECT_EQ(std_caps[3].offset, kVendorCapOffset);
  EXPECT_EQ(f.config_read(kVendorCapOffset + 2, 1), kVendorCapSize);
  f.config_write(kVendorCapOffset + 4, 4, 0xffffffff);
  EXPECT_EQ(f.config_read(kVendorCapOffset + 4, 4), 0u) << "no gateway space is supported";
  EXPECT_EQ(f.config_read(kPcieCapOffset + kExpFlags, 2) & 0xFF, 0x02u) << "cap version 2, Endpoint";
  const auto ext = walk_ext_caps(rd, loop);
  EXPECT_FALSE(loop);
  ASSERT_EQ(ext.size(), 2u) << "no SR-IOV on a bare PciFunction";
  EXPECT_EQ(ext[0].id, kExtCapIdDsn);
  EXPECT_EQ(ext[0].offset, 0x100);
  EXPECT_EQ(ext[0].version, 1);
  EXPECT_EQ(ext[1].id, kExtCapIdAri);
  EXPECT_EQ(find_capability(f.config_space(), kCapIdMsix), kMsixCapOffset);
  EXPECT_EQ(find_ext_capability(f.config_space(), kExtCapIdDsn), kDsnCapOffset);
  EXPECT_EQ(find_ext_capability(f.config_space(), kExtCapIdSriov), 0);
}

TEST_F(PfTest, AppendedExtendedCapIsLinked) {
  const uint16_t at = f.append_extended_capability(0x000B, 1, 0x18);  // a vendor-specific cap
  EXPECT_EQ(at, kFirstFreeExtOffset);
  bool loop = true;
  const auto ext = walk_ext_caps(rd, loop);
  ASSERT_EQ(ext.size(), 3u);
  EXPECT_EQ(ext[2].id, 0x000B);
  EXPECT_EQ(ext[2].offset, at);
  EXPECT_EQ(f.config_read(at, 4) >> 20, 0u) << "last in the list";
}

TEST_F(PfTest, DsnAndAri) {
  const uint64_t sn = uint64_t(f.config_read(kDsnCapOffset + kDsnHigh, 4)) << 32 | f.config_read(kDsnCapOffset + kDsnLow, 4);
  EXPECT_EQ(sn, FunctionConfig{}.serial_number);
  EXPECT_EQ(f.config_read(kAriCapOffset + kAriCap, 2) >> 8, 0u);
}

TEST_F(PfTest, PcieCapLinkAndDeviceFields) {
  const uint16_t b = kPcieCapOffset;
  const uint32_t devcap = f.config_read(b + kExpDevCap, 4);
  EXPECT_TRUE(devcap & kDevCapFlr);
  EXPECT_EQ(128u << (devcap & kDevCapMpsMask), 512u);
  const uint32_t lnkcap = f.config_read(b + kExpLnkCap, 4);
  EXPECT_EQ(lnkcap & 0xF, 3u);
  EXPECT_EQ((lnkcap >> 4) & 0x3F, 16u);
  const uint32_t lnksta = f.config_read(b + kExpLnkSta, 2);
  EXPECT_EQ(lnksta & 0xF, 3u);
  EXPECT_EQ((lnksta >> 4) & 0x3F, 16u);
  EXPECT_EQ(f.config_read(b + kExpLnkCap2, 4), 0x0Eu) << "2.5, 5, 8 GT/s";
  // MPS and MRRS are RW; defaults 128 / 512.
  EXPECT_EQ(f.max_payload_size(), 128);
  EXPECT_EQ(f.max_read_request_size(), 512);
  f.config_write(b + kExpDevCtl, 2, (devctl() & ~(kDevCtlMpsMask | kDevCtlMrrsMask)) | (1 << kDevCtlMpsShift) | (5 << kDevCtlMrrsShift));
  EXPECT_EQ(f.max_payload_size(), 256);
  EXPECT_EQ(f.max_read_request_size(), 4096);
  // Device Status error bits are RW1C.
  f.config_space().set(b + kExpDevSta, 2, 0x0005);
  f.config_write(b + kExpDevSta, 2, 0x0001);
  EXPECT_EQ(f.config_read(b + kExpDevSta, 2), 0x0004u);
  // Link Status is RO.
  f.config_write(b + kExpLnkSta, 2, 0);
  EXPECT_EQ(f.config_read(b + kExpLnkSta, 2), lnksta);
}

TEST_F(PfTest, LinkFromConfig) {
  FunctionConfig c;
  c.link_gen = 4;
  c.link_width = 8;
  PciFunction g(c);
  EXPECT_EQ(g.config_read(kPcieCapOffset + kExpLnkSta, 2) & 0x3FF, 4u | (8u << 4));
  c.link_gen = 6;
  EXPECT_THROW(PciFunction{c}, std::invalid_argument);
}

TEST_F(PfTest, FlrResetsRegistersKeepsStickyReadsZeroAndCallsBack) {
  int calls = 0;
  bool msix_during_cb = true;
  ResetKind last = ResetKind::kCold;
  f.on_function_level_reset([&](ResetKind k) {
    ++calls;
    last = k;
    msix_during_cb = f.msix_enabled();
  });
  const uint16_t b = kPcieCapOffset;
  f.config_write(kCommand, 2, kCmdMemorySpace | kCmdBusMaster);
  f.config_write(kBar0, 4, 0xE0000000);
  f.config_write(kMsixCapOffset + kMsixCtrl, 2, kMsixCtrlEnable);
  f.config_write(kPmCapOffset + kPmCtrl, 2, kPmStateD3hot);
  f.config_write(b + kExpDevCtl, 2, kDevCtlAuxPower | (1 << kDevCtlMpsShift) | (5 << kDevCtlMrrsShift) | kDevCtlErrReportMask);
  f.config_write(b + kExpLnkCtl2, 2, 2);  // Target Link Speed: RWS
  f.config_space().set(b + kExpDevSta, 2, 0x0003);
  ASSERT_TRUE(f.msix_enabled());

  f.config_write(b + kExpDevCtl, 2, devctl() | kDevCtlInitiateFlr);

  EXPECT_EQ(calls, 1);
  EXPECT_EQ(last, ResetKind::kFlr);
  EXPECT_FALSE(msix_during_cb) << "callback runs after the registers are reset";
  EXPECT_EQ(f.config_read(kCommand, 2), 0u);
  EXPECT_EQ(f.bar(0).base, 0u);
  EXPECT_FALSE(f.msix_enabled());
  EXPECT_EQ(f.power_state(), kPmStateD0);
  EXPECT_EQ(f.config_read(b + kExpDevSta, 2), 0u);
  const uint16_t dc = devctl();
  EXPECT_EQ(dc & kDevCtlInitiateFlr, 0) << "Initiate FLR reads 0";
  EXPECT_TRUE(dc & kDevCtlAuxPower) << "sticky (RWS)";
  EXPECT_EQ(f.max_payload_size(), 256) << "MPS is not affected by FLR (PCIe 6.6.2)";
  EXPECT_EQ(f.max_read_request_size(), 512) << "MRRS back to default";
  EXPECT_EQ(dc & kDevCtlErrReportMask, 0);
  EXPECT_EQ(f.config_read(b + kExpLnkCtl2, 2) & 0xF, 2u) << "RWS";
  EXPECT_EQ(f.config_read(kVendorId, 2), 0x15b3u);

  f.reset(ResetKind::kCold);
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(devctl() & kDevCtlAuxPower) << "cold reset clears sticky bits";
  EXPECT_EQ(f.max_payload_size(), 128);
}

TEST_F(PfTest, PowerStateD0D3hotOnly) {
  const uint16_t pm = kPmCapOffset + kPmCtrl;
  EXPECT_TRUE(f.config_read(pm, 2) & kPmcsrNoSoftReset);
  f.config_write(pm, 2, 3);
  EXPECT_EQ(f.power_state(), 3);
  f.config_write(pm, 2, 1);  // D1 is unsupported: ignored
  EXPECT_EQ(f.power_state(), 3);
  f.config_write(pm, 2, 0);
  EXPECT_EQ(f.power_state(), 0);
  EXPECT_TRUE(f.config_read(pm, 2) & kPmcsrNoSoftReset);
}

TEST_F(PfTest, MsixCapabilityLayoutAndControl) {
  const uint16_t m = kMsixCapOffset;
  EXPECT_EQ(f.config_read(m + kMsixCtrl, 2) & kMsixCtrlTableSizeMask, 63u);
  EXPECT_EQ(f.config_read(m + kMsixTable, 4), kMsixTableOffset | kMsixBar);
  EXPECT_EQ(f.config_read(m + kMsixPba, 4), kMsixPbaOffset | kMsixBar);
  f.config_write(m + kMsixCtrl, 2, 0xFFFF);
  EXPECT_EQ(f.config_read(m + kMsixCtrl, 2), 0xC000u | 63u) << "only Enable and Function Mask are RW";
  EXPECT_TRUE(f.msix_table().enabled());
  EXPECT_TRUE(f.msix_table().function_masked());
  const MsixLayout l = f.msix_layout();
  EXPECT_EQ(l.vectors, 64);
  EXPECT_EQ(l.table_bar, kMsixBar);
  EXPECT_EQ(l.pba_offset, kMsixPbaOffset);
}

TEST(PciFunctionConfig, RejectsMsixTableOutsideBar) {
  FunctionConfig c;
  c.msix_vectors = 1024;  // 16 KiB of table overlaps the PBA at 0x2000
  EXPECT_THROW(PciFunction{c}, std::invalid_argument);
}

TEST(PciFunctionVf, VfHeaderRules) {
  FunctionConfig c;
  c.is_vf = true;
  PciFunction vf(c);
  EXPECT_EQ(vf.config_read(kVendorId, 4), 0xFFFFFFFFu);
  for (unsigned i = 0; i < kNumBars; ++i) {
    vf.config_write(kBar0 + 4 * i, 4, 0xFFFFFFFF);
    EXPECT_EQ(vf.config_read(kBar0 + 4 * i, 4), 0u);
  }
  vf.config_write(kCommand, 2, 0xFFFF);
  EXPECT_EQ(vf.config_read(kCommand, 2), kCmdBusMaster) << "MSE is RO 0 on a VF";
  EXPECT_TRUE(vf.config_read(kPcieCapOffset + kExpDevCap, 4) & kDevCapFlr);
  int calls = 0;
  vf.on_function_level_reset([&](ResetKind) { ++calls; });
  vf.config_write(kPcieCapOffset + kExpDevCtl, 2, kDevCtlInitiateFlr);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(vf.config_read(kCommand, 2), 0u);
}

}  // namespace
