// Issue 14: a client that truncates the memory it shared (or leaves a DMA message unanswered) made
// that access fail and nothing more: the function went on with a half-done command or WQE. A
// ConnectX takes such a PCIe error as fatal for the function: here its objects go, its NIC
// interface reads disabled with health syndrome 0xa (mlx5's health poll then recovers by loading
// the driver again), doorbells are ignored, and another function on its own memory goes on. The
// driver's command queue set-up brings the function back.
#include <gtest/gtest.h>

#include "model/firmware/init_segment.h"
#include "testbench/systemc/host_model.h"

namespace hcaemu::testbench {
namespace {

using H = SystemCHost;
namespace seg = model::init_seg;

void enable_memory(sriov::FunctionPort& f, uint64_t bar0) {
  H::cfg_write(f, 0x10, 4, uint32_t(bar0));
  H::cfg_write(f, 0x14, 4, uint32_t(bar0 >> 32));
  H::cfg_write(f, 0x04, 2, 0x6);  // memory space + bus master
}

// ENABLE_HCA through command slot `slot` of the queue at `queue`; returns the delivery status
// (0xff: the device never gave the entry back).
uint8_t enable_hca(sriov::FunctionPort& f, SimHostMemory& ram, uint64_t queue, unsigned slot) {
  H::reg_write(f, seg::kCmdqAddrHigh, uint32_t(queue >> 32));
  H::reg_write(f, seg::kCmdqAddrLowSize, uint32_t(queue));
  uint8_t* entry = ram.at(queue + slot * 64);
  std::memset(entry, 0, 64);
  entry[0] = 7;
  store_be32(entry + 0x04, 16);
  store_be16(entry + 0x10, 0x104);  // ENABLE_HCA
  store_be16(entry + 0x16, f.hca().vhca_id());
  store_be32(entry + 0x38, 16);
  entry[0x3f] = 1;
  H::reg_write(f, seg::kCmdDoorbell, 1u << slot);
  sc_core::wait(sc_core::sc_time(20, sc_core::SC_US));
  return entry[0x3f] == 0 ? entry[0x20] : 0xff;
}

TEST(HostFault, FailsOnlyTheFunctionWhoseClientFaultedUntilItsDriverSetsItUp) {
  H::instance().run([] {
    auto& host = H::instance();
    auto& device = host.device();
    ASSERT_EQ(device.set_num_vfs(1), "");
    auto& pf = device.pf();
    auto& vf = device.vf(0);
    SimHostMemory pf_ram(H::kRamBase, 1 << 20);  // the PF's client's memory, apart from the VF's
    pf.attach_host(&pf_ram, &host.msix(), sriov::FunctionFace::MsixRouting::kThroughTable);
    enable_memory(pf, 0x800000000ull);
    const uint64_t queue = H::kRamBase + 0x1000;
    ASSERT_EQ(enable_hca(pf, pf_ram, queue, 0), 0) << "healthy";
    EXPECT_FALSE(pf.hca().failed());

    pf_ram.fail_accesses();  // the client truncates its memory: the next command's DMA faults
    H::reg_write(pf, seg::kCmdDoorbell, 1u << 1);
    sc_core::wait(sc_core::sc_time(20, sc_core::SC_US));
    EXPECT_TRUE(pf.hca().failed());
    EXPECT_EQ(pf.hca().counters().failures, 1u);
    EXPECT_EQ((H::reg_read(pf, seg::kCmdqAddrLowSize) >> 8) & 7, seg::kNicInterfaceDisabled);
    EXPECT_EQ((H::reg_read(pf, seg::kHealthSyndrome) >> 16) & 0xff, seg::kSyndromeFetchPciError);
    EXPECT_FALSE(pf.hca().context().hca_enabled) << "its objects and state went";
    const uint64_t faults = pf_ram.host_faults();
    H::reg_write(pf, seg::kCmdDoorbell, 1u << 2);  // ignored while failed: no DMA is even tried
    H::reg_write(pf, 0x3000 + 0x800, 0);           // a UAR doorbell too
    sc_core::wait(sc_core::sc_time(20, sc_core::SC_US));
    EXPECT_EQ(pf_ram.host_faults(), faults);
    EXPECT_EQ(pf.hca().counters().dropped_while_failed, 2u);

    // Another function, on its own client's memory, is untouched.
    enable_memory(vf, 0x900000000ull);
    EXPECT_EQ(enable_hca(vf, host.ram(), H::kRamBase + 0x8000, 0), 0);
    EXPECT_FALSE(vf.hca().failed());

    // mlx5's recovery loads the driver again: the command queue set-up clears the failure.
    pf_ram.heal();
    ASSERT_EQ(enable_hca(pf, pf_ram, queue, 3), 0);
    EXPECT_FALSE(pf.hca().failed());
    EXPECT_EQ((H::reg_read(pf, seg::kHealthSyndrome) >> 16) & 0xff, 0u);
    EXPECT_TRUE(pf.hca().context().hca_enabled);

    pf.hca().function_reset();
    pf.attach_host(&host.ram(), &host.msix(), sriov::FunctionFace::MsixRouting::kThroughTable);
    ASSERT_EQ(device.set_num_vfs(0), "");
  });
}

// Issue 14: every frame the switch delivered was copied into the receiving function's work queue
// without a bound, so senders faster than the receiver (a broadcast TSO storm of MSS 1 from a VF:
// 65,536 frames per WQE) grew hcaemu's memory at will. The queue now holds at most 65,536 frames
// (or 64 MiB), like a NIC's receive buffer: beyond, frames are dropped and counted.
TEST(HostFault, FramesWaitingForAFunctionAreBounded) {
  H::instance().run([] {
    auto& pf = H::instance().device().pf();
    std::vector<uint8_t> frame(64, 0);
    frame[0] = 0x02;  // unicast to nobody in particular: the function drops it once it runs
    const uint64_t dropped = pf.hca().counters().rx_frames_dropped_queue_full;
    for (int i = 0; i < 65536 + 10; ++i) pf.hca().receive(frame);  // the engine has not run yet
    EXPECT_EQ(pf.hca().counters().rx_frames_dropped_queue_full - dropped, 10u);
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_MS));  // the engine drains the queue
    pf.hca().receive(frame);
    EXPECT_EQ(pf.hca().counters().rx_frames_dropped_queue_full - dropped, 10u) << "room again";
  });
}

}  // namespace
}  // namespace hcaemu::testbench
