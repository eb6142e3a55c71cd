#include "pcie/pcie_link.h"

namespace hcaemu::pcie {

PcieLink::PcieLink(sc_core::sc_module_name name, const LinkConfig& cfg, LinkDirection dir)
    : sc_module(name), target("target"), initiator("initiator"), timing_(cfg), dir_(dir) {
  target.register_b_transport(this, &PcieLink::b_transport);
  target.register_transport_dbg(this, &PcieLink::transport_dbg);
}

sc_core::sc_time PcieLink::cost(const LinkTiming& timing, LinkDirection dir, tlm::tlm_command cmd, uint64_t bytes) {
  Nanos t{0};
  const bool mmio = dir == LinkDirection::kHostToDevice;
  if (cmd == tlm::TLM_READ_COMMAND)
    t = mmio ? timing.mmio_read_latency(uint32_t(bytes)) : timing.dma_read_time(bytes);
  else if (cmd == tlm::TLM_WRITE_COMMAND)
    t = mmio ? timing.mmio_write_latency(uint32_t(bytes)) : timing.dma_write_time(bytes);
  // TLM_IGNORE_COMMAND carries nothing over the link.
  // Round to whole picoseconds (SystemC's default resolution) so results are reproducible.
  return sc_core::sc_time(double(int64_t(t.count() * 1000.0 + 0.5)), sc_core::SC_PS);
}

void PcieLink::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  ++transactions_;
  delay += cost(trans.get_command(), trans.get_data_length());
  initiator->b_transport(trans, delay);
}

unsigned int PcieLink::transport_dbg(tlm::tlm_generic_payload& trans) { return initiator->transport_dbg(trans); }

}  // namespace hcaemu::pcie
