#pragma once
// A function's DMA as the PCIe link sees it: every read or write of host memory costs the link's
// modelled time (request, completions, TLP overheads, latency) before the data moves. When called
// from an SC_THREAD the caller waits that long in model time; from anywhere else (tests, methods)
// the cost is only accumulated, so the adapter never blocks a non-thread caller.
#include <systemc>

#include "pcie/host_port.h"
#include "pcie/link_timing.h"

namespace hcaemu::pcie {

class TimedHostMemory : public HostMemory {
 public:
  explicit TimedHostMemory(const LinkConfig& link) : timing_(link) {}

  void attach(HostMemory* memory) { memory_ = memory; }
  bool attached() const { return memory_ != nullptr; }

  bool read(uint64_t addr, std::span<uint8_t> dst) override;
  bool write(uint64_t addr, std::span<const uint8_t> src) override;
  // Pipelined reads share one completion stream: a read arrives after its own round trip, and
  // never before the completions of the pipelined reads ahead of it have serialised.
  bool read_pipelined(uint64_t addr, std::span<uint8_t> dst, uint64_t issue_ps, uint64_t& ready_ps) override;
  uint64_t host_faults() const override { return memory_ != nullptr ? memory_->host_faults() : 0; }

  const LinkTiming& timing() const { return timing_; }
  sc_core::sc_time charged() const { return charged_; }  // total link time of all DMA so far
  uint64_t refused() const { return refused_; }

 private:
  void charge(Nanos cost);

  LinkTiming timing_;
  HostMemory* memory_ = nullptr;
  sc_core::sc_time charged_ = sc_core::SC_ZERO_TIME;
  uint64_t refused_ = 0;
  double completions_free_ps_ = 0;  // when the pipelined reads' completion stream is idle
};

}  // namespace hcaemu::pcie
