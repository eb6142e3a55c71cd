#pragma once
// Spends model time on behalf of the caller: an SC_THREAD waits it out; any other caller (a method,
// a plain unit test) cannot wait, so the cost only counts where the caller accounts for it.
#include <systemc>

namespace hcaemu::pcie {

void consume_model_time(const sc_core::sc_time& t);

}  // namespace hcaemu::pcie
