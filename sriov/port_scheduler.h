#pragma once
// The physical port's transmit scheduler among the vports (issue 15), as a ConnectX's eswitch QoS
// does for SR-IOV (`ip link set PF vf N max_tx_rate/min_tx_rate`) and its port ETS does for traffic
// classes (`mlnx_qos --trust --prio_tc --tsa --tcbw`): each function's frames are serialised at its
// share of the port in model time. With QoS off (the default) every function serialises at the
// full port rate on its own, as before.
//
// With QoS on, the port's rate is divided among the flows (vport, traffic class) that sent within
// the last activity window: first among the traffic classes (strict ones, highest first, take what
// their flows can use; the ETS ones share the rest by their bandwidth percentages), then within a
// class among its vports by weight. Both levels water-fill: a flow capped by its vport's maximum
// rate leaves the rest of its share to the others, so the port stays work conserving. A vport's
// minimum rate is its weight (relative to the others'), as mlx5's bw_share is derived from
// min_tx_rate. A frame of a class starved by an active strict class waits until that class has
// been idle for the activity window.
//
// Pure C++, model time in picoseconds. Each function's engine asks for its own frames in its own
// time order; functions run decoupled (a message ahead of the kernel at most), so the shares are
// exact over windows of many messages, approximate within one.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace hcaemu::sriov {

struct VportQos {
  uint32_t max_tx_rate_mbps = 0;  // 0: no maximum
  uint32_t min_tx_rate_mbps = 0;  // 0: the smallest weight
  bool operator==(const VportQos&) const = default;
};

// The port's traffic classes: a frame's priority (its 802.1Q PCP, or with trust_dscp its IP DSCP
// >> 3, as mlx5's default dscp2prio) maps to a class; each class is strict priority or ETS with a
// bandwidth percentage. The default has every priority in class 0: one class, no effect.
struct PortTcConfig {
  enum class Tsa : uint8_t { kEts, kStrict };
  bool trust_dscp = false;
  std::array<uint8_t, 8> prio_tc{};  // priority -> traffic class 0..7
  std::array<Tsa, 8> tsa{};          // per class
  std::array<uint8_t, 8> tcbw{100, 0, 0, 0, 0, 0, 0, 0};  // ETS percentages per class
  bool classes() const {  // some priority maps to a class other than 0
    for (uint8_t tc : prio_tc)
      if (tc != 0) return true;
    return false;
  }
  bool operator==(const PortTcConfig&) const = default;
};

class PortScheduler {
 public:
  static constexpr uint64_t kActivityWindowPs = 20'000'000;  // 20 us: a flow idle longer has no share

  explicit PortScheduler(double link_gbps = 100.0) : link_gbps_(link_gbps) {}
  void set_link_gbps(double gbps) { link_gbps_ = gbps; }
  double link_gbps() const { return link_gbps_; }

  void set_qos(uint16_t vport, const VportQos& qos);
  VportQos qos(uint16_t vport) const { return vport < vports_.size() ? vports_[vport].qos : VportQos{}; }
  void set_tc_config(const PortTcConfig& config);
  const PortTcConfig& tc_config() const { return tc_; }
  bool enabled() const { return enabled_; }

  // The traffic class of a frame (by its PCP or DSCP, as the configuration trusts).
  uint8_t traffic_class(std::span<const uint8_t> frame) const;
  // When `frame` (taking `wire_bytes` on the wire: preamble, FCS and gap included) that vport
  // `vport` starts to send at `start_ps` has left the port.
  uint64_t serialised_ps(uint16_t vport, std::span<const uint8_t> frame, size_t wire_bytes, uint64_t start_ps);
  // The rate in Gb/s a frame of vport `vport` in class `tc` gets at `now_ps` (0: starved by a strict class).
  double rate_gbps(uint16_t vport, uint8_t tc, uint64_t now_ps) const;

  uint64_t bytes_sent(uint16_t vport) const { return vport < vports_.size() ? vports_[vport].bytes : 0; }

 private:
  struct Vport {
    VportQos qos;
    uint64_t free_ps = 0;  // its last frame has left by then
    uint64_t bytes = 0;
  };
  Vport& at(uint16_t vport);
  double weight(const VportQos& q) const;
  double cap_gbps(const VportQos& q) const;
  bool active(uint16_t vport, uint8_t tc, uint64_t now_ps) const;
  // When the strict classes above `tc` that are active at `now_ps` will have been idle a window.
  uint64_t strict_idle_ps(uint8_t tc, uint64_t now_ps) const;
  void refresh_enabled();

  double link_gbps_;
  bool enabled_ = false;
  uint32_t largest_min_mbps_ = 0;
  PortTcConfig tc_;
  std::vector<Vport> vports_;
  std::map<std::pair<uint16_t, uint8_t>, uint64_t> last_active_ps_;  // per flow: end of its last frame
};

}  // namespace hcaemu::sriov
