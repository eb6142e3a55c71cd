#pragma once
// The physical port's transmit scheduler among the vports (issue 15), as a ConnectX's eswitch QoS
// does for SR-IOV (`ip link set PF vf N max_tx_rate/min_tx_rate`): each function's frames are
// serialised at its share of the port in model time. With QoS off (the default) every function
// serialises at the full port rate on its own, as before. With QoS on, the port's rate is divided
// among the vports that sent within the last activity window, by weight, water-filling: a vport
// capped by its maximum rate leaves the rest of its share to the others, so the port stays work
// conserving. A function's minimum rate is its weight (relative to the others'), as mlx5's
// bw_share is derived from min_tx_rate.
//
// Pure C++, model time in picoseconds. Each function's engine asks for its own frames in its own
// time order; functions run decoupled (a message ahead of the kernel at most), so the shares are
// exact over windows of many messages, approximate within one.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hcaemu::sriov {

struct VportQos {
  uint32_t max_tx_rate_mbps = 0;  // 0: no maximum
  uint32_t min_tx_rate_mbps = 0;  // 0: the smallest weight
  bool operator==(const VportQos&) const = default;
};

class PortScheduler {
 public:
  static constexpr uint64_t kActivityWindowPs = 20'000'000;  // 20 us: a vport idle longer has no share

  explicit PortScheduler(double link_gbps = 100.0) : link_gbps_(link_gbps) {}
  void set_link_gbps(double gbps) { link_gbps_ = gbps; }
  double link_gbps() const { return link_gbps_; }

  void set_qos(uint16_t vport, const VportQos& qos);
  VportQos qos(uint16_t vport) const { return vport < vports_.size() ? vports_[vport].qos : VportQos{}; }
  bool enabled() const { return enabled_; }

  // When a frame of `wire_bytes` (preamble, FCS and gap included) that vport `vport` starts to send
  // at `start_ps` has left the port.
  uint64_t serialised_ps(uint16_t vport, size_t wire_bytes, uint64_t start_ps);
  // The rate in Gb/s vport `vport` sends at now (its share among the vports active at `now_ps`).
  double rate_gbps(uint16_t vport, uint64_t now_ps) const;

  uint64_t bytes_sent(uint16_t vport) const { return vport < vports_.size() ? vports_[vport].bytes : 0; }

 private:
  struct Vport {
    VportQos qos;
    uint64_t free_ps = 0;         // its last frame has left by then
    uint64_t last_active_ps = 0;  // end of its last frame
    bool ever = false;
    uint64_t bytes = 0;
  };
  Vport& at(uint16_t vport);
  double weight(const Vport& v) const;

  double link_gbps_;
  bool enabled_ = false;
  uint32_t largest_min_mbps_ = 0;
  std::vector<Vport> vports_;
};

}  // namespace hcaemu::sriov
