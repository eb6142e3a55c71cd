#include "sriov/port_scheduler.h"

#include <algorithm>

namespace hcaemu::sriov {

PortScheduler::Vport& PortScheduler::at(uint16_t vport) {
  if (vport >= vports_.size()) vports_.resize(size_t(vport) + 1);
  return vports_[vport];
}

void PortScheduler::set_qos(uint16_t vport, const VportQos& qos) {
  at(vport).qos = qos;
  enabled_ = false;
  largest_min_mbps_ = 0;
  for (const Vport& v : vports_) {
    enabled_ = enabled_ || v.qos.max_tx_rate_mbps != 0 || v.qos.min_tx_rate_mbps != 0;
    largest_min_mbps_ = std::max(largest_min_mbps_, v.qos.min_tx_rate_mbps);
  }
}

// mlx5's bw_share: min rates scaled so the largest is 100, at least 1 (no min rate: 1).
double PortScheduler::weight(const Vport& v) const {
  if (largest_min_mbps_ == 0) return 1;
  return std::max(1.0, double(v.qos.min_tx_rate_mbps) * 100.0 / double(largest_min_mbps_));
}

double PortScheduler::rate_gbps(uint16_t vport, uint64_t now_ps) const {
  if (!enabled_) return link_gbps_;
  // Water-filling over the active vports (this one counts as active): capped ones take their cap,
  // the rest share what remains by weight.
  std::vector<size_t> open;
  for (size_t i = 0; i < vports_.size(); ++i) {
    const Vport& v = vports_[i];
    if (i == vport || (v.ever && v.last_active_ps + kActivityWindowPs >= now_ps)) open.push_back(i);
  }
  if (vport >= vports_.size()) return link_gbps_;
  double capacity = link_gbps_;
  for (;;) {
    double weights = 0;
    for (size_t i : open) weights += weight(vports_[i]);
    bool capped = false;
    for (auto it = open.begin(); it != open.end(); ++it) {
      const Vport& v = vports_[*it];
      const double share = capacity * weight(v) / weights;
      const double cap = v.qos.max_tx_rate_mbps != 0 ? v.qos.max_tx_rate_mbps / 1000.0 : link_gbps_;
      if (cap < share) {
        if (*it == vport) return cap;
        capacity -= cap;
        open.erase(it);
        capped = true;
        break;
      }
    }
    if (!capped) return capacity * weight(vports_[vport]) / weights;
  }
}

uint64_t PortScheduler::serialised_ps(uint16_t vport, size_t wire_bytes, uint64_t start_ps) {
  Vport& v = at(vport);
  const uint64_t begin = enabled_ ? std::max(start_ps, v.free_ps) : start_ps;
  const double gbps = rate_gbps(vport, begin);
  const uint64_t done = begin + uint64_t(double(wire_bytes) * 8000.0 / gbps);
  v.free_ps = done;
  v.last_active_ps = done;
  v.ever = true;
  v.bytes += wire_bytes;
  return done;
}

}  // namespace hcaemu::sriov
