#include "sriov/port_scheduler.h"

#include <algorithm>
#include <limits>


namespace hcaemu::sriov {
namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();

// Water-filling: `capacity` shared by `weights`, none above its cap; items capped take their cap
// and leave the rest to the others.
std::vector<double> water_fill(const std::vector<double>& weights, const std::vector<double>& caps, double capacity) {
  std::vector<double> out(weights.size(), 0);
  std::vector<bool> fixed(weights.size(), false);
  for (;;) {
    double total = 0;
    for (size_t i = 0; i < weights.size(); ++i)
      if (!fixed[i]) total += weights[i];
    if (total <= 0) return out;
    bool capped = false;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (fixed[i] || caps[i] >= capacity * weights[i] / total) continue;
      out[i] = caps[i];
      fixed[i] = true;
      capacity -= caps[i];
      capped = true;
    }
    if (!capped) {
      for (size_t i = 0; i < weights.size(); ++i)
        if (!fixed[i]) out[i] = capacity * weights[i] / total;
      return out;
    }
  }
}

}  // namespace

PortScheduler::Vport& PortScheduler::at(uint16_t vport) {
  if (vport >= vports_.size()) vports_.resize(size_t(vport) + 1);
  return vports_[vport];
}

void PortScheduler::refresh_enabled() {
  enabled_ = tc_.classes();
  largest_min_mbps_ = 0;
  for (const Vport& v : vports_) {
    enabled_ = enabled_ || v.qos.max_tx_rate_mbps != 0 || v.qos.min_tx_rate_mbps != 0;
    largest_min_mbps_ = std::max(largest_min_mbps_, v.qos.min_tx_rate_mbps);
  }
}

void PortScheduler::set_qos(uint16_t vport, const VportQos& qos) {
  at(vport).qos = qos;
  refresh_enabled();
}

void PortScheduler::set_tc_config(const PortTcConfig& config) {
  tc_ = config;
  refresh_enabled();
}

// mlx5's bw_share: min rates scaled so the largest is 100, at least 1 (no min rate: 1).
double PortScheduler::weight(const VportQos& q) const {
  if (largest_min_mbps_ == 0) return 1;
  return std::max(1.0, double(q.min_tx_rate_mbps) * 100.0 / double(largest_min_mbps_));
}

double PortScheduler::cap_gbps(const VportQos& q) const {
  return q.max_tx_rate_mbps != 0 ? q.max_tx_rate_mbps / 1000.0 : kUnlimited;
}

// The priority from the frame's first headers only: an 802.1Q tag's PCP, or the DSCP of the IPv4 /
// IPv6 header behind it (a frame too short for them is priority 0).
uint8_t PortScheduler::traffic_class(std::span<const uint8_t> frame) const {
  if (!tc_.classes() || frame.size() < 14) return 0;
  auto be16 = [&](size_t at) { return uint16_t(frame[at] << 8 | frame[at + 1]); };
  size_t l3 = 14;
  uint16_t ethertype = be16(12);
  const bool tagged = ethertype == 0x8100 && frame.size() >= 18;
  if (tagged) {
    ethertype = be16(16);
    l3 = 18;
  }
  uint8_t priority = 0;
  if (!tc_.trust_dscp) {
    priority = tagged ? uint8_t(frame[14] >> 5) : 0;
  } else if (frame.size() >= l3 + 2 && ethertype == 0x0800) {
    priority = uint8_t(frame[l3 + 1] >> 5);  // TOS: DSCP is its upper 6 bits, priority DSCP >> 3
  } else if (frame.size() >= l3 + 2 && ethertype == 0x86dd) {
    priority = uint8_t(((frame[l3] & 0x0f) << 4 | frame[l3 + 1] >> 4) >> 5);  // traffic class
  }
  return tc_.prio_tc[priority & 7] & 7;
}

bool PortScheduler::active(uint16_t vport, uint8_t tc, uint64_t now_ps) const {
  const auto it = last_active_ps_.find({vport, tc});
  return it != last_active_ps_.end() && it->second + kActivityWindowPs >= now_ps;
}

double PortScheduler::rate_gbps(uint16_t vport, uint8_t tc, uint64_t now_ps) const {
  if (!enabled_) return link_gbps_;
  // The active flows of each class; the asking one counts as active.
  std::array<std::vector<uint16_t>, 8> flows;
  for (const auto& [flow, last] : last_active_ps_)
    if ((flow.first != vport || flow.second != tc) && last + kActivityWindowPs >= now_ps) flows[flow.second].push_back(flow.first);
  flows[tc].push_back(vport);
  auto class_cap = [&](uint8_t c) {
    double sum = 0;
    for (uint16_t v : flows[c]) sum += cap_gbps(qos(v));
    return sum;
  };
  // Classes: strict ones from the highest take what their flows can use, ETS ones share the rest.
  std::array<double, 8> class_rate{};
  double left = link_gbps_;
  for (int c = 7; c >= 0; --c) {
    if (flows[c].empty() || tc_.tsa[c] != PortTcConfig::Tsa::kStrict) continue;
    class_rate[c] = std::min(left, class_cap(uint8_t(c)));
    left -= class_rate[c];
  }
  std::vector<double> weights, caps;
  std::vector<uint8_t> ets;
  for (uint8_t c = 0; c < 8; ++c) {
    if (flows[c].empty() || tc_.tsa[c] == PortTcConfig::Tsa::kStrict) continue;
    ets.push_back(c);
    weights.push_back(std::max(1.0, double(tc_.tcbw[c])));
    caps.push_back(class_cap(c));
  }
  const std::vector<double> ets_rates = water_fill(weights, caps, std::max(0.0, left));
  for (size_t i = 0; i < ets.size(); ++i) class_rate[ets[i]] = ets_rates[i];
  // Within the class, its vports by weight.
  weights.clear();
  caps.clear();
  size_t mine = 0;
  for (size_t i = 0; i < flows[tc].size(); ++i) {
    const VportQos q = qos(flows[tc][i]);
    weights.push_back(weight(q));
    caps.push_back(cap_gbps(q));
    if (flows[tc][i] == vport) mine = i;
  }
  return water_fill(weights, caps, class_rate[tc])[mine];
}

uint64_t PortScheduler::strict_idle_ps(uint8_t tc, uint64_t now_ps) const {
  uint64_t until = now_ps;
  for (const auto& [flow, last] : last_active_ps_)
    if (flow.second > tc && tc_.tsa[flow.second] == PortTcConfig::Tsa::kStrict && last + kActivityWindowPs >= now_ps)
      until = std::max(until, last + kActivityWindowPs + 1);
  return until;
}

uint64_t PortScheduler::serialised_ps(uint16_t vport, std::span<const uint8_t> frame, size_t wire_bytes,
                                      uint64_t start_ps) {
  Vport& v = at(vport);
  const uint8_t tc = traffic_class(frame);
  uint64_t begin = enabled_ ? std::max(start_ps, v.free_ps) : start_ps;
  double gbps = rate_gbps(vport, tc, begin);
  // Starved by a strict class: wait until it has been idle a window (twice at most, then a floor
  // of 1% of the port, so a frame always leaves).
  for (int tries = 0; gbps <= 0 && tries < 2; ++tries) {
    begin = strict_idle_ps(tc, begin);
    gbps = rate_gbps(vport, tc, begin);
  }
  gbps = std::max(gbps, link_gbps_ / 100);
  const uint64_t done = begin + uint64_t(double(wire_bytes) * 8000.0 / gbps);
  v.free_ps = done;
  v.bytes += wire_bytes;
  last_active_ps_[{vport, tc}] = done;
  return done;
}

}  // namespace hcaemu::sriov
