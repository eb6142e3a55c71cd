#pragma once
// A wall-clock deadline for the SystemC kernel. Model time jumps ahead whenever the kernel has
// nothing to do, so a timer in model time would fire at once while the guest that has to act
// (post a receive, answer) runs at emulation speed. This channel sleeps on a host thread until
// the earliest armed deadline and then wakes the kernel (async_request_update, the one thread-safe
// SystemC call), which notifies `fired()`.
#include <systemc>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace hcaemu::model {

class WallTimer : public sc_core::sc_prim_channel {
 public:
  using Clock = std::chrono::steady_clock;

  explicit WallTimer(const char* name);
  ~WallTimer() override;

  // Kernel thread. Keeps the earlier of the armed deadline and `when`.
  void arm(Clock::time_point when);
  const sc_core::sc_event& fired() const { return fired_; }

 private:
  void update() override;
  void run();

  sc_core::sc_event fired_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Clock::time_point> deadline_;
  bool stop_ = false;
  std::thread thread_;  // started on the first arm()
};

}  // namespace hcaemu::model
