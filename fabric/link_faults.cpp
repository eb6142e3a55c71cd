#include "fabric/link_faults.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <utility>

namespace hcaemu::fabric {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::optional<double> probability(std::string_view value) {
  const bool percent = value.ends_with('%');
  if (percent) value.remove_suffix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc{} || end != value.data() + value.size() || value.empty()) return std::nullopt;
  if (percent) v /= 100;
  if (!(v >= 0 && v <= 1)) return std::nullopt;
  return v;
}

bool whole_number(std::string_view text, uint64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

// A number followed by one of `units` (name, scale); `bare_scale` when no unit is given (0: a unit is required).
std::optional<double> with_unit(std::string_view text, std::initializer_list<std::pair<std::string_view, double>> units,
                                double bare_scale) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) ++digits;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, v);
  if (digits == 0 || ec != std::errc{} || end != text.data() + digits) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  if (unit.empty()) return bare_scale != 0 || v == 0 ? std::optional(v * bare_scale) : std::nullopt;  // 0 needs no unit
  for (const auto& [name, scale] : units) {
    if (unit.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < unit.size(); ++i)
      same = same && std::tolower(static_cast<unsigned char>(unit[i])) == name[i];
    if (same) return v * scale;
  }
  return std::nullopt;
}

std::string time_text(uint64_t ns) {
  char buffer[32];
  if (ns % 1000000 == 0) std::snprintf(buffer, sizeof(buffer), "%llums", static_cast<unsigned long long>(ns / 1000000));
  else if (ns % 1000 == 0) std::snprintf(buffer, sizeof(buffer), "%lluus", static_cast<unsigned long long>(ns / 1000));
  else std::snprintf(buffer, sizeof(buffer), "%lluns", static_cast<unsigned long long>(ns));
  return buffer;
}

}  // namespace

std::string LinkFaultSettings::text() const {
  char buffer[160];
  std::snprintf(buffer, sizeof(buffer), "loss %.4g%%, corrupt %.4g%%, duplicate %.4g%%, reorder %.4g%%", loss * 100,
                corrupt * 100, duplicate * 100, reorder * 100);
  std::string out = buffer;
  if (delay_ns != 0) out += ", delay " + time_text(delay_ns);
  if (jitter_ns != 0) out += ", jitter " + time_text(jitter_ns);
  if (rate_bps != 0) {
    std::snprintf(buffer, sizeof(buffer), ", rate %.6g Gb/s", rate_bps / 1e9);
    out += buffer;
  }
  return out + ", seed " + std::to_string(seed);
}

std::optional<LinkFaultSettings> parse_link_faults(std::string_view text, std::string& error,
                                                   const LinkFaultSettings& base) {
  LinkFaultSettings s = base;
  while (!text.empty()) {
    const size_t comma = std::min(text.find(','), text.size());
    const std::string_view item = text.substr(0, comma);
    text = comma < text.size() ? text.substr(comma + 1) : std::string_view{};
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      error = "\"" + std::string(item) + "\" is not KEY=VALUE";
      return std::nullopt;
    }
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "seed") {
      if (!whole_number(value, s.seed)) {
        error = "seed \"" + std::string(value) + "\" is not a whole number";
        return std::nullopt;
      }
      continue;
    }
    if (key == "delay" || key == "jitter") {
      // At most 10 s: a link that holds frames longer holds unbounded memory at any rate.
      const std::optional<double> ns = with_unit(value, {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}, 0);
      if (!ns || *ns > 10e9) {
        error = std::string(key) + " \"" + std::string(value) + "\" is not a time up to 10s (e.g. 100us, 2ms)";
        return std::nullopt;
      }
      (key == "delay" ? s.delay_ns : s.jitter_ns) = uint64_t(*ns);
      continue;
    }
    if (key == "rate") {
      const std::optional<double> bps = with_unit(value, {{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"bit", 1}}, 1);
      if (!bps || (*bps != 0 && *bps < 1e3) || *bps > 1e13) {
        error = "rate \"" + std::string(value) + "\" is not a rate (0 for none, or 1kbit..10000gbit, e.g. 10gbit)";
        return std::nullopt;
      }
      s.rate_bps = *bps;
      continue;
    }
    double* slot = key == "loss"        ? &s.loss
                   : key == "corrupt"   ? &s.corrupt
                   : key == "duplicate" ? &s.duplicate
                   : key == "reorder"   ? &s.reorder
                                        : nullptr;
    if (slot == nullptr) {
      error = "unknown key \"" + std::string(key) + "\" (loss, corrupt, duplicate, reorder, delay, jitter, rate, seed)";
      return std::nullopt;
    }
    const std::optional<double> p = probability(value);
    if (!p) {
      error = std::string(key) + " \"" + std::string(value) + "\" is not a probability (0..1, or 0%..100%)";
      return std::nullopt;
    }
    *slot = *p;
  }
  return s;
}

LinkFaults::LinkFaults(LinkFaultSettings settings) : settings_(settings), state_(mix(settings.seed)) {}

void LinkFaults::reconfigure(const LinkFaultSettings& settings) {
  settings_ = settings;
  state_ = mix(settings.seed);
}

double LinkFaults::draw() {
  state_ = mix(state_);
  return double(state_ >> 11) * 0x1.0p-53;
}

std::vector<std::vector<uint8_t>> LinkFaults::carry(std::span<const uint8_t> frame) {
  ++counters_.frames;
  // Every frame draws the same numbers, so one fault's setting does not shift the others'.
  const double lose = draw(), corrupt = draw(), duplicate = draw(), reorder = draw();
  const uint64_t where = state_ = mix(state_);
  std::optional<std::vector<uint8_t>> held = std::exchange(held_, std::nullopt);
  last_ = 0;
  if (lose < settings_.loss) {
    ++counters_.lost;
    last_ = kLost;
    if (held) return {std::move(*held)};
    return {};
  }
  std::vector<std::vector<uint8_t>> out(1, std::vector<uint8_t>(frame.begin(), frame.end()));
  if (corrupt < settings_.corrupt && frame.size() > kCorruptFrom) {
    const uint64_t bits = uint64_t(frame.size() - kCorruptFrom) * 8;
    const uint64_t bit = where % bits;
    out[0][kCorruptFrom + bit / 8] ^= uint8_t(1u << (bit % 8));
    ++counters_.corrupted;
    last_ |= kCorrupted;
  }
  if (duplicate < settings_.duplicate) {
    out.push_back(out[0]);
    ++counters_.duplicated;
    last_ |= kDuplicated;
  }
  if (held) {
    out.push_back(std::move(*held));
  } else if (reorder < settings_.reorder) {
    held_ = std::move(out[0]);  // goes out after the next frame
    out.erase(out.begin());
    ++counters_.reordered;
    last_ |= kHeldBack;
  }
  return out;
}

LinkShaper::LinkShaper(const LinkFaultSettings& settings) : settings_(settings), state_(mix(settings.seed ^ 0x6a69)) {}

uint64_t LinkShaper::release_ns(uint64_t now_ns, size_t bytes) {
  uint64_t sent = now_ns;
  if (settings_.rate_bps > 0) {
    // Ethernet's preamble, start delimiter and gap take the wire as well (20 bytes).
    const double wire_ns = double(bytes + 20) * 8e9 / settings_.rate_bps;
    wire_free_ns_ = std::max(wire_free_ns_, now_ns) + uint64_t(wire_ns);
    sent = wire_free_ns_;
  }
  uint64_t jitter = 0;
  if (settings_.jitter_ns != 0) {
    state_ = mix(state_);
    jitter = state_ % settings_.jitter_ns;
  }
  last_release_ns_ = std::max(last_release_ns_, sent + settings_.delay_ns + jitter);
  return last_release_ns_;
}

}  // namespace hcaemu::fabric
