#include "pcie/timed_host_memory.h"

#include <algorithm>

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

bool TimedHostMemory::read_pipelined(uint64_t addr, std::span<uint8_t> dst, uint64_t issue_ps, uint64_t& ready_ps) {
  if (!memory_) return ++refused_, false;
  const Nanos stream = timing_.serialize(timing_.completion_wire_bytes(dst.size()));
  const double alone_ps = double(issue_ps) + timing_.dma_read_time(dst.size()).count() * 1e3;
  const double queued_ps = completions_free_ps_ + stream.count() * 1e3;
  completions_free_ps_ = std::max(alone_ps, queued_ps);
  ready_ps = uint64_t(completions_free_ps_);
  charged_ += sc_core::sc_time(stream.count(), sc_core::SC_NS);
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
