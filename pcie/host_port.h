#pragma once
// What a PCIe function can ask of the host side: DMA into host memory and MSI-X messages.
// The vfio-user bridge implements these for a connected QEMU; the testbench implements them
// with simulated host memory. Both calls are thread-safe and never block on the guest.
#include <cstdint>
#include <span>

namespace hcaemu::pcie {

class HostMemory {
 public:
  virtual ~HostMemory() = default;
  // Copies host memory [addr, addr + dst.size()) into dst. Returns false when any byte of the
  // range is not mapped for the function (or not readable); then dst is left unspecified and
  // nothing outside the function's mapped memory was touched.
  virtual bool read(uint64_t addr, std::span<uint8_t> dst) = 0;
  // Same for writes; a range that is not wholly mapped and writable is refused whole.
  virtual bool write(uint64_t addr, std::span<const uint8_t> src) = 0;
};

class MsixSender {
 public:
  virtual ~MsixSender() = default;
  // Raises MSI-X vector `vector`. Returns false when the host has no route for it (masked,
  // disabled or out of range); the interrupt is then dropped and the caller may count it.
  virtual bool signal(uint32_t vector) = 0;
};

}  // namespace hcaemu::pcie
