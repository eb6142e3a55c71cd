#pragma once
// Glue between a vfio-user server (I/O thread) and one function of the model (kernel thread):
// every region access becomes a task on the function's kernel queue, so accesses keep their
// arrival order and replies leave from the kernel once the model has answered.
#include "qemu-bridge/device_backend.h"
#include "qemu-bridge/kernel_queue.h"
#include "sriov/function_face.h"

namespace hcaemu::bridge {

class FunctionBackend : public vfio_user::DeviceBackend {
 public:
  FunctionBackend(sriov::FunctionFace& function, KernelQueue& queue) : function_(function), queue_(queue) {}

  vfio_user::RegionInfo region_info(uint32_t index) const override;
  uint32_t irq_count(uint32_t index) const override;
  void region_read(uint32_t index, uint64_t offset, uint32_t count, vfio_user::ReadDone done) override;
  void region_write(uint32_t index, uint64_t offset, std::vector<uint8_t> data, vfio_user::WriteDone done) override;
  void reset(vfio_user::WriteDone done) override;
  void connection_changed(bool connected) override;

 private:
  // Splits a region access into the naturally aligned pieces a PCIe function accepts (config:
  // up to 4 bytes, BARs: up to 8) and runs them on the kernel thread.
  void access(uint32_t index, uint64_t offset, std::span<uint8_t> bytes, bool is_write);

  sriov::FunctionFace& function_;
  KernelQueue& queue_;
};

}  // namespace hcaemu::bridge
