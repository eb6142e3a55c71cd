#pragma once
// A PCIe link as a TLM-2.0 pass-through: each b_transport is forwarded unchanged, with the link's
// modelled cost added to the annotated delay (loosely timed; no wait() here). One instance models
// one direction of requests: kHostToDevice carries MMIO (read = non-posted round trip, write =
// posted), kDeviceToHost carries DMA (read = request + completions, write = posted MWr TLPs).
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "pcie/link_timing.h"

namespace hcaemu::pcie {

enum class LinkDirection { kHostToDevice, kDeviceToHost };

class PcieLink : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<PcieLink> target;        // requests come in here
  tlm_utils::simple_initiator_socket<PcieLink> initiator;  // and leave here

  PcieLink(sc_core::sc_module_name name, const LinkConfig& cfg, LinkDirection dir);

  const LinkTiming& timing() const { return timing_; }
  // The delay this link adds to a transaction of `cmd` carrying `bytes`.
  sc_core::sc_time cost(tlm::tlm_command cmd, uint64_t bytes) const { return cost(timing_, dir_, cmd, bytes); }
  // The same without a module (usable outside elaboration, e.g. by a quantum keeper's owner).
  static sc_core::sc_time cost(const LinkTiming& t, LinkDirection dir, tlm::tlm_command cmd, uint64_t bytes);
  uint64_t transactions() const { return transactions_; }

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload& trans);  // untimed, forwarded as is

  LinkTiming timing_;
  LinkDirection dir_;
  uint64_t transactions_ = 0;
};

}  // namespace hcaemu::pcie
