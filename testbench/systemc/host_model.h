#pragma once
// The testbench's host: one elaborated HCA device, simulated host RAM, and a way to run a piece of
// "driver" code on the SystemC kernel thread, where config and BAR accesses take model time. Every
// TEST runs its driver code through run(); the device persists across tests of one binary (SystemC
// elaborates once per process), so each test leaves the device as it found it.
#include <systemc>

#include <functional>
#include <memory>

#include "common/endian.h"
#include "qemu-bridge/kernel_queue.h"
#include "sriov/hca_device.h"
#include "testbench/host/sim_host_memory.h"

namespace hcaemu::testbench {

class SystemCHost {
 public:
  static SystemCHost& instance();

  // Runs `driver` on the kernel thread, returns when it is done.
  void run(std::function<void()> driver);

  sriov::HcaDevice& device() { return *device_; }
  SimHostMemory& ram() { return ram_; }
  RecordingMsix& msix() { return msix_; }

  // ---- Driver-side helpers (kernel thread only) ----
  static uint32_t cfg_read(sriov::FunctionFace& f, uint32_t offset, unsigned size);
  static void cfg_write(sriov::FunctionFace& f, uint32_t offset, unsigned size, uint32_t value);
  // BAR0 registers are big-endian dwords (the driver's ioread32be/iowrite32be).
  static uint32_t reg_read(sriov::FunctionFace& f, uint64_t offset);
  static void reg_write(sriov::FunctionFace& f, uint64_t offset, uint32_t value);
  // Linux's pci_find_capability / pci_find_ext_capability: offset or 0.
  static uint16_t find_capability(sriov::FunctionFace& f, uint8_t id);
  static uint16_t find_ext_capability(sriov::FunctionFace& f, uint16_t id);
  // BIOS-style sizing of BAR `index` (64-bit aware); restores the register afterwards.
  static uint64_t size_bar(sriov::FunctionFace& f, unsigned index, uint32_t* flags = nullptr);

  static constexpr uint64_t kRamBase = 0x40000000;
  static constexpr uint64_t kRamSize = 16 << 20;

 private:
  SystemCHost();
  std::unique_ptr<sriov::HcaDevice> device_;
  std::unique_ptr<bridge::KernelQueue> queue_;
  SimHostMemory ram_{kRamBase, kRamSize};
  RecordingMsix msix_;
};

}  // namespace hcaemu::testbench
