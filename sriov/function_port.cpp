#include "sriov/function_port.h"

#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "pcie/capabilities.h"
#include "pcie/model_time.h"
#include "pcie/pci_regs.h"

namespace hcaemu::sriov {

FunctionPort::FunctionPort(sc_core::sc_module_name name, std::string function_name, const pcie::LinkConfig& link,
                           uint64_t bar0_size, model::FunctionIdentity identity,
                           const model::FirmwareVersion& fw)
    : sc_module(name),
      mmio("mmio"),
      function_name_(std::move(function_name)),
      link_("link", link, pcie::LinkDirection::kHostToDevice),
      dma_(link),
      hca_("hca", bar0_size, identity, fw) {
  mmio.bind(link_.target);
  link_.initiator.bind(hca_.bar0);
}

void FunctionPort::wire_resets(pcie::PciFunction& function) {
  // An FLR (Initiate FLR in Device Control, or DEVICE_RESET) drops every piece of HCA state.
  function.on_function_level_reset([this](pcie::ResetKind) {
    log().info("{}: function level reset", function_name_);
    hca_.function_reset();
  });
}

void FunctionPort::attach_pf(pcie::PciFunction& pf) {
  pf_ = &pf;
  wire_resets(pf);
  wire_msix();
  hca_.set_active(true);
}

void FunctionPort::set_vf_shape(const std::array<pcie::BarConfig, pcie::regs::kNumBars>& bars, uint32_t vectors) {
  vf_bars_ = bars;
  vf_vectors_ = vectors;
  hca_.set_active(false);
}

void FunctionPort::attach_vf(std::unique_ptr<VfConfigView> view) {
  vf_ = std::move(view);
  wire_resets(vf_->function());
  wire_msix();
  hca_.set_active(true);
}

void FunctionPort::detach_vf() {
  vf_.reset();
  hca_.set_active(false);  // the VF's state is gone with it
}

pcie::PciFunction* FunctionPort::pci() {
  if (pf_) return pf_;
  return vf_ ? &vf_->function() : nullptr;
}

BarShape FunctionPort::bar_shape(int bar) const {
  if (bar < 0 || bar >= int(pcie::regs::kNumBars)) return {};
  const pcie::BarConfig& c = pf_ ? pf_->config().bars[size_t(bar)] : vf_bars_[size_t(bar)];
  return BarShape{c.size, c.is_64bit, c.prefetchable};
}

uint32_t FunctionPort::msix_vectors() const { return pf_ ? pf_->config().msix_vectors : vf_vectors_; }

void FunctionPort::charge_config_access() {
  pcie::consume_model_time(sc_core::sc_time(link_.timing().config_access_latency().count(), sc_core::SC_NS));
}

void FunctionPort::config_read(uint32_t offset, std::span<uint8_t> out) {
  charge_config_access();
  if (offset >= pcie::ConfigSpace::kSize || out.size() > pcie::ConfigSpace::kSize - offset) {
    std::fill(out.begin(), out.end(), 0xff);
    return;
  }
  if (pf_)
    pf_->config_read_block(uint16_t(offset), out);
  else if (vf_)
    vf_->config_read_block(uint16_t(offset), out);
  else
    std::fill(out.begin(), out.end(), 0xff);  // no function answers: master abort
}

void FunctionPort::config_write(uint32_t offset, std::span<const uint8_t> in) {
  charge_config_access();
  if (offset >= pcie::ConfigSpace::kSize || in.size() > pcie::ConfigSpace::kSize - offset) return;
  if (pf_)
    pf_->config_write_block(uint16_t(offset), in);
  else if (vf_)
    vf_->config_write_block(uint16_t(offset), in);
}

void FunctionPort::client_config_write(uint32_t offset, std::span<const uint8_t> in) {
  if (pf_ == nullptr) return config_write(offset, in);
  const auto overlaps = [&](uint32_t reg, uint32_t size) { return offset < reg + size && reg < offset + in.size(); };
  if (const uint16_t sriov = pcie::find_ext_capability(pf_->config_space(), 0x0010);
      sriov != 0 && (overlaps(sriov + 0x08, 2) || overlaps(sriov + 0x10, 2))) {  // SR-IOV Control, NumVFs
    if (counters_.client_sriov_writes_dropped++ < 4)
      log().warn("{}: the client's write to the SR-IOV capability (offset {:#x}) ignored: VFs are the host "
                 "admin's (hcaemu --vfs)", function_name_, offset);
    charge_config_access();
    return;
  }
  const uint32_t dev_ctl = pcie::regs::kPcieCapOffset + pcie::regs::kExpDevCtl;
  if (offset <= dev_ctl + 1 && dev_ctl + 1 < offset + in.size()) {
    const uint32_t at = dev_ctl + 1 - offset;  // the high byte of Device Control
    if (in[at] & (pcie::regs::kDevCtlInitiateFlr >> 8)) {
      std::vector<uint8_t> without_flr(in.begin(), in.end());
      without_flr[at] &= uint8_t(~(pcie::regs::kDevCtlInitiateFlr >> 8));
      config_write(offset, without_flr);
      ++counters_.client_flr_as_reset;
      log().info("{}: the client's Initiate FLR resets the PF (SR-IOV configuration kept)", function_name_);
      reset();
      return;
    }
  }
  config_write(offset, in);
}

bool FunctionPort::memory_space_enabled() const {
  if (pf_) return pf_->memory_space_enabled();
  return vf_ && vf_->memory_space_enabled();
}

bool FunctionPort::mmio_transport(tlm::tlm_command command, uint64_t offset, uint8_t* data, unsigned length) {
  tlm::tlm_generic_payload trans;
  trans.set_command(command);
  trans.set_address(offset);
  trans.set_data_ptr(data);
  trans.set_data_length(length);
  trans.set_streaming_width(length);
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  mmio->b_transport(trans, delay);
  wait(delay);  // the caller is the kernel queue's worker thread: model time passes here
  return trans.is_response_ok();
}

bool FunctionPort::msix_access(bool is_write, uint64_t offset, std::span<uint8_t> bytes) {
  pcie::PciFunction* function = pci();
  if (!function || (bytes.size() != 4 && bytes.size() != 8)) return false;
  if (is_write) {
    uint64_t value = bytes.size() == 4 ? load_le32(bytes.data()) : load_le64(bytes.data());
    return function->msix_table().write(offset, unsigned(bytes.size()), value);
  }
  uint64_t value = 0;
  if (!function->msix_table().read(offset, unsigned(bytes.size()), value)) return false;
  if (bytes.size() == 4)
    store_le32(bytes.data(), uint32_t(value));
  else
    store_le64(bytes.data(), value);
  return true;
}

bool FunctionPort::bar_read(int bar, uint64_t offset, std::span<uint8_t> out) {
  const BarShape shape = bar_shape(bar);
  bool ok = present() && memory_space_enabled() && offset < shape.size && out.size() <= shape.size - offset;
  if (ok && bar == int(pcie::kHcaBar))
    ok = mmio_transport(tlm::TLM_READ_COMMAND, offset, out.data(), unsigned(out.size()));
  else if (ok && bar == int(pcie::kMsixBar))
    ok = msix_access(false, offset, out);
  else
    ok = false;
  if (!ok) {
    ++counters_.refused_bar_accesses;
    std::fill(out.begin(), out.end(), 0xff);
  }
  return ok;
}

bool FunctionPort::bar_write(int bar, uint64_t offset, std::span<const uint8_t> in) {
  const BarShape shape = bar_shape(bar);
  bool ok = present() && memory_space_enabled() && offset < shape.size && in.size() <= shape.size - offset;
  std::vector<uint8_t> bytes(in.begin(), in.end());  // TLM wants a mutable buffer
  if (ok && bar == int(pcie::kHcaBar))
    ok = mmio_transport(tlm::TLM_WRITE_COMMAND, offset, bytes.data(), unsigned(bytes.size()));
  else if (ok && bar == int(pcie::kMsixBar))
    ok = msix_access(true, offset, bytes);
  else
    ok = false;
  if (!ok) ++counters_.refused_bar_accesses;
  return ok;
}

void FunctionPort::reset() {
  if (pf_) {
    // A PF's vfio-user client is a guest that cannot see SR-IOV (QEMU hides the capability): its
    // reset must not tear down VFs that the hcaemu admin enabled and other VMs use. So it resets
    // the HCA function and its MSI-X state; config registers are reset by QEMU's own writes. An
    // Initiate FLR written to Device Control still is a full FLR, SR-IOV included.
    pf_->msix_table().reset();
    hca_.function_reset();
    log().info("{}: device reset (SR-IOV configuration kept)", function_name_);
  } else if (vf_) {
    vf_->function().reset(pcie::ResetKind::kFlr);  // calls back into hca_.function_reset()
  } else {
    hca_.function_reset();
  }
}

void FunctionPort::attach_host(pcie::HostMemory* memory, pcie::MsixSender* msix, MsixRouting routing) {
  dma_.attach(memory);
  host_msix_ = msix;
  wire_msix();
  const bool through_table = routing == MsixRouting::kThroughTable && msix != nullptr;
  hca_.attach_host(memory ? &dma_ : nullptr, through_table ? &table_sender_ : msix);
}

void FunctionPort::wire_msix() {
  if (pcie::PciFunction* function = pci())
    function->msix_table().set_deliver([this](uint16_t vector, uint64_t, uint32_t) {
      if (host_msix_) host_msix_->signal(vector);
    });
}

// Sent now, or latched in the PBA until the masks clear (then the table delivers it); dropped
// when MSI-X is disabled or the vector does not exist.
bool FunctionPort::TableSender::signal(uint32_t vector) {
  pcie::PciFunction* function = port_.pci();
  if (function == nullptr || vector > 0xffff) return false;
  const auto result = function->msix_table().fire(uint16_t(vector));
  return result == pcie::MsixTable::FireResult::kSent || result == pcie::MsixTable::FireResult::kPending;
}

}  // namespace hcaemu::sriov
