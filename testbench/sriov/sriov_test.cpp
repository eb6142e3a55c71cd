// The PF's SR-IOV capability: enable/disable, NumVFs rules, VF numbering, VF BARs, page size,
// listener calls and reset.
#include "sriov/sriov_capability.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testbench/pcie/pci_walk.h"

using namespace hcaemu;
using namespace hcaemu::pcie::regs;
using hcaemu::sriov::SriovCapability;
namespace sr = hcaemu::sriov::sr;

namespace {

struct Recorder : sriov::SriovListener {
  std::vector<std::string> calls;
  void vfs_enabled(uint16_t n) override { calls.push_back("enabled:" + std::to_string(n)); }
  void vfs_disabled() override { calls.push_back("disabled"); }
  void vf_memory_space_changed(bool on) override { calls.push_back(on ? "mse:1" : "mse:0"); }
};

class SriovTest : public ::testing::Test {
 protected:
  SriovTest() : pf(pcie::FunctionConfig{}), cap(pf, sriov::SriovConfig{}) { cap.set_listener(&rec); }
  uint16_t at(uint16_t rel) const { return uint16_t(cap.offset() + rel); }
  uint32_t rd(uint16_t rel, unsigned size) { return pf.config_read(at(rel), size); }
  void wr(uint16_t rel, unsigned size, uint32_t v) { pf.config_write(at(rel), size, v); }
  pcie::PciFunction pf;
  SriovCapability cap;
  Recorder rec;
  test::CfgRead cfg_rd = [this](uint16_t o, unsigned s) { return pf.config_read(o, s); };
  test::CfgWrite cfg_wr = [this](uint16_t o, unsigned s, uint32_t v) { pf.config_write(o, s, v); };
};

TEST_F(SriovTest, FoundByLinuxStyleWalkWithRoFields) {
  bool loop = true;
  const auto ext = test::walk_ext_caps(cfg_rd, loop);
  EXPECT_FALSE(loop);
  ASSERT_EQ(ext.size(), 3u);
  EXPECT_EQ(ext[0].id, kExtCapIdDsn);
  EXPECT_EQ(ext[1].id, kExtCapIdAri);
  EXPECT_EQ(ext[2].id, kExtCapIdSriov);
  EXPECT_EQ(ext[2].version, 1);
  EXPECT_EQ(ext[2].offset, kFirstFreeExtOffset);
  EXPECT_EQ(rd(sr::kTotalVfs, 2), 8u);
  EXPECT_EQ(rd(sr::kInitialVfs, 2), 8u);
  EXPECT_EQ(rd(sr::kFirstVfOffset, 2), 1u);
  EXPECT_EQ(rd(sr::kVfStride, 2), 1u);
  EXPECT_EQ(rd(sr::kVfDeviceId, 2), 0x1018u);
  EXPECT_EQ(rd(sr::kSupportedPageSizes, 4), 0x553u);
  EXPECT_EQ(rd(sr::kSystemPageSize, 4), 0x1u);
  EXPECT_EQ(rd(sr::kMigrationArray, 4), 0u);
  EXPECT_EQ(rd(sr::kCaps, 4) & 1, 0u) << "no VF migration";
  for (uint16_t r : {sr::kTotalVfs, sr::kInitialVfs, sr::kFirstVfOffset, sr::kVfStride, sr::kVfDeviceId}) {
    const uint32_t before = rd(r, 2);
    wr(r, 2, 0x5555);
    EXPECT_EQ(rd(r, 2), before) << "offset " << r;
  }
}

TEST_F(SriovTest, EnableDisableNotifiesWithNumVfs) {
  wr(sr::kNumVfs, 2, 4);
  EXPECT_TRUE(rec.calls.empty());
  wr(sr::kControl, 2, sr::kCtlVfEnable | sr::kCtlVfMse);
  EXPECT_TRUE(cap.vf_enabled());
  EXPECT_TRUE(cap.vf_memory_space_enabled());
  ASSERT_EQ(rec.calls, (std::vector<std::string>{"enabled:4", "mse:1"}));
  wr(sr::kControl, 2, sr::kCtlVfEnable | sr::kCtlVfMse);  // no change, no call
  EXPECT_EQ(rec.calls.size(), 2u);
  wr(sr::kControl, 2, 0);
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"enabled:4", "mse:1", "mse:0", "disabled"}));
  EXPECT_EQ(cap.num_vfs(), 4) << "NumVFs survives VF Enable going to 0";
}

TEST_F(SriovTest, NumVfsRefusedWhileEnabledAndAboveTotal) {
  wr(sr::kNumVfs, 2, 9);
  EXPECT_EQ(cap.num_vfs(), 0) << "above TotalVFs: refused";
  wr(sr::kNumVfs, 2, 8);
  EXPECT_EQ(cap.num_vfs(), 8);
  wr(sr::kControl, 2, sr::kCtlVfEnable);
  wr(sr::kNumVfs, 2, 2);
  EXPECT_EQ(cap.num_vfs(), 8) << "refused while VF Enable is set";
  EXPECT_EQ(cap.rejected_writes(), 2u);
  wr(sr::kControl, 2, 0);
  wr(sr::kNumVfs, 2, 2);
  EXPECT_EQ(cap.num_vfs(), 2);
}

TEST_F(SriovTest, VfRoutingIds) {
  wr(sr::kNumVfs, 2, 3);
  const uint16_t pf_rid = (0x3b << 8) | (0 << 3) | 0;  // bus 0x3b, dev 0, fn 0
  EXPECT_EQ(cap.vf_routing_id(pf_rid, 0), 0x3b01);
  EXPECT_EQ(cap.vf_routing_id(pf_rid, 2), 0x3b03);
  sriov::SriovConfig c;
  c.first_vf_offset = 8;
  c.vf_stride = 2;
  pcie::PciFunction pf2{pcie::FunctionConfig{}};
  SriovCapability cap2(pf2, c);
  EXPECT_EQ(cap2.vf_routing_id(0x0100, 3), 0x0100 + 8 + 6);
  EXPECT_EQ(pf2.config_read(cap2.offset() + sr::kVfStride, 2), 2u);
}

TEST_F(SriovTest, VfBarsSizeLikeBarsAndSliceByVf) {
  const auto s0 = test::size_bar(cfg_rd, cfg_wr, at(sr::kVfBar0));
  EXPECT_TRUE(s0.is_64);
  EXPECT_EQ(s0.flags, kBarMemType64 | kBarPrefetch);
  EXPECT_EQ(s0.size, pcie::kVfHcaBarSize) << "VF BAR sizing reports the per-VF size";
  const auto s2 = test::size_bar(cfg_rd, cfg_wr, at(sr::kVfBar0 + 8));
  EXPECT_EQ(s2.size, pcie::kMsixBarSize);
  EXPECT_EQ(s2.flags, kBarMemType64);
  const auto s4 = test::size_bar(cfg_rd, cfg_wr, at(sr::kVfBar0 + 16));
  EXPECT_EQ(s4.size, 0u);
  wr(sr::kVfBar0, 4, 0x80000000);
  wr(sr::kVfBar0 + 4, 4, 0x2);
  wr(sr::kNumVfs, 2, 4);
  EXPECT_EQ(cap.vf_bar_aperture(0), 4 * pcie::kVfHcaBarSize);
  EXPECT_EQ(cap.vf_bar_base(0, 0), 0x280000000ull);
  EXPECT_EQ(cap.vf_bar_base(0, 3), 0x280000000ull + 3 * pcie::kVfHcaBarSize);
  EXPECT_FALSE(cap.vf_bar_base(0, 4).has_value()) << "beyond NumVFs";
  EXPECT_FALSE(cap.vf_bar_base(4, 0).has_value()) << "absent BAR";
}

TEST_F(SriovTest, SystemPageSizeOneSupportedBitAndBarGrowth) {
  wr(sr::kSystemPageSize, 4, 0x3);  // two bits
  EXPECT_EQ(rd(sr::kSystemPageSize, 4), 0x1u);
  wr(sr::kSystemPageSize, 4, 0x4);  // 16 KiB: not in 0x553
  EXPECT_EQ(rd(sr::kSystemPageSize, 4), 0x1u);
  wr(sr::kSystemPageSize, 4, 0x10);  // 64 KiB
  EXPECT_EQ(cap.system_page_size(), 64u << 10);
  EXPECT_EQ(cap.vf_bar(2).size, 64u << 10) << "a 16 KiB VF BAR grows to the system page size";
  EXPECT_EQ(test::size_bar(cfg_rd, cfg_wr, at(sr::kVfBar0 + 8)).size, 64u << 10);
  EXPECT_EQ(cap.vf_bar(0).size, pcie::kVfHcaBarSize);
  wr(sr::kControl, 2, sr::kCtlVfEnable);
  wr(sr::kSystemPageSize, 4, 0x1);
  EXPECT_EQ(cap.system_page_size(), 64u << 10) << "locked while VFs are enabled";
  wr(sr::kControl, 2, 0);
  wr(sr::kSystemPageSize, 4, 0x1);
  EXPECT_EQ(cap.vf_bar(2).size, pcie::kMsixBarSize);
}

TEST_F(SriovTest, AriHierarchyOnlyWhileDisabled) {
  wr(sr::kControl, 2, sr::kCtlAriHierarchy);
  EXPECT_TRUE(cap.ari_capable_hierarchy());
  wr(sr::kControl, 2, sr::kCtlAriHierarchy | sr::kCtlVfEnable);
  wr(sr::kControl, 2, sr::kCtlVfEnable);
  EXPECT_TRUE(cap.ari_capable_hierarchy()) << "kept while VF Enable is set";
  EXPECT_TRUE(cap.vf_enabled());
  // VF Migration Enable is RO 0 (not migration capable); reserved bits stay 0.
  wr(sr::kControl, 2, 0xFFFF);
  EXPECT_EQ(rd(sr::kControl, 2), uint32_t(sr::kCtlVfEnable | sr::kCtlVfMse | sr::kCtlAriHierarchy));
}

TEST_F(SriovTest, PfFlrDisablesVfs) {
  wr(sr::kNumVfs, 2, 2);
  wr(sr::kControl, 2, sr::kCtlVfEnable | sr::kCtlVfMse);
  rec.calls.clear();
  pf.config_write(kPcieCapOffset + kExpDevCtl, 2, kDevCtlInitiateFlr);
  EXPECT_FALSE(cap.vf_enabled());
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"mse:0", "disabled"}));
  EXPECT_EQ(cap.num_vfs(), 0) << "NumVFs is not sticky";
  wr(sr::kNumVfs, 2, 3);
  EXPECT_EQ(cap.num_vfs(), 3) << "writable again after the reset";
}

TEST(SriovConfigCheck, NoSriovOnAVf) {
  pcie::FunctionConfig c;
  c.is_vf = true;
  pcie::PciFunction vf(c);
  EXPECT_THROW(SriovCapability(vf, sriov::SriovConfig{}), std::invalid_argument);
}

}  // namespace
