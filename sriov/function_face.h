#pragma once
// How a host reaches one PCIe function of the device: config space, BARs, reset, and where the
// function's DMA and interrupts go. The vfio-user backend drives this; so does the testbench's
// host model. Calls run on the SystemC kernel thread and may consume model time (wait()).
#include <cstdint>
#include <span>
#include <string>

#include "pcie/host_port.h"

namespace hcaemu::sriov {

struct BarShape {
  uint64_t size = 0;  // 0 = BAR not implemented
  bool is_64bit = false;
  bool prefetchable = false;
};

class FunctionFace {
 public:
  virtual ~FunctionFace() = default;

  virtual std::string name() const = 0;          // "pf", "vf0", ...
  virtual BarShape bar_shape(int bar) const = 0;  // fixed for the function's life; any thread
  virtual uint32_t msix_vectors() const = 0;      // fixed; any thread
  virtual uint32_t config_size() const { return 4096; }

  // Config accesses are 1, 2 or 4 bytes. What the host sees is the passthrough view (for a VF:
  // what vfio-pci presents, with real IDs and virtualised BARs).
  virtual void config_read(uint32_t offset, std::span<uint8_t> out) = 0;
  virtual void config_write(uint32_t offset, std::span<const uint8_t> in) = 0;

  // A config write from the function's client (vfio-user). The client is not trusted with more
  // than its own function: the default is config_write; a PF refuses SR-IOV management (see
  // FunctionPort::client_config_write).
  virtual void client_config_write(uint32_t offset, std::span<const uint8_t> in) { config_write(offset, in); }

  // BAR accesses at an offset inside the BAR; false = the access was refused (unimplemented BAR,
  // memory space disabled, bad size); reads then return all ones.
  virtual bool bar_read(int bar, uint64_t offset, std::span<uint8_t> out) = 0;
  virtual bool bar_write(int bar, uint64_t offset, std::span<const uint8_t> in) = 0;

  // A function-level reset requested from outside the config space (vfio-user DEVICE_RESET).
  virtual void reset() = 0;

  // Where the function's DMA and interrupts go. kThroughTable: each interrupt passes the function's
  // modelled MSI-X table (enable, function mask, vector masks, PBA) before it reaches `msix`.
  // kHostOwnsTable: the host emulates the table and its masks itself (QEMU over vfio-user), so
  // interrupts go to `msix` as they are raised.
  enum class MsixRouting : uint8_t { kThroughTable, kHostOwnsTable };
  virtual void attach_host(pcie::HostMemory* memory, pcie::MsixSender* msix, MsixRouting routing) = 0;
};

}  // namespace hcaemu::sriov
