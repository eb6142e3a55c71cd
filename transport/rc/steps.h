#pragma once
// What the three connected-service machines (requester, completer, responder) share: the dispatch
// loop over named steps, per-event counters and name tables indexed by an enum.
#include <array>
#include <cstdint>
#include <functional>

namespace hcaemu::transport::rc {

// Runs `dispatch` from `step` until it returns Step::kDone; `trace` sees every step entered.
template <typename Step, typename Dispatch>
void run_steps(Step step, const std::function<void(Step)>& trace, Dispatch&& dispatch) {
  while (step != Step::kDone) {
    if (trace) trace(step);
    step = dispatch(step);
  }
  if (trace) trace(Step::kDone);
}

template <typename Event>
class EventCounts {
 public:
  void add(Event event) { ++counts_[size_t(event)]; }
  uint64_t operator[](Event event) const { return counts_[size_t(event)]; }

 private:
  std::array<uint64_t, size_t(Event::kCount)> counts_{};
};

// The name of an enum value from its table ("?" outside it).
template <typename Enum, size_t N>
const char* name_in(const std::array<const char*, N>& names, Enum value) {
  static_assert(N == size_t(Enum::kCount), "one name per value");
  return size_t(value) < N ? names[size_t(value)] : "?";
}

}  // namespace hcaemu::transport::rc
