#include "pcie/timed_host_memory.h"

#include "pcie/model_time.h"

namespace hcaemu::pcie {

void TimedHostMemory::charge(Nanos cost) {
  const sc_core::sc_time t(cost.count(), sc_core::SC_NS);
  charged_ += t;
  consume_model_time(t);
}

bool TimedHostMemory::read(uint64_t addr, std::span<uint8_t> dst) {
  if (!memory_) return ++refused_, false;
  charge(timing_.dma_read_time(dst.size()));
  if (!memory_->read(addr, dst)) return ++refused_, false;
  return true;
}

bool TimedHostMemory::write(uint64_t addr, std::span<const uint8_t> src) {
  if (!memory_) return ++refused_, false;
  // Posted: the DMA engine is busy while the TLPs serialise, not until they land. Charging the
  // landing latency per write serialised every packet of a message behind 500 ns of flight time.
  charge(timing_.dma_write_occupancy(src.size()));
  if (!memory_->write(addr, src)) return ++refused_, false;
  return true;
}

}  // namespace hcaemu::pcie
