#pragma once
// The loop a device thread runs over its work items (HcaFunction's, the replay host's): items are
// taken in order, each once its `not_before` (a frame's arrival, a doorbell's write) has come; an
// item not due yet does not hold back those behind it that are (a frame still on the wire must not
// keep a doorbell that has rung waiting). Each runs as one decoupled span of model time
// (pcie/model_time.h) waited out at its end. Items stay queued while they are waited for, and
// nothing that owns memory lives on this stack across a wait: a simulation stopped there (sc_stop)
// never unwinds it, and a reset may clear the queue meanwhile.
#include <systemc>

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "pcie/model_time.h"

namespace hcaemu::model {

// Never returns (an SC_THREAD's body). `run(item)` handles one item; `settled()` is called after
// the item's model time has been waited out; `refresh()` before each choice of the next item (so a
// source that queues items lazily can queue those of times gone by first).
template <typename Item, typename Run, typename Settled, typename Refresh>
[[noreturn]] void run_work_items(std::deque<Item>& work, const sc_core::sc_event& more, Run&& run, Settled&& settled,
                                 Refresh&& refresh) {
  for (;;) {
    refresh();
    if (work.empty()) {
      sc_core::wait(more);
      continue;
    }
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    auto due = work.begin();
    sc_core::sc_time earliest = due->not_before;
    while (due != work.end() && due->not_before > now) earliest = std::min(earliest, (due++)->not_before);
    if (due == work.end()) {
      sc_core::wait(earliest - now, more);  // or sooner, when an item that is due comes in
      continue;
    }
    pcie::DecoupledScope scope;
    {
      Item item = std::move(*due);
      work.erase(due);
      run(item);
    }
    scope.settle();  // the item's one wait: the model time it spent
    settled();
  }
}

template <typename Item, typename Run, typename Settled>
[[noreturn]] void run_work_items(std::deque<Item>& work, const sc_core::sc_event& more, Run&& run, Settled&& settled) {
  run_work_items(work, more, std::forward<Run>(run), std::forward<Settled>(settled), [] {});
}

// When an item that must run after the queued items `selects` picks may run: just after the
// latest of them is due (taken in order, they would all go first even where due at the same time),
// and not before `now`; nothing when none is queued.
template <typename Item, typename Selects>
std::optional<sc_core::sc_time> after_queued(const std::deque<Item>& work, sc_core::sc_time now, Selects&& selects) {
  std::optional<sc_core::sc_time> latest;
  for (const Item& item : work)
    if (selects(item)) latest = std::max({latest.value_or(now), item.not_before, now});
  if (latest) *latest += sc_core::sc_time(1, sc_core::SC_PS);
  return latest;
}

}  // namespace hcaemu::model
