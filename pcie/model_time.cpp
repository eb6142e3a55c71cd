#include "pcie/model_time.h"

namespace hcaemu::pcie {

namespace {

// The kernel runs one process at a time: the open scope, if any, is the running item's.
struct Decoupling {
  bool open = false;
  sc_core::sc_time offset = sc_core::SC_ZERO_TIME;
};
Decoupling decoupling;

bool in_thread() {
  sc_core::sc_process_handle current = sc_core::sc_get_current_process_handle();
  return current.valid() && current.proc_kind() == sc_core::SC_THREAD_PROC_;
}

}  // namespace

void consume_model_time(const sc_core::sc_time& t) {
  if (decoupling.open)
    decoupling.offset += t;
  else if (in_thread())
    sc_core::wait(t);
}

sc_core::sc_time model_time() {
  return decoupling.open ? sc_core::sc_time_stamp() + decoupling.offset : sc_core::sc_time_stamp();
}

sc_core::sc_time local_time_offset() { return decoupling.open ? decoupling.offset : sc_core::SC_ZERO_TIME; }

void settle_model_time() {
  if (!decoupling.open || decoupling.offset == sc_core::SC_ZERO_TIME) return;
  const sc_core::sc_time t = decoupling.offset;
  decoupling.offset = sc_core::SC_ZERO_TIME;
  if (!in_thread()) return;  // nothing can wait here: the time only counts where the caller accounts for it
  // Closed while waiting, so that processes running meanwhile see the kernel's time.
  decoupling.open = false;
  sc_core::wait(t);
  decoupling.open = true;
}

// Only a thread can wait its item out: elsewhere costs do not count, as without a scope.
DecoupledScope::DecoupledScope() : outermost_(!decoupling.open && in_thread()) {
  if (outermost_) {
    decoupling.open = true;
    decoupling.offset = sc_core::SC_ZERO_TIME;
  }
}

DecoupledScope::~DecoupledScope() {
  if (!outermost_) return;
  decoupling.open = false;
  decoupling.offset = sc_core::SC_ZERO_TIME;
}

}  // namespace hcaemu::pcie
