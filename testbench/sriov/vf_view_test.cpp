// A VF as vfio-pci shows it to a guest: IDs from the PF, virtual BARs and memory enable.
#include "sriov/vf_config_view.h"

#include <gtest/gtest.h>

#include "testbench/pcie/pci_walk.h"

using namespace hcaemu;
using namespace hcaemu::pcie::regs;
namespace sr = hcaemu::sriov::sr;

namespace {

class VfViewTest : public ::testing::Test {
 protected:
  VfViewTest() : pf(pcie::FunctionConfig{}), cap(pf, sriov::SriovConfig{}) {
    pf.config_write(cap.offset() + sr::kNumVfs, 2, 2);
    pf.config_write(cap.offset() + sr::kVfBar0, 4, 0xC0000000);
    pf.config_write(cap.offset() + sr::kControl, 2, sr::kCtlVfEnable | sr::kCtlVfMse);
    view = std::make_unique<sriov::VfConfigView>(sriov::make_vf_function_config(pf.config(), cap.config()), cap, 1,
                                                 pf.config().vendor_id);
  }
  pcie::PciFunction pf;
  sriov::SriovCapability cap;
  std::unique_ptr<sriov::VfConfigView> view;
  test::CfgRead rd = [this](uint16_t o, unsigned s) { return view->config_read(o, s); };
  test::CfgWrite wr = [this](uint16_t o, unsigned s, uint32_t v) { view->config_write(o, s, v); };
};

TEST_F(VfViewTest, RawVfFollowsSpecViewShowsPfIds) {
  EXPECT_EQ(view->function().config_read(kVendorId, 4), 0xFFFFFFFFu);
  EXPECT_EQ(view->config_read(kVendorId, 2), 0x15b3u);
  EXPECT_EQ(view->config_read(kDeviceId, 2), 0x1018u);
  EXPECT_EQ(view->config_read(kVendorId, 4), 0x101815b3u);
  EXPECT_EQ(view->config_read(kVendorId + 1, 2), 0x1815u) << "unaligned read merges the overlay too";
  view->config_write(kVendorId, 4, 0);
  EXPECT_EQ(view->config_read(kVendorId, 4), 0x101815b3u);
  EXPECT_EQ(view->config_read(kClassCode, 2) | (view->config_read(kClassCode + 2, 1) << 16), 0x020000u);
}

TEST_F(VfViewTest, VirtualBarsSizeAndHoldAddresses) {
  EXPECT_EQ(view->function().config_read(kBar0, 4), 0u);
  const auto b0 = test::size_bar(rd, wr, kBar0);
  EXPECT_TRUE(b0.is_64);
  EXPECT_EQ(b0.flags, kBarMemType64 | kBarPrefetch);
  EXPECT_EQ(b0.size, pcie::kVfHcaBarSize);
  const auto b2 = test::size_bar(rd, wr, kBar0 + 8);
  EXPECT_EQ(b2.size, pcie::kMsixBarSize);
  EXPECT_EQ(b2.flags, kBarMemType64);
  EXPECT_EQ(test::size_bar(rd, wr, kBar0 + 16).size, 0u);
  view->config_write(kBar0, 4, 0xFE000000);
  EXPECT_EQ(view->bar(0).base, 0xFE000000u);
  EXPECT_EQ(view->bar(0).size, pcie::kVfHcaBarSize);
  EXPECT_EQ(view->config_read(kBar0, 4), 0xFE00000Cu);
  EXPECT_EQ(view->physical_bar_base(0), 0xC0000000ull + pcie::kVfHcaBarSize) << "VF 1's slice";
  EXPECT_EQ(view->function().config_read(kBar0, 4), 0u) << "the VF's own register still reads 0";
}

TEST_F(VfViewTest, MemoryEnableIsVirtualAndGatedByPf) {
  EXPECT_FALSE(view->memory_space_enabled());
  view->config_write(kCommand, 2, kCmdMemorySpace | kCmdBusMaster);
  EXPECT_EQ(view->config_read(kCommand, 2), uint32_t(kCmdMemorySpace | kCmdBusMaster));
  EXPECT_EQ(view->function().config_read(kCommand, 2), kCmdBusMaster);
  EXPECT_TRUE(view->function().bus_master_enabled());
  EXPECT_TRUE(view->memory_space_enabled());
  pf.config_write(cap.offset() + sr::kControl, 2, sr::kCtlVfEnable);  // PF clears VF MSE
  EXPECT_TRUE(view->guest_memory_enable());
  EXPECT_FALSE(view->memory_space_enabled());
}

TEST_F(VfViewTest, CapsOnAVf) {
  bool loop = true;
  const auto std_caps = test::walk_std_caps(rd, loop);
  ASSERT_EQ(std_caps.size(), 4u);
  EXPECT_EQ(std_caps[0].id, kCapIdExp);
  EXPECT_EQ(std_caps[1].id, kCapIdPm);
  EXPECT_EQ(std_caps[2].id, kCapIdMsix);
  EXPECT_EQ(std_caps[3].id, kCapIdVendor);  // mlx5 looks for it on VFs too
  EXPECT_EQ(view->config_read(kMsixCapOffset + kMsixCtrl, 2) & kMsixCtrlTableSizeMask, 31u);
  const auto ext = test::walk_ext_caps(rd, loop);
  EXPECT_FALSE(loop);
  ASSERT_EQ(ext.size(), 2u) << "ARI + DSN, no SR-IOV on a VF";
  EXPECT_EQ(ext[0].id, kExtCapIdDsn);
  EXPECT_EQ(ext[1].id, kExtCapIdAri);
  EXPECT_EQ(view->config_read(kDsnCapOffset + kDsnLow, 4), pf.config_read(kDsnCapOffset + kDsnLow, 4));
}

TEST_F(VfViewTest, VfFlrResetsVirtualStateToo) {
  int calls = 0;
  view->function().on_function_level_reset([&](pcie::ResetKind) { ++calls; });
  view->config_write(kCommand, 2, kCmdMemorySpace | kCmdBusMaster);
  view->config_write(kBar0, 4, 0xFE000000);
  view->config_write(kPcieCapOffset + kExpDevCtl, 2, kDevCtlInitiateFlr);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(view->config_read(kCommand, 2), 0u);
  EXPECT_EQ(view->bar(0).base, 0u);
  EXPECT_EQ(view->config_read(kPcieCapOffset + kExpDevCtl, 2) & kDevCtlInitiateFlr, 0u);
  EXPECT_EQ(view->config_read(kVendorId, 2), 0x15b3u);
}

TEST_F(VfViewTest, BlockReadMatchesRegisterReads) {
  std::vector<uint8_t> buf(0x40);
  view->config_write(kBar0, 4, 0xFE000000);
  view->config_read_block(0, buf);
  for (uint16_t off = 0; off < 0x40; off += 4) {
    const uint32_t v = buf[off] | buf[off + 1] << 8 | buf[off + 2] << 16 | uint32_t(buf[off + 3]) << 24;
    EXPECT_EQ(v, view->config_read(off, 4)) << "offset " << off;
  }
}

TEST_F(VfViewTest, RejectsIndexBeyondTotalVfs) {
  EXPECT_THROW(sriov::VfConfigView(sriov::make_vf_function_config(pf.config(), cap.config()), cap, 8, 0x15b3),
               std::invalid_argument);
}

}  // namespace
