// A host enumerates the HCA through its PCIe face the way firmware and Linux do: IDs, capability
// walk, BAR sizing, memory enable, the init segment over BAR0, a command through the command
// queue, then SR-IOV: VFs appear through the PF's capability and enumerate like the PF.
#include <gtest/gtest.h>

#include <array>

#include "model/firmware/init_segment.h"
#include "testbench/systemc/host_model.h"

namespace hcaemu::testbench {
namespace {

using H = SystemCHost;
constexpr uint64_t kPfBar0 = 0x800000000ull;

void enable_memory(sriov::FunctionFace& f, uint64_t bar0) {
  H::cfg_write(f, 0x10, 4, uint32_t(bar0));
  H::cfg_write(f, 0x14, 4, uint32_t(bar0 >> 32));
  H::cfg_write(f, 0x04, 2, 0x6);  // memory space + bus master
}

// MSI-X as Linux's msix_capability_init programs it: the table entry (address, data, mask) through
// BAR2 at the offset the capability names, then Enable in Message Control (Function Mask as given).
void msix_vector(sriov::FunctionFace& f, uint16_t vector, bool masked) {
  const uint16_t cap = H::find_capability(f, 0x11);
  const uint64_t entry = (H::cfg_read(f, cap + 4, 4) & ~7u) + 16ull * vector;
  auto put = [&](uint64_t offset, uint32_t value) {
    std::array<uint8_t, 4> b{};
    store_le32(b.data(), value);
    ASSERT_TRUE(f.bar_write(2, offset, b));
  };
  put(entry + 0, 0xfee00000u);
  put(entry + 4, 0);
  put(entry + 8, 0x4000u + vector);
  put(entry + 12, masked ? 1 : 0);
}
void msix_control(sriov::FunctionFace& f, bool enable, bool function_mask) {
  const uint16_t cap = H::find_capability(f, 0x11);
  H::cfg_write(f, cap + 2, 2, (enable ? 0x8000u : 0) | (function_mask ? 0x4000u : 0));
}
bool msix_pending(sriov::FunctionFace& f, uint16_t vector) {
  const uint16_t cap = H::find_capability(f, 0x11);
  const uint64_t pba = (H::cfg_read(f, cap + 8, 4) & ~7u) + 8ull * (vector / 64);
  std::array<uint8_t, 8> b{};
  EXPECT_TRUE(f.bar_read(2, pba, b));
  return (load_le64(b.data()) >> (vector % 64)) & 1;
}

TEST(Enumeration, PfIdentityAndCapabilities) {
  H::instance().run([] {
    auto& pf = H::instance().device().pf();
    EXPECT_EQ(H::cfg_read(pf, 0x00, 2), 0x15b3u);
    EXPECT_EQ(H::cfg_read(pf, 0x02, 2), 0x101du);
    EXPECT_EQ(H::cfg_read(pf, 0x08, 4) >> 8, 0x020000u) << "Ethernet controller";
    EXPECT_EQ(H::cfg_read(pf, 0x0e, 1) & 0x7f, 0u) << "type 0 header";
    EXPECT_EQ(H::cfg_read(pf, 0x3d, 1), 0u) << "no INTx pin: MSI-X only";
    const sc_core::sc_time before = sc_core::sc_time_stamp();
    H::cfg_read(pf, 0, 4);
    EXPECT_GT(sc_core::sc_time_stamp(), before) << "a config read is a non-posted round trip";

    uint16_t exp = H::find_capability(pf, 0x10);
    ASSERT_NE(exp, 0);
    EXPECT_EQ((H::cfg_read(pf, exp + 2, 2) >> 4) & 0xf, 0u) << "PCI Express Endpoint";
    uint32_t link_cap = H::cfg_read(pf, exp + 0x0c, 4);
    EXPECT_EQ(link_cap & 0xf, 4u) << "Gen4 (16 GT/s) from the configuration";
    EXPECT_EQ((link_cap >> 4) & 0x3f, 16u) << "x16";
    EXPECT_TRUE(H::cfg_read(pf, exp + 4, 4) & (1u << 28)) << "FLR capable";
    EXPECT_NE(H::find_capability(pf, 0x01), 0) << "power management";
    uint16_t msix = H::find_capability(pf, 0x11);
    ASSERT_NE(msix, 0);
    EXPECT_EQ((H::cfg_read(pf, msix + 2, 2) & 0x7ff) + 1, 64u);
    EXPECT_EQ(H::cfg_read(pf, msix + 4, 4) & 0x7, 2u) << "table in BAR2";
    EXPECT_NE(H::find_ext_capability(pf, 0x000e), 0) << "ARI";
    uint16_t dsn = H::find_ext_capability(pf, 0x0003);
    ASSERT_NE(dsn, 0);
    uint64_t serial = H::cfg_read(pf, dsn + 4, 4) | (uint64_t(H::cfg_read(pf, dsn + 8, 4)) << 32);
    EXPECT_EQ(serial, H::instance().device().config().serial_number);
    EXPECT_NE(H::find_ext_capability(pf, 0x0010), 0) << "SR-IOV on the PF";
  });
}

TEST(Enumeration, PfBarSizing) {
  H::instance().run([] {
    auto& pf = H::instance().device().pf();
    uint32_t flags = 0;
    EXPECT_EQ(H::size_bar(pf, 0, &flags), 32ull << 20);
    EXPECT_EQ(flags, 0xcu) << "64-bit prefetchable";
    EXPECT_EQ(H::size_bar(pf, 2, &flags), 16ull << 10);
    EXPECT_EQ(flags, 0x4u) << "64-bit, not prefetchable";
    EXPECT_EQ(H::size_bar(pf, 4), 0u);
    EXPECT_EQ(H::cfg_read(pf, 0x30, 4), 0u) << "no expansion ROM";
  });
}

TEST(Enumeration, InitSegmentOverBar0CostsModelTime) {
  H::instance().run([] {
    auto& pf = H::instance().device().pf();
    H::cfg_write(pf, 0x04, 2, 0);
    EXPECT_EQ(H::reg_read(pf, 0), 0xffffffffu) << "memory space disabled: master abort";
    enable_memory(pf, kPfBar0);
    const sc_core::sc_time before = sc_core::sc_time_stamp();
    uint32_t fw = H::reg_read(pf, model::init_seg::kFwRev);
    const sc_core::sc_time after = sc_core::sc_time_stamp();
    EXPECT_EQ(fw & 0xffff, 22u);
    EXPECT_EQ(fw >> 16, 35u);
    EXPECT_EQ(H::reg_read(pf, model::init_seg::kCmdifRevFwSub) >> 16, 5u);
    EXPECT_EQ(H::reg_read(pf, model::init_seg::kInitializing) >> 31, 0u);
    EXPECT_GE(after - before, sc_core::sc_time(1, sc_core::SC_US)) << "a non-posted read crosses the link twice";
    uint32_t h1 = H::reg_read(pf, model::init_seg::kHealthCounter);
    uint32_t h2 = H::reg_read(pf, model::init_seg::kHealthCounter);
    EXPECT_NE(h1, h2);
  });
}

TEST(Enumeration, CommandThroughTheQueueGetsAnAnswer) {
  H::instance().run([] {
    auto& host = H::instance();
    auto& pf = host.device().pf();
    enable_memory(pf, kPfBar0);
    const uint64_t queue = H::kRamBase + 0x1000;
    H::reg_write(pf, model::init_seg::kCmdqAddrHigh, uint32_t(queue >> 32));
    H::reg_write(pf, model::init_seg::kCmdqAddrLowSize, uint32_t(queue));
    uint8_t* entry = host.ram().at(queue + 3 * 64);
    std::memset(entry, 0, 64);
    entry[0] = 7;
    store_be32(entry + 0x04, 16);
    store_be16(entry + 0x10, 0x104);  // ENABLE_HCA
    store_be32(entry + 0x38, 16);
    entry[0x3f] = 1;
    H::reg_write(pf, model::init_seg::kCmdDoorbell, 1u << 3);
    wait(sc_core::sc_time(10, sc_core::SC_US));
    EXPECT_EQ(entry[0x3f], 0) << "ownership returned, delivery OK";
    EXPECT_EQ(entry[0x20], uint8_t(model::CommandStatus::kOk));
    EXPECT_TRUE(pf.hca().context().hca_enabled);
    EXPECT_GT(pf.dma().charged(), sc_core::SC_ZERO_TIME) << "the command's DMA crossed the PCIe link model";
  });
}

// Event mode (mlx5-device-bringup.md section 3.4): once an EQ takes CMD events, every completed
// command also posts a CMD EQE with its slot bit, and the armed EQ raises its MSI-X vector.
TEST(Enumeration, CommandsCompleteThroughTheCmdEqInEventMode) {
  H::instance().run([] {
    auto& host = H::instance();
    auto& pf = host.device().pf();
    enable_memory(pf, kPfBar0);
    const uint64_t queue = H::kRamBase + 0x1000;
    H::reg_write(pf, model::init_seg::kCmdqAddrHigh, uint32_t(queue >> 32));
    H::reg_write(pf, model::init_seg::kCmdqAddrLowSize, uint32_t(queue));
    const uint64_t mailbox = H::kRamBase + 0x4000, eq_ring = H::kRamBase + 0x8000;
    auto submit = [&](uint32_t slot, const std::vector<uint8_t>& in) {
      uint8_t* entry = host.ram().at(queue + slot * 64);
      std::memset(entry, 0, 64);
      entry[0] = 7;
      store_be32(entry + 0x04, uint32_t(in.size()));
      std::memcpy(entry + 0x10, in.data(), 16);
      if (in.size() > 16) {  // one input mailbox block (token 0, block 0, no next)
        uint8_t* block = host.ram().at(mailbox);
        std::memset(block, 0, 576);
        std::memcpy(block, in.data() + 16, in.size() - 16);
        store_be64(entry + 0x08, mailbox);
      }
      store_be32(entry + 0x38, 16);
      entry[0x3f] = 1;
      H::reg_write(pf, model::init_seg::kCmdDoorbell, 1u << slot);
      wait(sc_core::sc_time(10, sc_core::SC_US));
      EXPECT_EQ(entry[0x3f], 0);
      EXPECT_EQ(entry[0x20], 0) << "status";
      return load_be32(entry + 0x28);
    };
    std::vector<uint8_t> alloc_uar(16);
    store_be16(&alloc_uar[0], 0x802);
    const uint32_t uar = submit(0, alloc_uar) & 0xffffff;
    EXPECT_GE(uar, 3u);
    std::vector<uint8_t> create_eq(0x118);
    store_be16(&create_eq[0], 0x301);
    store_be32(&create_eq[0x1c], (6u << 24) | uar);
    store_be32(&create_eq[0x24], 7);  // MSI-X vector 7
    store_be64(&create_eq[0x58], uint64_t(1) << 0x0a);
    store_be64(&create_eq[0x110], eq_ring);
    std::memset(host.ram().at(eq_ring), 0, 4096);
    msix_vector(pf, 7, false);
    msix_control(pf, true, false);
    const size_t fired_before = host.msix().fired.size();
    const uint32_t eqn = submit(1, create_eq) & 0xff;
    EXPECT_EQ(host.ram().at(eq_ring)[0x01], 0) << "CREATE_EQ of the cmd EQ completes in polling mode";
    H::reg_write(pf, uint64_t(uar) * 4096 + 0x40, eqn << 24);  // arm the EQ (CI 0)
    std::vector<uint8_t> enable(16);
    store_be16(&enable[0], 0x104);
    submit(2, enable);
    EXPECT_EQ(host.ram().at(eq_ring)[0x01], 0x0a) << "CMD EQE";
    EXPECT_EQ(load_be32(host.ram().at(eq_ring) + 0x20), 1u << 2) << "slot bitmask";
    ASSERT_EQ(host.msix().fired.size(), fired_before + 1);
    EXPECT_EQ(host.msix().fired.back(), 7u);
    EXPECT_EQ(pf.hca().counters().command_events, 1u);
    EXPECT_EQ(pf.hca().doorbell_counters().eq_doorbells, 1u);

    // The interrupt passes the function's MSI-X table. A masked vector latches its PBA bit and
    // fires when unmasked; the Function Mask holds every vector the same way.
    std::vector<uint8_t> query_uar = alloc_uar;  // any command: its completion posts a CMD EQE
    uint32_t ci = 1;
    auto raise = [&](uint32_t slot) {
      H::reg_write(pf, uint64_t(uar) * 4096 + 0x40, (eqn << 24) | ci);  // re-arm behind the EQEs seen
      submit(slot, query_uar);
      ++ci;
    };
    msix_vector(pf, 7, true);
    raise(3);
    EXPECT_EQ(host.msix().fired.size(), fired_before + 1) << "masked: held";
    EXPECT_TRUE(msix_pending(pf, 7)) << "and pending in the PBA";
    msix_vector(pf, 7, false);
    ASSERT_EQ(host.msix().fired.size(), fired_before + 2) << "unmasking sends it";
    EXPECT_EQ(host.msix().fired.back(), 7u);
    EXPECT_FALSE(msix_pending(pf, 7));
    msix_control(pf, true, true);
    raise(4);
    EXPECT_EQ(host.msix().fired.size(), fired_before + 2) << "function mask: held";
    EXPECT_TRUE(msix_pending(pf, 7));
    msix_control(pf, true, false);
    EXPECT_EQ(host.msix().fired.size(), fired_before + 3) << "clearing the function mask sends it";
    EXPECT_FALSE(msix_pending(pf, 7));
    msix_control(pf, false, false);
    raise(5);
    EXPECT_EQ(host.msix().fired.size(), fired_before + 3) << "MSI-X disabled: nothing (no INTx either)";
  });
}

TEST(Enumeration, SriovCreatesAndDestroysVfs) {
  H::instance().run([] {
    auto& device = H::instance().device();
    auto& pf = device.pf();
    const uint16_t sriov = H::find_ext_capability(pf, 0x0010);
    ASSERT_NE(sriov, 0);
    EXPECT_EQ(H::cfg_read(pf, sriov + 0x0e, 2), 4u) << "TotalVFs";
    EXPECT_EQ(H::cfg_read(pf, sriov + 0x1a, 2), 0x101eu) << "VF Device ID";
    EXPECT_FALSE(device.vf(0).present());

    // What Linux's sriov_enable does: NumVFs, then VF Enable + VF MSE.
    H::cfg_write(pf, sriov + 0x10, 2, 2);
    H::cfg_write(pf, sriov + 0x08, 2, 0x9);
    EXPECT_EQ(device.enabled_vfs(), 2);
    EXPECT_TRUE(device.vf(0).present());
    EXPECT_TRUE(device.vf(1).present());
    EXPECT_FALSE(device.vf(2).present());
    EXPECT_EQ(H::cfg_read(pf, sriov + 0x14, 2), 1u) << "First VF Offset";
    EXPECT_EQ(H::cfg_read(pf, sriov + 0x16, 2), 1u) << "VF Stride";
    EXPECT_EQ(device.sriov().vf_routing_id(0x0100, 1), 0x0102) << "PF 01:00.0 -> VF1 at 01:00.2";

    auto& vf = device.vf(1);
    EXPECT_EQ(H::cfg_read(vf, 0x00, 2), 0x15b3u) << "passthrough view shows the real vendor";
    EXPECT_EQ(H::cfg_read(vf, 0x02, 2), 0x101eu);
    EXPECT_EQ(H::find_ext_capability(vf, 0x0010), 0) << "a VF has no SR-IOV capability";
    EXPECT_NE(H::find_capability(vf, 0x11), 0);
    EXPECT_EQ(H::size_bar(vf, 0), device.config().vf.bar0_size);
    enable_memory(vf, 0x900000000ull);
    uint32_t fw = H::reg_read(vf, model::init_seg::kFwRev);
    EXPECT_EQ(fw & 0xffff, 22u) << "the VF's own init segment";

    // An FLR of the VF resets the VF alone.
    const uint64_t queue = H::kRamBase + 0x8000;
    H::reg_write(vf, model::init_seg::kCmdqAddrLowSize, uint32_t(queue));
    EXPECT_TRUE(vf.hca().init_segment().command_queue_configured());
    const uint16_t vf_exp = H::find_capability(vf, 0x10);
    H::cfg_write(vf, vf_exp + 0x08, 2, H::cfg_read(vf, vf_exp + 0x08, 2) | 0x8000);
    EXPECT_FALSE(vf.hca().init_segment().command_queue_configured());
    EXPECT_EQ(H::cfg_read(vf, vf_exp + 0x08, 2) & 0x8000, 0u) << "Initiate FLR reads 0";
    EXPECT_EQ(device.enabled_vfs(), 2) << "a VF's FLR leaves the other VFs";

    // NumVFs is locked while VFs are enabled; clearing VF Enable destroys them.
    H::cfg_write(pf, sriov + 0x10, 2, 3);
    EXPECT_EQ(H::cfg_read(pf, sriov + 0x10, 2), 2u);
    H::cfg_write(pf, sriov + 0x08, 2, 0);
    EXPECT_EQ(device.enabled_vfs(), 0);
    EXPECT_FALSE(vf.present());
    EXPECT_EQ(H::cfg_read(vf, 0x00, 4), 0xffffffffu) << "a destroyed VF answers nothing";
  });
}

// Issue 14: the PF's vfio-user client (QEMU hides SR-IOV from its guest, but a direct client does
// not have to) may not destroy or create the VFs other VMs use: its SR-IOV writes are dropped and
// its Initiate FLR resets the PF alone.
TEST(Enumeration, ThePfClientCannotManageVfs) {
  H::instance().run([] {
    auto& device = H::instance().device();
    auto& pf = device.pf();
    ASSERT_EQ(device.set_num_vfs(2), "");
    const uint16_t sriov = H::find_ext_capability(pf, 0x0010);
    const std::array<uint8_t, 2> zero{};
    pf.client_config_write(sriov + 0x08, zero);  // VF Enable off
    pf.client_config_write(sriov + 0x10, zero);  // NumVFs 0
    EXPECT_EQ(device.enabled_vfs(), 2) << "the VFs stay";
    EXPECT_EQ(H::cfg_read(pf, sriov + 0x10, 2), 2u);
    EXPECT_EQ(pf.counters().client_sriov_writes_dropped, 2u);

    enable_memory(pf, kPfBar0);
    const uint64_t queue = H::kRamBase + 0x8000;
    H::reg_write(pf, model::init_seg::kCmdqAddrLowSize, uint32_t(queue));
    ASSERT_TRUE(pf.hca().init_segment().command_queue_configured());
    const uint16_t exp = H::find_capability(pf, 0x10);
    std::array<uint8_t, 2> flr{};
    store_le16(flr.data(), uint16_t(H::cfg_read(pf, exp + 0x08, 2) | 0x8000));
    pf.client_config_write(exp + 0x08, flr);
    EXPECT_FALSE(pf.hca().init_segment().command_queue_configured()) << "the PF was reset";
    EXPECT_EQ(device.enabled_vfs(), 2) << "and the VFs were not";
    EXPECT_EQ(pf.counters().client_flr_as_reset, 1u);
    ASSERT_EQ(device.set_num_vfs(0), "") << "the admin path still manages them";
    EXPECT_EQ(device.enabled_vfs(), 0);
  });
}

TEST(Enumeration, HostAdminPathEnablesVfsLikeSriovNumvfs) {
  H::instance().run([] {
    auto& device = H::instance().device();
    EXPECT_EQ(device.set_num_vfs(3), "");
    EXPECT_EQ(device.enabled_vfs(), 3);
    EXPECT_NE(device.set_num_vfs(9), "") << "more than TotalVFs";
    EXPECT_EQ(device.set_num_vfs(0), "");
    EXPECT_EQ(device.enabled_vfs(), 0);
  });
}

}  // namespace
}  // namespace hcaemu::testbench
