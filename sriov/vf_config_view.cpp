#include "sriov/vf_config_view.h"

#include <stdexcept>

#include "common/log.h"

namespace hcaemu::sriov {
using namespace pcie::regs;

pcie::FunctionConfig make_vf_function_config(const pcie::FunctionConfig& pf, const SriovConfig& sriov) {
  pcie::FunctionConfig c = pf;
  c.is_vf = true;
  c.device_id = sriov.vf_device_id;  // reads 0xFFFF in the VF itself; the view presents it
  c.bars = sriov.vf_bars;
  c.msix_vectors = sriov.vf_msix_vectors;
  c.ari_next_function = 0;  // VFs are located through First VF Offset/Stride, not ARI links
  return c;                 // serial number stays the PF's (SR-IOV §3.9: VFs report the PF's DSN)
}

namespace {
std::unique_ptr<pcie::PciFunction> make_vf(pcie::FunctionConfig cfg, const SriovCapability& s, uint16_t idx) {
  if (!cfg.is_vf) throw std::invalid_argument("VfConfigView needs a FunctionConfig with is_vf set");
  if (idx >= s.total_vfs()) throw std::invalid_argument("VF index beyond TotalVFs");
  const auto t = s.vf_bar(cfg.msix_table_bar), p = s.vf_bar(cfg.msix_pba_bar);
  if (!t.present || !p.present || cfg.msix_table_offset + uint64_t(cfg.msix_vectors) * 16 > t.size ||
      cfg.msix_pba_offset + (uint64_t(cfg.msix_vectors) + 63) / 64 * 8 > p.size)
    throw std::invalid_argument("VF MSI-X table/PBA do not fit the VF BARs");
  return std::make_unique<pcie::PciFunction>(cfg);
}

std::array<pcie::BarConfig, kNumBars> vf_bar_configs(const SriovCapability& s) {
  std::array<pcie::BarConfig, kNumBars> b{};
  for (unsigned i = 0; i < kNumBars; ++i) {
    const auto info = s.vf_bar(i);
    if (info.present) b[i] = pcie::BarConfig{info.size, info.is_64bit, info.prefetchable};
  }
  return b;
}

pcie::ConfigSpace& shadow_with_ids(pcie::ConfigSpace& cs, uint16_t vendor, uint16_t device) {
  cs.define(kVendorId, 2, {.value = vendor});
  cs.define(kDeviceId, 2, {.value = device});
  cs.define(kCommand, 2, {.rw = kCmdMemorySpace});
  return cs;
}
}  // namespace

VfConfigView::VfConfigView(pcie::FunctionConfig vf_cfg, const SriovCapability& pf_sriov, uint16_t vf_index,
                           uint16_t pf_vendor_id)
    : vf_(make_vf(vf_cfg, pf_sriov, vf_index)),
      sriov_(pf_sriov),
      vf_index_(vf_index),
      bars_(shadow_with_ids(shadow_, pf_vendor_id, pf_sriov.vf_device_id()), kBar0, vf_bar_configs(pf_sriov)) {
  for (uint16_t i = kVendorId; i < kDeviceId + 2; ++i) vmask_[i] = 0xFF;
  vmask_[kCommand] = uint8_t(kCmdMemorySpace);
  for (uint16_t i = kBar0; i < kBar0 + 4 * kNumBars; ++i) vmask_[i] = 0xFF;
  // A VF FLR (or DEVICE_RESET) also resets what we virtualise: MSE off, BARs unprogrammed.
  vf_->config_space().add_reset_observer([this](pcie::ResetKind k) { shadow_.reset(k); });
}

uint32_t VfConfigView::overlay_mask(uint16_t offset, unsigned size) const {
  uint32_t m = 0;
  for (unsigned i = 0; i < size && i < 4; ++i)
    if (offset + i < kOverlayEnd) m |= uint32_t(vmask_[offset + i]) << (8 * i);
  return m;
}

uint32_t VfConfigView::config_read(uint16_t offset, unsigned size) const {
  const uint32_t raw = vf_->config_read(offset, size);
  if (offset >= kOverlayEnd) return raw;
  const uint32_t m = overlay_mask(offset, size);
  return (raw & ~m) | (shadow_.read(offset, size) & m);
}

void VfConfigView::config_write(uint16_t offset, unsigned size, uint32_t value) {
  if (offset < kOverlayEnd) shadow_.write(offset, size, value);
  vf_->config_write(offset, size, value);  // the VF's own RO bits drop what is virtual
}

void VfConfigView::config_read_block(uint16_t offset, std::span<uint8_t> out) const {
  vf_->config_read_block(offset, out);
  if (uint32_t(offset) + out.size() > pcie::ConfigSpace::kSize) return;  // all 0xFF already
  for (size_t i = 0; i < out.size() && offset + i < kOverlayEnd; ++i) {
    const uint8_t m = vmask_[offset + i];
    out[i] = uint8_t((out[i] & ~m) | (shadow_.get(uint16_t(offset + i), 1) & m));
  }
}

void VfConfigView::config_write_block(uint16_t offset, std::span<const uint8_t> in) {
  if (offset < kOverlayEnd) shadow_.write_block(offset, in.first(std::min<size_t>(in.size(), kOverlayEnd - offset)));
  vf_->config_write_block(offset, in);
}

bool VfConfigView::guest_memory_enable() const { return shadow_.get(kCommand, 2) & kCmdMemorySpace; }

bool VfConfigView::memory_space_enabled() const {
  return guest_memory_enable() && sriov_.vf_enabled() && sriov_.vf_memory_space_enabled() &&
         vf_index_ < sriov_.num_vfs();
}

}  // namespace hcaemu::sriov
