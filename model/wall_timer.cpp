#include "model/wall_timer.h"

namespace hcaemu::model {

WallTimer::WallTimer(const char* name) : sc_prim_channel(name) {}

WallTimer::~WallTimer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WallTimer::arm(Clock::time_point when) {
  {
    std::lock_guard lock(mutex_);
    if (deadline_ && *deadline_ <= when) return;
    deadline_ = when;
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  changed_.notify_all();
}

void WallTimer::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!deadline_) {
      changed_.wait(lock);
      continue;
    }
    const Clock::time_point when = *deadline_;
    if (changed_.wait_until(lock, when) == std::cv_status::timeout && deadline_ && *deadline_ <= Clock::now()) {
      deadline_.reset();
      async_request_update();
    }
  }
}

void WallTimer::update() { fired_.notify(sc_core::SC_ZERO_TIME); }

}  // namespace hcaemu::model
