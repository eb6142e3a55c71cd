#pragma once
// SQ resumptions a rate limit holds back (DCQCN's reaction point paces a QP's next message): kept
// aside until they are due, so frames and other QPs' work are not queued behind them, then handed
// back to the owner's work queue in time order. Shared by the SystemC owners of an RdmaEngine
// (HcaFunction in full-system runs, hcareplay's hosts); the owner keeps the event that wakes it.
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

#include "model/rdma/engine.h"

namespace hcaemu::model {

class PacedResumptions {
 public:
  // Holds `resume` until its not_before_ps; returns the delay (ps from now) the owner's wake-up
  // must come after, or nullopt when an earlier wake-up is already due.
  std::optional<uint64_t> hold(const SqResume& resume, uint64_t now_ps);
  // Hands every resumption due at `now_ps` to `ready` (in the order they were held); returns the
  // delay to the next one still waiting, if any.
  std::optional<uint64_t> release_due(uint64_t now_ps, const std::function<void(const SqResume&)>& ready);
  // Asks the waiting resumption of `qpn`, if any, to read the producer index again.
  bool reread(uint32_t qpn);
  void clear() { waiting_.clear(); }
  size_t size() const { return waiting_.size(); }

 private:
  std::deque<SqResume> waiting_;
  std::optional<uint64_t> next_wake_ps_;  // the earliest wake-up asked for and not yet come
};

}  // namespace hcaemu::model
