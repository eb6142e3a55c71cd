#pragma once
// Model time as the device spends it. A work item (one doorbell, one frame, one command, one
// message of an SQ) runs decoupled from the kernel, the TLM-2.0 loosely-timed way: each cost it
// incurs (a DMA, the pipeline, the wire) moves a local clock ahead of the kernel's instead of
// yielding to the kernel, and the item's thread waits the whole of it out once, at its end. No
// other process runs meanwhile (the kernel is cooperative), so one local offset serves them all,
// and model_time_ps() is the running item's own time. Outside an item an SC_THREAD waits each
// cost out at once; any other caller (a method, a plain unit test) cannot wait, so the cost only
// counts where the caller accounts for it.
#include <systemc>

#include <cstdint>

namespace hcaemu::pcie {

void consume_model_time(const sc_core::sc_time& t);

// The kernel's time plus what the running work item has spent so far.
sc_core::sc_time model_time();
// Model time in integer picoseconds (traces, pcaps, the transport's deadlines all count in them).
// The kernel keeps SystemC's default resolution, 1 ps (nothing in hcaemu sets another; the model
// time test holds it), so an sc_time's value is its picoseconds: no conversion through doubles,
// which a replay would pay several times a packet.
inline uint64_t to_ps(const sc_core::sc_time& t) { return t.value(); }
inline sc_core::sc_time from_ps(uint64_t ps) { return sc_core::sc_time::from_value(ps); }
inline uint64_t model_time_ps() { return to_ps(model_time()); }
// What the running work item is ahead of the kernel (zero outside one).
sc_core::sc_time local_time_offset();

// Waits out what the running work item has spent (the item's one wait). Before any real wait
// inside an item (an event another process notifies) too: other processes must see the kernel's
// time, not this item's.
void settle_model_time();

// One work item's decoupled span, in an SC_THREAD (elsewhere it changes nothing). Items do not
// nest: an inner scope joins the outer one.
class DecoupledScope {
 public:
  DecoupledScope();
  ~DecoupledScope();  // without settle() (an exception, the kernel unwinding a thread) the time is dropped
  DecoupledScope(const DecoupledScope&) = delete;
  DecoupledScope& operator=(const DecoupledScope&) = delete;
  void settle() { settle_model_time(); }

 private:
  bool outermost_;
};

}  // namespace hcaemu::pcie
