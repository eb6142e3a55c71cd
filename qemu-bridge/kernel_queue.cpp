#include "qemu-bridge/kernel_queue.h"

namespace hcaemu::bridge {

KernelQueue::Inbox::Inbox(KernelQueue& owner)
    : sc_prim_channel(sc_core::sc_gen_unique_name("inbox")), owner_(owner) {
  async_attach_suspending();
}

void KernelQueue::Inbox::update() { owner_.arrived_.notify(sc_core::SC_ZERO_TIME); }

KernelQueue::KernelQueue(sc_core::sc_module_name name) : sc_module(name), inbox_(*this) { SC_THREAD(worker); }

KernelQueue::~KernelQueue() = default;

void KernelQueue::post(KernelTask task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  inbox_.wake();
}

void KernelQueue::request_stop() {
  stop_requested_ = true;
  inbox_.wake();
}

void KernelQueue::worker() {
  ready_ = true;
  for (;;) {
    KernelTask task;
    {
      std::lock_guard lock(mutex_);
      if (!tasks_.empty()) {
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
    }
    if (task) {
      task();
      continue;
    }
    if (stop_requested_) {
      inbox_.detach();
      // A requested stop is the normal way out, not news worth SystemC's info banner.
      sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
      sc_core::sc_stop();
      return;
    }
    wait(arrived_);
  }
}

}  // namespace hcaemu::bridge
