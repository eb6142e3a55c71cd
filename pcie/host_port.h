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
  // A read by a DMA engine that keeps reads in flight (a NIC prefetching WQEs and payload): the data
  // moves now and the call returns at once, spending no model time; ready_ps is the model time its
  // last byte would arrive had the request left at issue_ps, behind the pipelined reads before it.
  // Without a link model (the base) the data is there at once: ready_ps = issue_ps.
  virtual bool read_pipelined(uint64_t addr, std::span<uint8_t> dst, uint64_t issue_ps, uint64_t& ready_ps) {
    ready_ps = issue_ps;
    return read(addr, dst);
  }
  // Accesses that failed through the host's fault, not the guest's: the memory behind a map went
  // away (a vfio-user client truncated it) or the client never answered a DMA message. A device
  // sees these as fatal PCIe errors (a guest's bad address is an ordinary refused access above).
  virtual uint64_t host_faults() const { return 0; }
};

// Routes a reader's reads (PageList, read_chunks) through read_pipelined, all issued at one
// model time, and keeps the latest arrival. Writes pass through unchanged.
class PipelinedReads : public HostMemory {
 public:
  PipelinedReads(HostMemory& memory, uint64_t issue_ps) : memory_(memory), issue_ps_(issue_ps), ready_ps_(issue_ps) {}
  bool read(uint64_t addr, std::span<uint8_t> dst) override {
    uint64_t ready = 0;
    if (!memory_.read_pipelined(addr, dst, issue_ps_, ready)) return false;
    if (ready > ready_ps_) ready_ps_ = ready;
    return true;
  }
  bool write(uint64_t addr, std::span<const uint8_t> src) override { return memory_.write(addr, src); }
  uint64_t host_faults() const override { return memory_.host_faults(); }
  uint64_t ready_ps() const { return ready_ps_; }

 private:
  HostMemory& memory_;
  uint64_t issue_ps_;
  uint64_t ready_ps_;
};

class MsixSender {
 public:
  virtual ~MsixSender() = default;
  // Raises MSI-X vector `vector`. Returns false when the host has no route for it (masked,
  // disabled or out of range); the interrupt is then dropped and the caller may count it.
  virtual bool signal(uint32_t vector) = 0;
};

}  // namespace hcaemu::pcie
