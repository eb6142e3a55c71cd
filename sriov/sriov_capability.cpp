#include "sriov/sriov_capability.h"

#include <bit>
#include <stdexcept>

#include "common/log.h"

namespace hcaemu::sriov {
using pcie::ConfigSpace;
using pcie::RegSpec;

namespace {
std::array<pcie::BarConfig, pcie::regs::kNumBars> per_vf_bars(const SriovConfig& c, uint64_t page) {
  auto bars = c.vf_bars;
  // §3.3.14: each VF's slice is aligned to System Page Size, so a VF BAR reports at least a page.
  for (auto& b : bars)
    if (b.size && b.size < page) b.size = page;
  return bars;
}
}  // namespace

SriovCapability::SriovCapability(pcie::PciFunction& pf, SriovConfig cfg)
    : pf_(pf), cfg_(cfg), base_(0) {
  if (pf.config().is_vf) throw std::invalid_argument("a VF has no SR-IOV capability");
  if (cfg_.total_vfs == 0) throw std::invalid_argument("total_vfs must be >= 1");
  if (!(cfg_.supported_page_sizes & 1)) throw std::invalid_argument("4 KiB page size must be supported");
  if (cfg_.vf_stride == 0 && cfg_.total_vfs > 1) throw std::invalid_argument("VF stride 0 with several VFs");
  base_ = pf.append_extended_capability(sr::kId, sr::kVersion, sr::kSize);
  ConfigSpace& cs = pf.config_space();
  cs.define(reg(sr::kCaps), 4, {.value = sr::kCapAriPreserved});
  cs.define(reg(sr::kControl), 2, {.rw = sr::kCtlVfEnable | sr::kCtlVfMse | sr::kCtlAriHierarchy});
  cs.define(reg(sr::kStatus), 2, {.rw1c = 0x1});
  // §3.3.7: without VF migration, InitialVFs equals TotalVFs.
  cs.define(reg(sr::kInitialVfs), 2, {.value = cfg_.total_vfs});
  cs.define(reg(sr::kTotalVfs), 2, {.value = cfg_.total_vfs});
  cs.define(reg(sr::kNumVfs), 2, {.rw = 0xFFFF});
  cs.define(reg(sr::kFuncDepLink), 1, {.value = cfg_.function_dependency_link});
  cs.define(reg(sr::kFirstVfOffset), 2, {.value = cfg_.first_vf_offset});
  cs.define(reg(sr::kVfStride), 2, {.value = cfg_.vf_stride});
  cs.define(reg(sr::kVfDeviceId), 2, {.value = cfg_.vf_device_id});
  cs.define(reg(sr::kSupportedPageSizes), 4, {.value = cfg_.supported_page_sizes});
  cs.define(reg(sr::kSystemPageSize), 4, {.value = 0x1, .rw = 0xFFFFFFFF});  // validated below
  vf_bars_.emplace(cs, reg(sr::kVfBar0), per_vf_bars(cfg_, 4096));
  cs.define(reg(sr::kMigrationArray), 4, {});

  cs.add_write_observer(reg(sr::kControl), 2, [this](const ConfigSpace::WriteEvent& e) { on_control(e.old_value, e.new_value); });
  cs.add_write_observer(reg(sr::kNumVfs), 2, [this](const ConfigSpace::WriteEvent& e) { on_num_vfs(e.old_value, e.new_value); });
  cs.add_write_observer(reg(sr::kSystemPageSize), 4,
                        [this](const ConfigSpace::WriteEvent& e) { on_page_size(e.old_value, e.new_value); });
  cs.add_reset_observer([this](pcie::ResetKind) { on_reset(); });
}

bool SriovCapability::vf_enabled() const { return pf_.config_space().get(reg(sr::kControl), 2) & sr::kCtlVfEnable; }
bool SriovCapability::vf_memory_space_enabled() const {
  return pf_.config_space().get(reg(sr::kControl), 2) & sr::kCtlVfMse;
}
bool SriovCapability::ari_capable_hierarchy() const {
  return pf_.config_space().get(reg(sr::kControl), 2) & sr::kCtlAriHierarchy;
}
uint16_t SriovCapability::num_vfs() const { return uint16_t(pf_.config_space().get(reg(sr::kNumVfs), 2)); }
uint64_t SriovCapability::system_page_size() const {
  return uint64_t(1) << (std::countr_zero(pf_.config_space().get(reg(sr::kSystemPageSize), 4)) + 12);
}

// While VF Enable is set, NumVFs (§3.3.8) and System Page Size (§3.3.13) must not change: the
// VFs' routing IDs and BAR slices depend on them. We make them read-only for that time.
void SriovCapability::apply_locks(bool enabled) {
  ConfigSpace& cs = pf_.config_space();
  cs.set_rw_mask(reg(sr::kNumVfs), 2, enabled ? 0 : 0xFFFF);
  cs.set_rw_mask(reg(sr::kSystemPageSize), 4, enabled ? 0 : 0xFFFFFFFF);
}

void SriovCapability::on_control(uint32_t old_ctl, uint32_t new_ctl) {
  ConfigSpace& cs = pf_.config_space();
  // §3.3.4.5: ARI Capable Hierarchy may change only while VF Enable is clear.
  if ((old_ctl & sr::kCtlVfEnable) && ((old_ctl ^ new_ctl) & sr::kCtlAriHierarchy)) {
    new_ctl = (new_ctl & ~sr::kCtlAriHierarchy) | (old_ctl & sr::kCtlAriHierarchy);
    cs.set(reg(sr::kControl), 2, new_ctl);
    ++rejected_writes_;
  }
  const bool en = new_ctl & sr::kCtlVfEnable, mse = new_ctl & sr::kCtlVfMse;
  apply_locks(en);
  hcaemu::log().debug("sriov: control {:#06x} -> {:#06x} (num_vfs={})", old_ctl, new_ctl, num_vfs());
  if (en && !enabled_) {
    enabled_ = true;
    if (listener_) listener_->vfs_enabled(num_vfs());
  }
  if (mse != mse_) {
    mse_ = mse;
    if (listener_) listener_->vf_memory_space_changed(mse);
  }
  if (!en && enabled_) {
    enabled_ = false;
    if (listener_) listener_->vfs_disabled();
  }
}

// §3.3.8: "results are undefined" for NumVFs > TotalVFs. We refuse the write (the register
// keeps its value) and count it, so a bad value can never reach the VF bookkeeping.
void SriovCapability::on_num_vfs(uint32_t old_v, uint32_t new_v) {
  if (vf_enabled()) {
    ++rejected_writes_;  // the RW mask already kept the value
    return;
  }
  if (new_v > cfg_.total_vfs) {
    pf_.config_space().set(reg(sr::kNumVfs), 2, old_v);
    ++rejected_writes_;
    hcaemu::log().debug("sriov: NumVFs {} > TotalVFs {} refused", new_v, cfg_.total_vfs);
  }
}

// §3.3.13: exactly one bit, and one of Supported Page Sizes; anything else is refused.
void SriovCapability::on_page_size(uint32_t old_v, uint32_t new_v) {
  if (vf_enabled()) {
    ++rejected_writes_;
    return;
  }
  if (!std::has_single_bit(new_v) || !(new_v & cfg_.supported_page_sizes)) {
    pf_.config_space().set(reg(sr::kSystemPageSize), 4, old_v);
    ++rejected_writes_;
    return;
  }
  if (new_v != old_v) resize_vf_bars();
}

void SriovCapability::resize_vf_bars() {
  const auto bars = per_vf_bars(cfg_, system_page_size());
  for (unsigned i = 0; i < pcie::regs::kNumBars; ++i)
    if (bars[i].size && bars[i].size != vf_bars_->size(i)) vf_bars_->resize(i, bars[i].size);
}

// A PF reset clears SR-IOV Control (VF Enable, VF MSE) and System Page Size: the VFs are gone.
void SriovCapability::on_reset() {
  apply_locks(false);
  resize_vf_bars();
  if (mse_) {
    mse_ = false;
    if (listener_) listener_->vf_memory_space_changed(false);
  }
  if (enabled_) {
    enabled_ = false;
    if (listener_) listener_->vfs_disabled();
  }
}

pcie::BarInfo SriovCapability::vf_bar(unsigned index) const { return vf_bars_->info(index); }

uint64_t SriovCapability::vf_bar_aperture(unsigned index) const { return vf_bars_->size(index) * num_vfs(); }

std::optional<uint64_t> SriovCapability::vf_bar_base(unsigned index, uint16_t vf) const {
  const pcie::BarInfo b = vf_bars_->info(index);
  if (!b.present || vf >= num_vfs()) return std::nullopt;
  return b.base + uint64_t(vf) * b.size;
}

uint16_t SriovCapability::vf_routing_id(uint16_t pf_routing_id, uint16_t vf) const {
  return uint16_t(pf_routing_id + cfg_.first_vf_offset + uint32_t(vf) * cfg_.vf_stride);
}

}  // namespace hcaemu::sriov
