#pragma once
// Warnings a guest or a client can trigger are logged at a bounded rate: the first 8 of a kind,
// then the 16th, 32nd, 64th... each saying how many were passed over, so a hostile guest cannot
// flood the log (the counters keep every total). It counts instead of timing, so a closed run logs
// the same lines every time.
#include <cstdint>

namespace hcaemu {

class LogLimiter {
 public:
  static constexpr uint64_t kBurst = 8;

  // Whether the n-th occurrence (from 1) of a kind is logged; for counters kept elsewhere (an
  // atomic one shared by threads, say).
  static constexpr bool logs(uint64_t n) { return n <= kBurst || (n & (n - 1)) == 0; }

  // True when this occurrence is to be logged; `skipped` is then how many were not since the last.
  bool allow(uint64_t& skipped) {
    ++seen_;
    if (!logs(seen_)) return false;
    skipped = seen_ - logged_ - 1;
    logged_ = seen_;
    return true;
  }
  bool allow() {
    uint64_t skipped = 0;
    return allow(skipped);
  }
  uint64_t seen() const { return seen_; }

 private:
  uint64_t seen_ = 0, logged_ = 0;
};

}  // namespace hcaemu
