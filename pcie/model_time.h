#pragma once
// Spends model time on behalf of the caller: an SC_THREAD waits it out; any other caller (a method,
// a plain unit test) cannot wait, so the cost only counts where the caller accounts for it.
#include <systemc>

#include <cstdint>

namespace hcaemu::pcie {

void consume_model_time(const sc_core::sc_time& t);

// Model time in integer picoseconds (traces, pcaps, the transport's deadlines all count in them).
inline uint64_t to_ps(const sc_core::sc_time& t) { return uint64_t(t.to_seconds() * 1e12); }
inline uint64_t model_time_ps() { return to_ps(sc_core::sc_time_stamp()); }

}  // namespace hcaemu::pcie
