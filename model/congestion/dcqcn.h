#pragma once
// DCQCN, the congestion control ConnectX runs for RoCE (Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments", SIGCOMM 2015), in model time. The notification point (the
// receiver) answers ECN-marked packets with CNPs, at most one per QP per interval; the reaction
// point (the sender) keeps a rate per QP: cut by alpha/2 on a CNP (at most once per monitor period),
// alpha itself a moving average of "was there a CNP this period", and raised again by a timer and
// a byte counter through fast recovery, additive and hyper increase. Every parameter is ConnectX's
// (its firmware's names and defaults, NVIDIA's "DCQCN CC Parameters" page); where the paper's
// differ they are noted. Pure C++: timers are evaluated when the QP is next touched, so nothing runs
// for an idle QP and the result is the same as with events.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hcaemu::model {

struct DcqcnParameters {
  bool enabled = false;         // ConnectX: per priority, on by default; hcaemu: off unless asked
  // Notification point.
  double min_time_between_cnps_us = 4;  // paper: 50 us
  uint8_t cnp_dscp = 48;
  // Reaction point: alpha.
  uint32_t dce_tcp_g = 1019;            // alpha = g/1024 alpha (+ (1 - g/1024) with a CNP); paper: g = 1/256
  double dce_tcp_rtt_us = 1;            // alpha's update period; paper: 55 us
  uint32_t initial_alpha_value = 1023;  // /1024, on the first CNP of a flow
  // Rate decrease.
  double rate_to_set_on_first_cnp_mbps = 0;  // 0: the formula
  uint32_t rpg_min_dec_fac = 50;             // % : one cut keeps at least this much of the rate
  double rpg_min_rate_mbps = 1;
  uint32_t rpg_gd = 11;                      // rate x (1 - alpha x 1024 / 2^gd): 11 halves with alpha 1
  double rate_reduce_monitor_period_us = 4;  // at most one cut per period
  // Rate increase.
  double rpg_time_reset_us = 300;    // timer; paper: 55 us
  uint32_t rpg_byte_reset = 32767;   // byte counter (bytes sent); paper: 10 MB
  uint32_t rpg_threshold = 1;        // F: stages of fast recovery; paper: 5
  double rpg_ai_rate_mbps = 5;       // additive increase; paper: 40 Mb/s
  double rpg_hai_rate_mbps = 50;     // hyper increase; paper: 200 Mb/s
};

// Named parameter sets: "connectx" (the firmware defaults above, enabled) and "paper" (the values
// Zhu et al. evaluate: CNPs at most every 50 us, g = 1/256, alpha and increase timers 55 us, byte
// counter 10 MB, F = 5, AI 40 Mb/s, HAI 200 Mb/s). Null for another name.
std::optional<DcqcnParameters> dcqcn_profile(const std::string& name);

// Empty when usable, else the first problem naming the key.
std::string validate(const DcqcnParameters& p);
// hcareplay run --set dcqcn.KEY=V (and enabled): false with `error` for an unknown key or bad value.
bool set_dcqcn_parameter(DcqcnParameters& p, const std::string& key, const std::string& value, std::string* error);
std::vector<std::string> dcqcn_parameter_names();

// One QP's rate limiter.
class ReactionPoint {
 public:
  ReactionPoint(const DcqcnParameters& p, double line_gbps) : p_(&p), line_gbps_(line_gbps) {}

  // A CNP arrived: true when it cut the rate (false: within the monitor period, "ignored").
  bool on_cnp(uint64_t now_ps);
  // A message of `wire_bytes` started at `start_ps`.
  void on_sent(uint64_t wire_bytes, uint64_t start_ps);
  // When the next message may start (0: no limit now).
  uint64_t next_send_ps(uint64_t now_ps);
  double rate_gbps(uint64_t now_ps);  // the current rate (line rate when not limited)
  double alpha() const { return alpha_; }
  bool limited() const { return limited_; }

 private:
  void advance(uint64_t now_ps);  // the alpha and increase timers up to now
  void increase();                // one increase event (timer or byte counter)

  const DcqcnParameters* p_;
  double line_gbps_;
  bool limited_ = false;
  double current_gbps_ = 0, target_gbps_ = 0, alpha_ = 1.0;
  uint64_t last_cut_ps_ = 0, alpha_clock_ps_ = 0, timer_clock_ps_ = 0;
  bool cnp_this_period_ = false, cut_once_ = false;
  uint32_t timer_stage_ = 0, byte_stage_ = 0;
  uint64_t bytes_since_ = 0;
  uint64_t next_send_ps_ = 0;
};

// The notification point of one QP: whether a marked packet now gets a CNP.
class NotificationPoint {
 public:
  bool should_notify(const DcqcnParameters& p, uint64_t now_ps) {
    const uint64_t gap = uint64_t(p.min_time_between_cnps_us * 1e6);
    if (sent_ && now_ps < last_ps_ + gap) return false;
    sent_ = true;
    last_ps_ = now_ps;
    return true;
  }

 private:
  bool sent_ = false;
  uint64_t last_ps_ = 0;
};

}  // namespace hcaemu::model
