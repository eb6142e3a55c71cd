#include "model/rdma/paced_resumptions.h"

#include <algorithm>

namespace hcaemu::model {

std::optional<uint64_t> PacedResumptions::hold(const SqResume& resume, uint64_t now_ps) {
  waiting_.push_back(resume);
  const uint64_t due = std::max(resume.not_before_ps, now_ps);
  if (next_wake_ps_ && *next_wake_ps_ <= due) return std::nullopt;
  next_wake_ps_ = due;
  return due - now_ps;
}

std::optional<uint64_t> PacedResumptions::release_due(uint64_t now_ps,
                                                      const std::function<void(const SqResume&)>& ready) {
  next_wake_ps_.reset();
  std::optional<uint64_t> next;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->not_before_ps <= now_ps) {
      ready(*it);
      it = waiting_.erase(it);
    } else {
      next = std::min(next.value_or(UINT64_MAX), it->not_before_ps);
      ++it;
    }
  }
  if (!next) return std::nullopt;
  next_wake_ps_ = *next;
  return *next - now_ps;
}

bool PacedResumptions::reread(uint32_t qpn) {
  for (SqResume& waiting : waiting_)
    if (waiting.qpn == qpn) return waiting.reread = true;
  return false;
}

}  // namespace hcaemu::model
