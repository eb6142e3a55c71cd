#pragma once
// The host-facing port of one function: config accesses go to its PCIe face (a PF's PciFunction or
// a VF's passthrough view), BAR0 accesses travel as TLM transactions over the PCIe link model to
// the HCA function, BAR2 accesses reach the MSI-X table. Resets reach the HCA function.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <functional>
#include <memory>

#include "model/hca_function.h"
#include "pcie/pci_function.h"
#include "pcie/pcie_link.h"
#include "pcie/timed_host_memory.h"
#include "sriov/function_face.h"
#include "sriov/sriov_capability.h"
#include "sriov/vf_config_view.h"

namespace hcaemu::sriov {

struct FunctionPortCounters {
  uint64_t client_sriov_writes_dropped = 0, client_flr_as_reset = 0;
  uint64_t refused_bar_accesses = 0;  // memory space off, function absent, unknown BAR, bad size
};

class FunctionPort : public sc_core::sc_module, public FunctionFace {
 public:
  // PF port: `pf` is the PF's PCIe face. VF port: `pf` is null and the view is attached on VF
  // Enable (attach_vf) and dropped on VF disable (detach_vf).
  FunctionPort(sc_core::sc_module_name name, std::string function_name, const pcie::LinkConfig& link,
               uint64_t bar0_size, model::FunctionIdentity identity, const model::FirmwareVersion& fw);

  tlm_utils::simple_initiator_socket<FunctionPort> mmio;

  // ---- FunctionFace ----
  std::string name() const override { return function_name_; }
  BarShape bar_shape(int bar) const override;
  uint32_t msix_vectors() const override;
  void config_read(uint32_t offset, std::span<uint8_t> out) override;
  void config_write(uint32_t offset, std::span<const uint8_t> in) override;
  // The PF's client may not create or destroy VFs: those belong to the host admin (hcaemu --vfs),
  // and other VMs use them. Its writes to the SR-IOV capability's Control and NumVFs registers are
  // dropped (counted), and its Initiate FLR resets the PF's HCA and MSI-X state as DEVICE_RESET
  // does, without the SR-IOV reset a full FLR implies.
  void client_config_write(uint32_t offset, std::span<const uint8_t> in) override;
  bool bar_read(int bar, uint64_t offset, std::span<uint8_t> out) override;
  bool bar_write(int bar, uint64_t offset, std::span<const uint8_t> in) override;
  void reset() override;
  void attach_host(pcie::HostMemory* memory, pcie::MsixSender* msix, MsixRouting routing) override;

  // ---- Composition (sriov/hca_device) ----
  void attach_pf(pcie::PciFunction& pf);
  void set_vf_shape(const std::array<pcie::BarConfig, pcie::regs::kNumBars>& bars, uint32_t vectors);
  void attach_vf(std::unique_ptr<VfConfigView> view);
  void detach_vf();
  bool present() const { return pf_ != nullptr || vf_ != nullptr; }

  model::HcaFunction& hca() { return hca_; }
  const model::HcaFunction& hca() const { return hca_; }
  pcie::PcieLink& link() { return link_; }
  const pcie::TimedHostMemory& dma() const { return dma_; }
  pcie::PciFunction* pci();  // the function's own PCIe state, null when absent
  const FunctionPortCounters& counters() const { return counters_; }

 private:
  bool memory_space_enabled() const;
  void charge_config_access();  // CfgRd/CfgWr round trip in model time
  bool mmio_transport(tlm::tlm_command command, uint64_t offset, uint8_t* data, unsigned length);
  bool msix_access(bool is_write, uint64_t offset, std::span<uint8_t> bytes);
  void wire_resets(pcie::PciFunction& function);
  void wire_msix();  // the present function's MSI-X table delivers to the host's sender

  // The HCA's interrupts into the function's MSI-X table (MsixRouting::kThroughTable).
  class TableSender : public pcie::MsixSender {
   public:
    explicit TableSender(FunctionPort& port) : port_(port) {}
    bool signal(uint32_t vector) override;

   private:
    FunctionPort& port_;
  };

  std::string function_name_;
  pcie::PcieLink link_;
  pcie::TimedHostMemory dma_;  // the device-to-host direction of the same link
  model::HcaFunction hca_;
  pcie::PciFunction* pf_ = nullptr;
  std::unique_ptr<VfConfigView> vf_;
  std::array<pcie::BarConfig, pcie::regs::kNumBars> vf_bars_{};
  uint32_t vf_vectors_ = 0;
  FunctionPortCounters counters_;
  pcie::MsixSender* host_msix_ = nullptr;
  TableSender table_sender_{*this};
};

}  // namespace hcaemu::sriov
