#include "model/objects/multicast_groups.h"

#include <algorithm>

namespace hcaemu::model {

MulticastGroups::Result MulticastGroups::attach(const Gid& mgid, uint32_t qpn) {
  auto it = groups_.find(mgid);
  if (it == groups_.end()) {
    if (groups_.size() >= (size_t(1) << kLogMaxGroups)) return Result::kTooManyGroups;
    it = groups_.emplace(mgid, std::vector<uint32_t>{}).first;
  }
  std::vector<uint32_t>& qps = it->second;
  if (std::find(qps.begin(), qps.end(), qpn) != qps.end()) return Result::kOk;
  if (qps.size() >= kMaxQpsPerGroup) return Result::kGroupFull;
  qps.push_back(qpn);
  return Result::kOk;
}

MulticastGroups::Result MulticastGroups::detach(const Gid& mgid, uint32_t qpn) {
  auto it = groups_.find(mgid);
  if (it == groups_.end()) return Result::kNotAttached;
  std::vector<uint32_t>& qps = it->second;
  auto member = std::find(qps.begin(), qps.end(), qpn);
  if (member == qps.end()) return Result::kNotAttached;
  qps.erase(member);
  if (qps.empty()) groups_.erase(it);
  return Result::kOk;
}

void MulticastGroups::forget_qp(uint32_t qpn) {
  for (auto it = groups_.begin(); it != groups_.end();) {
    std::erase(it->second, qpn);
    it = it->second.empty() ? groups_.erase(it) : std::next(it);
  }
}

std::span<const uint32_t> MulticastGroups::members(const Gid& mgid) const {
  auto it = groups_.find(mgid);
  if (it == groups_.end()) return {};
  return it->second;
}

bool is_multicast_gid(const MulticastGroups::Gid& gid) {
  if (gid[0] == 0xff) return true;
  const bool v4_mapped = std::all_of(gid.begin(), gid.begin() + 10, [](uint8_t b) { return b == 0; }) &&
                         gid[10] == 0xff && gid[11] == 0xff;
  return v4_mapped && (gid[12] & 0xf0) == 0xe0;
}

}  // namespace hcaemu::model
