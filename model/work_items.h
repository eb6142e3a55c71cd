#pragma once
// The loop a device thread runs over its work items (HcaFunction's, the replay host's): items are
// taken in order, each once its `not_before` (a frame's arrival) has come, and each runs as one
// decoupled span of model time (pcie/model_time.h) waited out at its end. The head stays queued
// while it is waited for, and nothing that owns memory lives on this stack across a wait: a
// simulation stopped there (sc_stop) never unwinds it, and a reset may clear the queue meanwhile.
#include <systemc>

#include <deque>
#include <utility>

#include "pcie/model_time.h"

namespace hcaemu::model {

// Never returns (an SC_THREAD's body). `run(item)` handles one item; `settled()` is called after
// the item's model time has been waited out.
template <typename Item, typename Run, typename Settled>
[[noreturn]] void run_work_items(std::deque<Item>& work, const sc_core::sc_event& more, Run&& run, Settled&& settled) {
  for (;;) {
    while (work.empty()) sc_core::wait(more);
    const Item& head = work.front();
    if (head.not_before > sc_core::sc_time_stamp()) {
      sc_core::wait(head.not_before - sc_core::sc_time_stamp());
      continue;
    }
    pcie::DecoupledScope scope;
    {
      Item item = std::move(work.front());
      work.pop_front();
      run(item);
    }
    scope.settle();  // the item's one wait: the model time it spent
    settled();
  }
}

}  // namespace hcaemu::model
