#pragma once
// The transport's timers (ACK timeout and retransmission, RNR wait) live in model time. A closed
// run (testbench, benchmark, replay) fires each at its model-time deadline, so the same input gives
// the same run. A full-system run adds a wall-clock floor: model time jumps ahead whenever the
// SystemC kernel idles, while the guest that must act before the timer (post a receive, answer)
// runs at emulation speed. Whether a run has the floor is its choice (TimerPolicy), not the
// engine's.
#include <chrono>
#include <cstdint>
#include <optional>

namespace hcaemu::model {

using WallClock = std::chrono::steady_clock;

struct TimerPolicy {
  bool wall_clock_floor = false;
  std::chrono::nanoseconds min_retransmit_wait = std::chrono::milliseconds(200);  // floors, wall clock
  std::chrono::nanoseconds min_rnr_wait = std::chrono::milliseconds(1);
};

struct TimerDeadline {
  uint64_t model_ps = 0;                     // expires at this model time
  std::optional<WallClock::time_point> wall;  // and, in a run with the floor, not before this

  bool passed(uint64_t now_ps, WallClock::time_point wall_now) const {
    return model_ps <= now_ps && (!wall || *wall <= wall_now);
  }
};

// A deadline `wait` after now_ps; with the policy's floor also at least `floor` of wall-clock time.
inline TimerDeadline make_deadline(const TimerPolicy& policy, uint64_t now_ps, std::chrono::nanoseconds wait,
                                   std::chrono::nanoseconds floor) {
  TimerDeadline d;
  d.model_ps = now_ps + uint64_t(wait.count()) * 1000;
  if (policy.wall_clock_floor) d.wall = WallClock::now() + std::max(wait, floor);
  return d;
}

}  // namespace hcaemu::model
