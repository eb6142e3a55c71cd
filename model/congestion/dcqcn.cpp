#include "model/congestion/dcqcn.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace hcaemu::model {

namespace {
constexpr double kPsPerUs = 1e6;
uint64_t us_to_ps(double us) { return uint64_t(std::llround(us * kPsPerUs)); }
}  // namespace

bool ReactionPoint::on_cnp(uint64_t now_ps) {
  advance(now_ps);
  cnp_this_period_ = true;
  if (cut_once_ && now_ps < last_cut_ps_ + us_to_ps(p_->rate_reduce_monitor_period_us)) return false;
  const bool first = !limited_;
  if (first) {
    limited_ = true;
    current_gbps_ = target_gbps_ = line_gbps_;
    alpha_ = double(p_->initial_alpha_value) / 1024.0;
    alpha_clock_ps_ = timer_clock_ps_ = now_ps;
    next_send_ps_ = 0;
  }
  target_gbps_ = current_gbps_;
  if (first && p_->rate_to_set_on_first_cnp_mbps > 0) {
    current_gbps_ = target_gbps_ = std::min(line_gbps_, p_->rate_to_set_on_first_cnp_mbps / 1000.0);
  } else {
    const double cut = alpha_ * 1024.0 / std::ldexp(1.0, int(p_->rpg_gd));
    const double floor = current_gbps_ * double(p_->rpg_min_dec_fac) / 100.0;
    current_gbps_ = std::max(current_gbps_ * (1.0 - cut), floor);
  }
  current_gbps_ = std::max(current_gbps_, p_->rpg_min_rate_mbps / 1000.0);
  // alpha moves up at its next update (cnp_this_period_); the increase stages start again.
  last_cut_ps_ = now_ps;
  cut_once_ = true;
  timer_stage_ = byte_stage_ = 0;
  bytes_since_ = 0;
  timer_clock_ps_ = now_ps;
  return true;
}

void ReactionPoint::advance(uint64_t now_ps) {
  if (!limited_) return;
  const double g = double(p_->dce_tcp_g) / 1024.0;
  const uint64_t alpha_period = std::max<uint64_t>(us_to_ps(p_->dce_tcp_rtt_us), 1);
  if (now_ps >= alpha_clock_ps_ + alpha_period) {
    uint64_t periods = (now_ps - alpha_clock_ps_) / alpha_period;
    if (cnp_this_period_) {  // the first period saw a CNP: up; the rest decay
      alpha_ = g * alpha_ + (1.0 - g);
      cnp_this_period_ = false;
      --periods;
    }
    alpha_ *= std::pow(g, double(periods));
    alpha_clock_ps_ += ((now_ps - alpha_clock_ps_) / alpha_period) * alpha_period;
  }
  const uint64_t timer = std::max<uint64_t>(us_to_ps(p_->rpg_time_reset_us), 1);
  while (limited_ && now_ps >= timer_clock_ps_ + timer) {
    timer_clock_ps_ += timer;
    ++timer_stage_;
    increase();
  }
}

void ReactionPoint::increase() {
  const uint32_t f = p_->rpg_threshold;
  if (std::max(timer_stage_, byte_stage_) < f) {
    // fast recovery: toward the rate before the cut
  } else if (std::min(timer_stage_, byte_stage_) > f) {
    target_gbps_ += double(std::min(timer_stage_, byte_stage_) - f) * p_->rpg_hai_rate_mbps / 1000.0;
  } else {
    target_gbps_ += p_->rpg_ai_rate_mbps / 1000.0;
  }
  target_gbps_ = std::min(target_gbps_, line_gbps_);
  current_gbps_ = (current_gbps_ + target_gbps_) / 2.0;
  if (current_gbps_ >= line_gbps_ * 0.999) {  // back at the line rate: no limit any more
    limited_ = false;
    cut_once_ = false;
    current_gbps_ = target_gbps_ = line_gbps_;
  }
}

void ReactionPoint::on_sent(uint64_t wire_bytes, uint64_t start_ps) {
  advance(start_ps);
  if (!limited_) return;
  next_send_ps_ = std::max(next_send_ps_, start_ps) + uint64_t(std::llround(double(wire_bytes) * 8000.0 / current_gbps_));
  bytes_since_ += wire_bytes;
  while (limited_ && bytes_since_ >= p_->rpg_byte_reset) {
    bytes_since_ -= p_->rpg_byte_reset;
    ++byte_stage_;
    increase();
  }
}

uint64_t ReactionPoint::next_send_ps(uint64_t now_ps) {
  advance(now_ps);
  return limited_ && next_send_ps_ > now_ps ? next_send_ps_ : 0;
}

double ReactionPoint::rate_gbps(uint64_t now_ps) {
  advance(now_ps);
  return limited_ ? current_gbps_ : line_gbps_;
}

std::optional<DcqcnParameters> dcqcn_profile(const std::string& name) {
  DcqcnParameters p;
  p.enabled = true;
  if (name == "connectx") return p;
  if (name != "paper") return std::nullopt;
  p.min_time_between_cnps_us = 50;
  p.dce_tcp_g = 1024 - 4;  // g = 1/256
  p.dce_tcp_rtt_us = 55;
  p.rate_reduce_monitor_period_us = 50;
  p.rpg_time_reset_us = 55;
  p.rpg_byte_reset = 10'000'000;
  p.rpg_threshold = 5;
  p.rpg_ai_rate_mbps = 40;
  p.rpg_hai_rate_mbps = 200;
  return p;
}

std::string validate(const DcqcnParameters& p) {
  if (p.dce_tcp_g > 1023) return "dcqcn.dce_tcp_g must be at most 1023";
  if (p.initial_alpha_value < 1 || p.initial_alpha_value > 1023) return "dcqcn.initial_alpha_value must be in 1..1023";
  if (p.rpg_min_dec_fac > 100) return "dcqcn.rpg_min_dec_fac must be at most 100 (%)";
  if (p.rpg_gd < 10 || p.rpg_gd > 11) return "dcqcn.rpg_gd must be 10 or 11";
  if (!(p.rpg_min_rate_mbps > 0)) return "dcqcn.rpg_min_rate_mbps must be above 0";
  if (!(p.dce_tcp_rtt_us > 0) || !(p.rpg_time_reset_us > 0)) return "dcqcn timers must be above 0";
  if (p.rpg_byte_reset == 0) return "dcqcn.rpg_byte_reset must be at least 1";
  return {};
}

namespace {
struct Key {
  const char* name;
  std::function<void(DcqcnParameters&, double)> set;
  bool whole;
};
const std::vector<Key>& keys() {
  static const std::vector<Key> all = {
      {"enabled", [](DcqcnParameters& p, double v) { p.enabled = v != 0; }, true},
      {"min_time_between_cnps_us", [](DcqcnParameters& p, double v) { p.min_time_between_cnps_us = v; }, false},
      {"dce_tcp_g", [](DcqcnParameters& p, double v) { p.dce_tcp_g = uint32_t(v); }, true},
      {"dce_tcp_rtt_us", [](DcqcnParameters& p, double v) { p.dce_tcp_rtt_us = v; }, false},
      {"initial_alpha_value", [](DcqcnParameters& p, double v) { p.initial_alpha_value = uint32_t(v); }, true},
      {"rate_to_set_on_first_cnp_mbps", [](DcqcnParameters& p, double v) { p.rate_to_set_on_first_cnp_mbps = v; }, false},
      {"rpg_min_dec_fac", [](DcqcnParameters& p, double v) { p.rpg_min_dec_fac = uint32_t(v); }, true},
      {"rpg_min_rate_mbps", [](DcqcnParameters& p, double v) { p.rpg_min_rate_mbps = v; }, false},
      {"rpg_gd", [](DcqcnParameters& p, double v) { p.rpg_gd = uint32_t(v); }, true},
      {"rate_reduce_monitor_period_us", [](DcqcnParameters& p, double v) { p.rate_reduce_monitor_period_us = v; }, false},
      {"rpg_time_reset_us", [](DcqcnParameters& p, double v) { p.rpg_time_reset_us = v; }, false},
      {"rpg_byte_reset", [](DcqcnParameters& p, double v) { p.rpg_byte_reset = uint32_t(v); }, true},
      {"rpg_threshold", [](DcqcnParameters& p, double v) { p.rpg_threshold = uint32_t(v); }, true},
      {"rpg_ai_rate_mbps", [](DcqcnParameters& p, double v) { p.rpg_ai_rate_mbps = v; }, false},
      {"rpg_hai_rate_mbps", [](DcqcnParameters& p, double v) { p.rpg_hai_rate_mbps = v; }, false},
  };
  return all;
}
}  // namespace

bool set_dcqcn_parameter(DcqcnParameters& p, const std::string& key, const std::string& value, std::string* error) {
  for (const Key& k : keys()) {
    if (key != k.name) continue;
    double v = 0;
    size_t used = 0;
    if (key == "enabled" && (value == "true" || value == "on")) v = 1, used = value.size();
    else if (key == "enabled" && (value == "false" || value == "off")) v = 0, used = value.size();
    else {
      try {
        v = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
    }
    if (used == 0 || used != value.size() || !std::isfinite(v) || v < 0 || v > 4e9 || (k.whole && v != std::floor(v))) {
      if (error) *error = "dcqcn." + key + ": \"" + value + "\" is not a " + (k.whole ? "whole number" : "number") + ", 0 or more";
      return false;
    }
    k.set(p, v);
    if (const std::string why = validate(p); !why.empty()) {
      if (error) *error = why;
      return false;
    }
    return true;
  }
  if (error) *error = "unknown DCQCN parameter dcqcn." + key;
  return false;
}

std::vector<std::string> dcqcn_parameter_names() {
  std::vector<std::string> names;
  for (const Key& k : keys()) names.push_back(std::string("dcqcn.") + k.name);
  return names;
}

}  // namespace hcaemu::model
