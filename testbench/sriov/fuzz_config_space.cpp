// libFuzzer target: config space writes and reads as a client sends them (vfio-user REGION_WRITE /
// REGION_READ on the config region): the PF with its SR-IOV capability (what a direct client or
// the host admin path writes) and a VF's passthrough view, every offset and size the protocol
// allows. Each 8 bytes of input are one access: target, read or write, size, offset, value. The
// registers must keep their semantics whatever comes: IDs and read-only fields never change,
// NumVFs never passes TotalVFs, a BAR never decodes at an address its size does not align.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "pcie/pci_function.h"
#include "sriov/sriov_capability.h"
#include "sriov/vf_config_view.h"

using namespace hcaemu;

namespace {

void check(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "config space: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pcie::PciFunction pf{pcie::FunctionConfig{}};
  sriov::SriovCapability cap(pf, sriov::SriovConfig{});
  const uint16_t sriov = cap.offset();
  sriov::VfConfigView vf(sriov::make_vf_function_config(pf.config(), cap.config()), cap, 0, pf.config().vendor_id);
  const uint32_t ids = pf.config_read(0, 4), vf_ids = vf.config_read(0, 4);
  const uint32_t total_vfs = pf.config_read(sriov + sriov::sr::kTotalVfs, 2);
  for (size_t at = 0; at + 8 <= size; at += 8) {
    const uint8_t* op = data + at;
    const bool on_vf = op[0] & 1, write = op[0] & 2;
    const unsigned access = 1u << (op[0] >> 2 & 3);  // 1, 2, 4 or 8 bytes
    const uint16_t offset = uint16_t((op[1] | op[2] << 8) & 0xfff);
    const uint32_t value = uint32_t(op[3]) | uint32_t(op[4]) << 8 | uint32_t(op[5]) << 16 | uint32_t(op[6]) << 24;
    uint8_t bytes[8] = {};
    for (unsigned i = 0; i < 8; ++i) bytes[i] = uint8_t(value >> (8 * (i % 4))) ^ op[7];
    const std::span<uint8_t> block(bytes, std::min<size_t>(access, 4096u - offset));
    if (on_vf) {
      if (write)
        vf.config_write_block(offset, block);
      else
        vf.config_read_block(offset, block);
    } else if (write) {
      pf.config_write_block(offset, block);
    } else {
      pf.config_read_block(offset, block);
    }
    check(pf.config_read(0, 4) == ids, "the PF's IDs changed");
    check(vf.config_read(0, 4) == vf_ids, "the VF's IDs changed");
    check(pf.config_read(sriov + sriov::sr::kTotalVfs, 2) == total_vfs, "TotalVFs changed");
    check(pf.config_read(sriov + sriov::sr::kNumVfs, 2) <= total_vfs, "NumVFs past TotalVFs");
    for (unsigned bar = 0; bar < pcie::regs::kNumBars; ++bar) {
      const pcie::BarInfo info = pf.bar(bar);
      check(info.size == 0 || (info.base & (info.size - 1)) == 0, "a PF BAR at an unaligned base");
      const pcie::BarInfo vinfo = vf.bar(bar);
      check(vinfo.size == 0 || (vinfo.base & (vinfo.size - 1)) == 0, "a VF BAR at an unaligned base");
    }
  }
  return 0;
}
