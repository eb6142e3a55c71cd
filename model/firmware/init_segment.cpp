#include "model/firmware/init_segment.h"

#include <algorithm>

#include "common/endian.h"

namespace hcaemu::model {

using namespace init_seg;

InitSegment::InitSegment(FirmwareVersion fw) : fw_(fw) { reset(); }

uint32_t InitSegment::dword(uint32_t offset) const { return load_be32(&bytes_[offset]); }
void InitSegment::set_dword(uint32_t offset, uint32_t value) { store_be32(&bytes_[offset], value); }

void InitSegment::reset() {
  bytes_.fill(0);
  cmdq_address_ = 0;
  nic_interface_ = 0;
  set_dword(kFwRev, (uint32_t(fw_.minor) << 16) | fw_.major);
  set_dword(kCmdifRevFwSub, (kCmdifRevision << 16) | fw_.subminor);
  set_dword(kCmdqAddrLowSize, (kLogCmdqSize << 4) | kLogCmdqStride);
  // The health buffer's fw_ver doubles as the driver's "device still there" probe.
  set_dword(kHealthFwVer, (uint32_t(fw_.major) << 24) | (uint32_t(fw_.minor) << 16) | (fw_.subminor & 0xffff));
}

void InitSegment::fail(uint8_t syndrome) {
  nic_interface_ = kNicInterfaceDisabled;
  bytes_[kHealthSyndrome + 1] = syndrome;
  refresh_dynamic(0);
}

void InitSegment::refresh_dynamic(uint64_t now_ticks) {
  set_dword(kInternalTimerHigh, uint32_t(now_ticks >> 32));
  set_dword(kInternalTimerLow, uint32_t(now_ticks));
  set_dword(kHealthCounter, health_counter_);
  uint32_t low = uint32_t(cmdq_address_) & 0xfffff000u;
  set_dword(kCmdqAddrLowSize, low | (nic_interface_ << 8) | (kLogCmdqSize << 4) | kLogCmdqStride);
  set_dword(kCmdqAddrHigh, uint32_t(cmdq_address_ >> 32));
}

void InitSegment::read(uint32_t offset, std::span<uint8_t> out, uint64_t now_ticks) {
  if (offset >= kSize || out.size() > kSize - offset) {
    std::fill(out.begin(), out.end(), 0xff);
    return;
  }
  // The health poll expects the counter to move between its polls (every ~2 s); firmware
  // bumps it continuously, we bump it whenever someone looks.
  if (offset <= kHealthCounter + 3 && offset + out.size() > kHealthCounter) ++health_counter_;
  refresh_dynamic(now_ticks);
  std::copy_n(bytes_.begin() + offset, out.size(), out.begin());
}

InitSegmentEffect InitSegment::write(uint32_t offset, std::span<const uint8_t> in) {
  InitSegmentEffect effect;
  if (offset >= kSize || in.size() > kSize - offset) return effect;
  // Only whole writable dwords have a meaning; bytes of read-only registers are ignored.
  std::array<uint8_t, kSize> scratch = bytes_;
  std::copy(in.begin(), in.end(), scratch.begin() + offset);
  uint32_t first = offset & ~3u;
  uint32_t last = (offset + uint32_t(in.size()) - 1) & ~3u;
  for (uint32_t dw = first; dw <= last; dw += 4) {
    uint32_t value = load_be32(&scratch[dw]);
    switch (dw) {
      case kCmdqAddrHigh:
        cmdq_address_ = (uint64_t(value) << 32) | (cmdq_address_ & 0xffffffffu);
        break;
      case kCmdqAddrLowSize:
        // The driver writes the 4 KiB aligned address here, and the NIC interface state
        // (bits 10:8) when it asks for a teardown mode; the size fields are read-only.
        cmdq_address_ = (cmdq_address_ & ~0xffffffffull) | (value & 0xfffff000u);
        nic_interface_ = (value >> 8) & 0x7;
        bytes_[kHealthSyndrome + 1] = 0;  // the driver sets the function up again after a failure
        break;
      case kCmdDoorbell:
        effect.doorbell_bits |= value;
        break;
      default:
        break;  // read-only or reserved
    }
  }
  refresh_dynamic(0);
  return effect;
}

}  // namespace hcaemu::model
