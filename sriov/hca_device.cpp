#include "sriov/hca_device.h"

#include <algorithm>

#include "common/log.h"
#include "pcie/model_time.h"
#include "sriov/vf_config_view.h"

namespace hcaemu::sriov {

namespace {

pcie::FunctionConfig pf_function_config(const DeviceConfig& c) {
  pcie::FunctionConfig f;
  f.vendor_id = c.vendor_id;
  f.device_id = c.pf_device_id;
  f.revision_id = c.revision;
  f.subsystem_vendor_id = c.subsystem_vendor_id;
  f.subsystem_id = c.subsystem_id;
  f.bars = pcie::hca_bars(c.pf.bar0_size);
  f.msix_vectors = uint16_t(c.pf.msix_vectors);
  f.link_gen = c.link_generation;
  f.link_width = c.link_width;
  f.serial_number = c.serial_number;
  return f;
}

SriovConfig sriov_config(const DeviceConfig& c) {
  SriovConfig s;
  s.total_vfs = c.total_vfs;
  s.vf_device_id = c.vf_device_id;
  s.vf_bars = pcie::hca_bars(c.vf.bar0_size);
  s.vf_msix_vectors = uint16_t(c.vf.msix_vectors);
  return s;
}

pcie::LinkConfig link_config(const DeviceConfig& c) {
  pcie::LinkConfig l;
  l.gen = c.link_generation;
  l.width = c.link_width;
  l.one_way_latency_ns = c.link_one_way_ns;
  return l;
}

}  // namespace

// A function's Ethernet port: what its SQs send enters the switch at the function's vport.
class HcaDevice::SwitchUplink : public transport::EthernetPort {
 public:
  SwitchUplink(HcaDevice& device, uint16_t vport) : device_(device), vport_(vport) {}
  void transmit(std::span<const uint8_t> frame) override { device_.ingress_->submit(vport_, frame, pcie::model_time()); }
  void transmit_from_domain(std::span<const uint8_t> frame, uint32_t td) override {
    device_.ingress_->submit(vport_, frame, pcie::model_time(), td);
  }
  uint64_t serialised_ps(std::span<const uint8_t> frame, size_t wire_bytes, uint64_t start_ps, double link_gbps) override {
    if (!device_.port_scheduler_.enabled()) return EthernetPort::serialised_ps(frame, wire_bytes, start_ps, link_gbps);
    return device_.port_scheduler_.serialised_ps(vport_, frame, wire_bytes, start_ps);
  }
  bool shared() const override { return device_.port_scheduler_.enabled(); }

 private:
  HcaDevice& device_;
  uint16_t vport_;
};

void HcaDevice::attach_to_switch(FunctionPort& port) {
  const auto& identity = port.hca().context().identity;
  const uint16_t vport = eswitch_.add_vport(identity.mac, [&port](std::span<const uint8_t> frame) {
    port.hca().receive(frame);
  });
  eswitch_.set_loopback(vport, [&port](std::span<const uint8_t> frame, uint32_t sender_td) {
    port.hca().receive(frame, sender_td);
  });
  if (identity.is_vf) {  // the PF is the host's function: no spoof check, trusted
    const VfSettings settings = config_.vf_settings(uint16_t(identity.vhca_id - 1));
    eswitch_.set_spoof_check(vport, settings.spoofchk);
    eswitch_.set_trusted(vport, settings.trust);
    port_scheduler_.set_qos(vport, {settings.max_tx_rate_mbps, settings.min_tx_rate_mbps});
  }
  port.hca().set_unicast_owner_check([this, &port](const std::array<uint8_t, 6>& mac) { return owned_by_other(port, mac); });
  uplinks_.push_back(std::make_unique<SwitchUplink>(*this, vport));
  port.hca().set_port(uplinks_.back().get());
}

bool HcaDevice::owned_by_other(const FunctionPort& asking, const std::array<uint8_t, 6>& mac) const {
  auto owns = [&](const FunctionPort& port) {
    if (&port == &asking || !port.present()) return false;
    const model::FunctionContext& f = port.hca().context();
    if (f.identity.mac == mac || (f.vport.permanent_address_set && f.vport.permanent_address == mac)) return true;
    return std::find(f.vport.uc_addresses.begin(), f.vport.uc_addresses.end(), mac) != f.vport.uc_addresses.end();
  };
  if (owns(*pf_port_)) return true;
  return std::any_of(vf_ports_.begin(), vf_ports_.end(), [&](const auto& vf) { return owns(*vf); });
}

void HcaDevice::sync_vports() {
  auto sync = [this](uint16_t vport, FunctionPort& port) {
    const model::FunctionContext& f = port.hca().context();
    eswitch_.set_admin_up(vport, port.present() && f.vport.up(f.port.state()));
    eswitch_.set_unicast_list(vport, f.vport.uc_addresses);
    eswitch_.set_group_filter(vport, f.vport.mc_addresses, f.vport.promisc_mc || f.vport.promisc_all);
  };
  sync(0, *pf_port_);
  for (size_t i = 0; i < vf_ports_.size(); ++i) sync(uint16_t(i + 1), *vf_ports_[i]);
}

HcaDevice::HcaDevice(sc_core::sc_module_name name, const DeviceConfig& config)
    : sc_module(name), config_(config), pf_function_config_(pf_function_config(config)) {
  config_.validate();
  ingress_ = std::make_unique<SwitchIngress>("switch_ingress", [this](uint16_t vport, std::vector<uint8_t>& frame, uint32_t sender_td) {
    sync_vports();
    eswitch_.transmit(vport, frame, sender_td);
  });
  pf_pci_ = std::make_unique<pcie::PciFunction>(pf_function_config_);
  if (config_.total_vfs > 0) {
    sriov_ = std::make_unique<SriovCapability>(*pf_pci_, sriov_config(config_));
    sriov_->set_listener(this);
  }
  const pcie::LinkConfig link = link_config(config_);
  model::FunctionIdentity pf_identity{false, 0, config_.pf.msix_vectors, config_.function_mac(0), config_.pf.quotas};
  pf_identity.sw_icm = config_.software_steering;
  pf_port_ = std::make_unique<FunctionPort>("pf", config_.function_name(0), link, config_.pf.bar0_size, pf_identity,
                                            config_.firmware);
  pf_port_->attach_pf(*pf_pci_);
  pf_port_->hca().set_translation_budget(config_.pf.translation_entries);
  attach_to_switch(*pf_port_);
  for (uint16_t i = 0; i < config_.total_vfs; ++i) {
    const std::string vf_name = "vf" + std::to_string(i);
    model::FunctionIdentity identity{true, uint16_t(i + 1), config_.vf.msix_vectors,
                                     config_.function_mac(uint16_t(i + 1)), config_.vf.quotas};
    identity.sw_icm = config_.software_steering;
    auto port = std::make_unique<FunctionPort>(vf_name.c_str(), config_.function_name(uint16_t(i + 1)), link,
                                               config_.vf.bar0_size, identity, config_.firmware);
    port->set_vf_shape(sriov_->config().vf_bars, config_.vf.msix_vectors);
    port->hca().set_translation_budget(config_.vf.translation_entries);
    vf_ports_.push_back(std::move(port));
    attach_to_switch(*vf_ports_.back());
  }
}

HcaDevice::~HcaDevice() {
  if (sriov_) sriov_->set_listener(nullptr);
}

std::string HcaDevice::set_num_vfs(uint16_t count) {
  if (!sriov_) return "this device has no SR-IOV capability (total_vfs is 0)";
  if (count > sriov_->total_vfs())
    return "asked for " + std::to_string(count) + " VFs, TotalVFs is " + std::to_string(sriov_->total_vfs());
  const uint16_t base = sriov_->offset();
  // Memory space first, as a PF driver has it on before it touches SR-IOV.
  uint16_t command = uint16_t(pf_pci_->config_read(pcie::regs::kCommand, 2));
  pf_pci_->config_write(pcie::regs::kCommand, 2, command | pcie::regs::kCmdMemorySpace | pcie::regs::kCmdBusMaster);
  uint16_t control = uint16_t(pf_pci_->config_read(base + sr::kControl, 2));
  pf_pci_->config_write(base + sr::kControl, 2, control & ~(sr::kCtlVfEnable | sr::kCtlVfMse));
  if (count == 0) return {};
  pf_pci_->config_write(base + sr::kNumVfs, 2, count);
  if (sriov_->num_vfs() != count) return "the SR-IOV capability refused NumVFs = " + std::to_string(count);
  control = uint16_t(pf_pci_->config_read(base + sr::kControl, 2));
  pf_pci_->config_write(base + sr::kControl, 2, control | sr::kCtlVfEnable | sr::kCtlVfMse);
  if (!sriov_->vf_enabled()) return "VF Enable did not stick";
  return {};
}

void HcaDevice::vfs_enabled(uint16_t num_vfs) {
  for (uint16_t i = 0; i < num_vfs && i < vf_ports_.size(); ++i) {
    auto view = std::make_unique<VfConfigView>(make_vf_function_config(pf_function_config_, sriov_->config()),
                                               *sriov_, i, config_.vendor_id);
    vf_ports_[i]->attach_vf(std::move(view));
  }
  enabled_vfs_ = num_vfs;
  log().info("{}: sriov: {} VF(s) enabled (routing IDs from PF + {} stride {})", pf_port_->name(), num_vfs, sriov_->first_vf_offset(),
             sriov_->vf_stride());
  if (vfs_changed_) vfs_changed_(num_vfs);
}

void HcaDevice::vfs_disabled() {
  for (auto& port : vf_ports_) port->detach_vf();
  log().info("{}: sriov: VFs disabled ({} removed)", pf_port_->name(), enabled_vfs_);
  enabled_vfs_ = 0;
  if (vfs_changed_) vfs_changed_(0);
}

void HcaDevice::apply_timing(const model::TimingPreset& preset, const model::TimerPolicy& timers) {
  port_scheduler_.set_tc_config(config_.port_tc);
  port_scheduler_.set_link_gbps(preset.link_gbps);
  for_each_function([&](model::HcaFunction& hca) {
    hca.apply_timing(preset);
    hca.set_timer_policy(timers);
  });
}

void HcaDevice::set_congestion_control(const model::DcqcnParameters* parameters) {
  for_each_function([&](model::HcaFunction& hca) { hca.set_congestion_control(parameters); });
}

std::string HcaDevice::set_vf_qos(uint16_t vf, const VportQos& qos) {
  if (vf >= vf_ports_.size()) return "no VF " + std::to_string(vf) + " (TotalVFs " + std::to_string(vf_ports_.size()) + ")";
  const double link_mbps = port_scheduler_.link_gbps() * 1000;
  if (qos.max_tx_rate_mbps > link_mbps || qos.min_tx_rate_mbps > link_mbps)
    return "a rate above the port's " + std::to_string(uint64_t(link_mbps)) + " Mb/s";
  if (qos.max_tx_rate_mbps != 0 && qos.min_tx_rate_mbps > qos.max_tx_rate_mbps)
    return "min_tx_rate above max_tx_rate";
  port_scheduler_.set_qos(uint16_t(vf + 1), qos);  // VF n is vport n + 1
  return {};
}

void HcaDevice::set_physical_link(bool up) {
  eswitch_.set_uplink_up(up);
  for_each_function([&](model::HcaFunction& hca) { hca.set_physical_link(up); });
}

void HcaDevice::for_each_function(const std::function<void(model::HcaFunction&)>& each) {
  each(pf_port_->hca());
  for (auto& port : vf_ports_) each(port->hca());
}

}  // namespace hcaemu::sriov
