#pragma once
// The one door from host threads into the SystemC kernel (systemc-notes.md section 3). Socket
// threads post tasks; the kernel runs them in order on its own thread, each free to consume model
// time. async_request_update() is the only SystemC call made off the kernel thread, and while
// nothing is queued the kernel sleeps instead of spinning (async_attach_suspending).
#include <systemc>

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>

namespace hcaemu::bridge {

using KernelTask = std::function<void()>;

class KernelQueue : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(KernelQueue);
  explicit KernelQueue(sc_core::sc_module_name name);
  ~KernelQueue() override;

  // Any thread. Tasks run in posting order, one at a time.
  void post(KernelTask task);
  // True once the kernel runs this queue's worker; tasks posted earlier are kept, not lost.
  bool ready() const { return ready_.load(); }
  // Any thread: lets the kernel stop suspending on this queue's account and stop the simulation
  // once the queued tasks are done.
  void request_stop();

 private:
  class Inbox : public sc_core::sc_prim_channel {
   public:
    explicit Inbox(KernelQueue& owner);
    void wake() { async_request_update(); }
    void detach() { async_detach_suspending(); }

   private:
    void update() override;
    KernelQueue& owner_;
  };

  void worker();

  Inbox inbox_;
  sc_core::sc_event arrived_;
  std::mutex mutex_;
  std::deque<KernelTask> tasks_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_requested_{false};
};

}  // namespace hcaemu::bridge
