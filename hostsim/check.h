#pragma once
// What a headless host does when the device refuses what its driver code expected (a command
// status, a DMA outside host memory): by default it throws, so a benchmark or replay run stops with
// the reason; a test installs a handler that records a test failure and lets the test go on.
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace hcaemu::hostsim {

using FailureHandler = std::function<void(std::string_view what)>;

inline FailureHandler& failure_handler() {
  static FailureHandler handler = [](std::string_view what) {
    throw std::runtime_error("hostsim: " + std::string(what));
  };
  return handler;
}
inline void set_failure_handler(FailureHandler handler) { failure_handler() = std::move(handler); }

// True when `ok`; otherwise reports `what` (the expectation that failed) and returns false.
inline bool check(bool ok, std::string_view what) {
  if (!ok) failure_handler()(what);
  return ok;
}

}  // namespace hcaemu::hostsim
