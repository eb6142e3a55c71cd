#pragma once
// One emulated HCA: the PF, its VFs (one port each, built at elaboration for TotalVFs because
// SystemC modules cannot be created later; a VF *exists* only while the PF's SR-IOV capability has
// VF Enable set), and the configuration they were built from.
#include <systemc>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pcie/pci_function.h"
#include "sriov/device_config.h"
#include "sriov/eswitch.h"
#include "sriov/function_port.h"
#include "sriov/port_scheduler.h"
#include "sriov/sriov_capability.h"
#include "sriov/switch_ingress.h"

namespace hcaemu::sriov {

class HcaDevice : public sc_core::sc_module, private SriovListener {
 public:
  HcaDevice(sc_core::sc_module_name name, const DeviceConfig& config);
  ~HcaDevice() override;

  const DeviceConfig& config() const { return config_; }
  FunctionPort& pf() { return *pf_port_; }
  FunctionPort& vf(unsigned index) { return *vf_ports_.at(index); }
  unsigned vf_ports() const { return unsigned(vf_ports_.size()); }
  uint16_t enabled_vfs() const { return enabled_vfs_; }
  pcie::PciFunction& pf_pci() { return *pf_pci_; }
  SriovCapability& sriov() { return *sriov_; }

  // What a host admin's `echo N > sriov_numvfs` makes the PF driver do, as config writes to the
  // PF's SR-IOV capability: clear VF Enable, write NumVFs, then set VF Enable and VF MSE.
  // N = 0 only disables. Kernel thread. Returns an empty string or the reason it failed.
  std::string set_num_vfs(uint16_t count);

  Eswitch& eswitch() { return eswitch_; }
  // The physical port's link (the uplink's carrier): the switch stops using the uplink while it is
  // down, and every function's port goes DOWN with it (PORT_CHANGE EQEs; mlx5e drops its carrier,
  // mlx5_ib its port state), as a ConnectX's PF and its VFs (vport state "auto") do. Kernel thread.
  void set_physical_link(bool up);

  // A VF's transmit rates as `ip link set PF vf N max_tx_rate/min_tx_rate` sets them (Mb/s; 0 for
  // none): the port's transmit scheduler shapes its frames in model time. Kernel thread. Returns an
  // empty string or why the rates were refused.
  std::string set_vf_qos(uint16_t vf, const VportQos& qos);
  VportQos vf_qos(uint16_t vf) const { return port_scheduler_.qos(uint16_t(vf + 1)); }
  const PortScheduler& port_scheduler() const { return port_scheduler_; }
  void set_port_tc(const PortTcConfig& tc) { port_scheduler_.set_tc_config(tc); }

  // Every function's pipeline timing and timer policy (elaboration).
  void apply_timing(const model::TimingPreset& preset, const model::TimerPolicy& timers);
  // DCQCN in every function's RDMA engine (null: off); the parameters outlive the device.
  void set_congestion_control(const model::DcqcnParameters* parameters);

  // Called (kernel thread) after VFs appear (count) or disappear (0).
  void on_vfs_changed(std::function<void(uint16_t count)> fn) { vfs_changed_ = std::move(fn); }

 private:
  void for_each_function(const std::function<void(model::HcaFunction&)>& each);
  void vfs_enabled(uint16_t num_vfs) override;
  void vfs_disabled() override;
  void vf_memory_space_changed(bool enabled) override {}

  // One switch vport per function, in port order: PF = vport 0, VF n = vport n + 1.
  class SwitchUplink;
  void attach_to_switch(FunctionPort& port);
  // Copies what the driver programmed (unicast addresses, vport state) into the switch.
  void sync_vports();
  // True when a function other than `asking` owns unicast `mac` (permanent address or unicast list).
  bool owned_by_other(const FunctionPort& asking, const std::array<uint8_t, 6>& mac) const;

  DeviceConfig config_;
  pcie::FunctionConfig pf_function_config_;
  std::unique_ptr<pcie::PciFunction> pf_pci_;
  std::unique_ptr<SriovCapability> sriov_;
  std::unique_ptr<FunctionPort> pf_port_;
  std::vector<std::unique_ptr<FunctionPort>> vf_ports_;
  Eswitch eswitch_;
  PortScheduler port_scheduler_;
  std::unique_ptr<SwitchIngress> ingress_;  // frames reach the switch in model-time order
  std::vector<std::unique_ptr<SwitchUplink>> uplinks_;
  uint16_t enabled_vfs_ = 0;
  std::function<void(uint16_t)> vfs_changed_;
};

}  // namespace hcaemu::sriov
