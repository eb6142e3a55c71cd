#include "pcie/pci_function.h"

#include "common/log.h"

namespace hcaemu::pcie {
using namespace regs;

namespace {
ConfigSpace& laid_out(ConfigSpace& cs, ExtCapChain& ext, const FunctionConfig& cfg) {
  install_standard_layout(cs, cfg, ext);
  return cs;
}
// A VF's own BAR registers read 0 (SR-IOV §3.4.1.11): its apertures live in the PF's SR-IOV cap.
std::array<BarConfig, kNumBars> header_bars(const FunctionConfig& cfg) {
  return cfg.is_vf ? std::array<BarConfig, kNumBars>{} : cfg.bars;
}
}  // namespace

PciFunction::PciFunction(FunctionConfig cfg)
    : cfg_(cfg),
      ext_(cs_),
      bars_(laid_out(cs_, ext_, cfg_), kBar0, header_bars(cfg_)),
      msix_(cfg_.msix_vectors, cfg_.msix_table_offset, cfg_.msix_pba_offset) {
  wire_observers();
}

void PciFunction::wire_observers() {
  cs_.add_write_observer(kCommand, 2, [this](const ConfigSpace::WriteEvent& e) {
    if (e.old_value != e.new_value && cmd_cb_) cmd_cb_(uint16_t(e.old_value), uint16_t(e.new_value));
  });
  // Initiate FLR (PCIe §7.5.3.4 bit 15): the bit is RW only so that we see the 1; the reset
  // restores Device Control's default, so it always reads back 0.
  cs_.add_write_observer(kPcieCapOffset + kExpDevCtl, 2, [this](const ConfigSpace::WriteEvent& e) {
    if (e.new_value & kDevCtlInitiateFlr) {
      hcaemu::log().debug("pcie: function-level reset initiated");
      reset(ResetKind::kFlr);
    }
  });
  cs_.add_write_observer(kMsixCapOffset + kMsixCtrl, 2, [this](const ConfigSpace::WriteEvent& e) {
    msix_.set_control(e.new_value & kMsixCtrlEnable, e.new_value & kMsixCtrlFuncMask);
  });
  // PM §3.2.4: a write of an unsupported power state (D1/D2) completes but changes nothing.
  cs_.add_write_observer(kPmCapOffset + kPmCtrl, 2, [this](const ConfigSpace::WriteEvent& e) {
    const uint32_t state = e.new_value & kPmcsrStateMask;
    if (state != kPmStateD0 && state != kPmStateD3hot)
      cs_.set(kPmCapOffset + kPmCtrl, 2, (e.new_value & ~kPmcsrStateMask) | (e.old_value & kPmcsrStateMask));
  });
}

uint32_t PciFunction::config_read(uint16_t offset, unsigned size) const { return cs_.read(offset, size); }

void PciFunction::config_write(uint16_t offset, unsigned size, uint32_t value) {
  hcaemu::log().debug("pcie: {} config write off={:#05x} size={} value={:#x}", cfg_.is_vf ? "vf" : "pf", offset,
                      size, value);
  if (!cs_.write(offset, size, value))
    hcaemu::log().debug("pcie: config write rejected (off={:#05x} size={})", offset, size);
}

void PciFunction::config_read_block(uint16_t offset, std::span<uint8_t> out) const { cs_.read_block(offset, out); }

void PciFunction::config_write_block(uint16_t offset, std::span<const uint8_t> in) {
  hcaemu::log().debug("pcie: {} config block write off={:#05x} len={}", cfg_.is_vf ? "vf" : "pf", offset, in.size());
  cs_.write_block(offset, in);
}

MsixLayout PciFunction::msix_layout() const {
  return MsixLayout{cfg_.msix_vectors, cfg_.msix_table_bar, cfg_.msix_table_offset, cfg_.msix_pba_bar,
                    cfg_.msix_pba_offset};
}

bool PciFunction::memory_space_enabled() const { return cs_.get(kCommand, 2) & kCmdMemorySpace; }
bool PciFunction::bus_master_enabled() const { return cs_.get(kCommand, 2) & kCmdBusMaster; }
bool PciFunction::msix_enabled() const { return cs_.get(kMsixCapOffset + kMsixCtrl, 2) & kMsixCtrlEnable; }
bool PciFunction::msix_function_masked() const { return cs_.get(kMsixCapOffset + kMsixCtrl, 2) & kMsixCtrlFuncMask; }
uint8_t PciFunction::power_state() const { return cs_.get(kPmCapOffset + kPmCtrl, 2) & kPmcsrStateMask; }

uint16_t PciFunction::max_payload_size() const {
  return uint16_t(128u << ((cs_.get(kPcieCapOffset + kExpDevCtl, 2) & kDevCtlMpsMask) >> kDevCtlMpsShift));
}
uint16_t PciFunction::max_read_request_size() const {
  return uint16_t(128u << ((cs_.get(kPcieCapOffset + kExpDevCtl, 2) & kDevCtlMrrsMask) >> kDevCtlMrrsShift));
}

uint16_t PciFunction::append_extended_capability(uint16_t id, uint8_t version, uint16_t size) {
  return ext_.append(id, version, size);
}

void PciFunction::reset(ResetKind kind) {
  ++reset_count_;
  const uint16_t old_cmd = uint16_t(cs_.get(kCommand, 2));
  cs_.reset(kind);  // reset observers (e.g. SR-IOV) run inside
  msix_.reset();
  hcaemu::log().debug("pcie: {} reset ({})", cfg_.is_vf ? "vf" : "pf",
                      kind == ResetKind::kFlr ? "flr" : kind == ResetKind::kHot ? "hot" : "cold");
  const uint16_t new_cmd = uint16_t(cs_.get(kCommand, 2));
  if (old_cmd != new_cmd && cmd_cb_) cmd_cb_(old_cmd, new_cmd);
  if (flr_cb_) flr_cb_(kind);
}

}  // namespace hcaemu::pcie
