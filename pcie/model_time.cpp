#include "pcie/model_time.h"

namespace hcaemu::pcie {

void consume_model_time(const sc_core::sc_time& t) {
  sc_core::sc_process_handle current = sc_core::sc_get_current_process_handle();
  if (current.valid() && current.proc_kind() == sc_core::SC_THREAD_PROC_) sc_core::wait(t);
}

}  // namespace hcaemu::pcie
