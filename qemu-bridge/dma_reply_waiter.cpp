#include "qemu-bridge/dma_reply_waiter.h"

#include "pcie/model_time.h"

namespace hcaemu::bridge {

DmaReplyWaiter::DmaReplyWaiter(const char* name) : sc_prim_channel(name) {
  // While a function waits for its client, the kernel may have nothing else to do: it then
  // sleeps until the reply comes instead of ending the simulation.
  async_attach_suspending();
}

void DmaReplyWaiter::wait(const std::function<bool()>& done) {
  sc_core::sc_process_handle self = sc_core::sc_get_current_process_handle();
  if (self.valid() && self.proc_kind() == sc_core::SC_THREAD_PROC_) {
    // No lost wake-up: update() runs in the kernel's update phase, after this thread yields.
    // Other functions run while this one waits: the time its work item has spent is waited out
    // first, so that they see the kernel's time.
    if (!done()) pcie::settle_model_time();
    while (!done()) {
      ++kernel_waits_;
      sc_core::wait(arrived_);
    }
    return;
  }
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done(); });
}

void DmaReplyWaiter::wake() {
  async_request_update();
  std::lock_guard lock(mutex_);
  cv_.notify_all();
}

}  // namespace hcaemu::bridge
