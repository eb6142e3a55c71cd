#include "fabric/link_faults.h"

#include <charconv>
#include <cstdio>

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

}  // namespace

std::string LinkFaultSettings::text() const {
  char buffer[160];
  std::snprintf(buffer, sizeof(buffer), "loss %.4g%%, corrupt %.4g%%, duplicate %.4g%%, seed %llu", loss * 100,
                corrupt * 100, duplicate * 100, static_cast<unsigned long long>(seed));
  return buffer;
}

std::optional<LinkFaultSettings> parse_link_faults(std::string_view text, std::string& error) {
  LinkFaultSettings s;
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
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), s.seed);
      if (ec != std::errc{} || end != value.data() + value.size() || value.empty()) {
        error = "seed \"" + std::string(value) + "\" is not a whole number";
        return std::nullopt;
      }
      continue;
    }
    double* slot = key == "loss" ? &s.loss : key == "corrupt" ? &s.corrupt : key == "duplicate" ? &s.duplicate : nullptr;
    if (slot == nullptr) {
      error = "unknown key \"" + std::string(key) + "\" (loss, corrupt, duplicate, seed)";
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

double LinkFaults::draw() {
  state_ = mix(state_);
  return double(state_ >> 11) * 0x1.0p-53;
}

std::vector<std::vector<uint8_t>> LinkFaults::carry(std::span<const uint8_t> frame) {
  ++counters_.frames;
  // Every frame draws the same three numbers, so one fault's setting does not shift the others'.
  const double lose = draw(), corrupt = draw(), duplicate = draw();
  const uint64_t where = state_ = mix(state_);
  if (lose < settings_.loss) {
    ++counters_.lost;
    return {};
  }
  std::vector<std::vector<uint8_t>> out(1, std::vector<uint8_t>(frame.begin(), frame.end()));
  if (corrupt < settings_.corrupt && frame.size() > kCorruptFrom) {
    const uint64_t bits = uint64_t(frame.size() - kCorruptFrom) * 8;
    const uint64_t bit = where % bits;
    out[0][kCorruptFrom + bit / 8] ^= uint8_t(1u << (bit % 8));
    ++counters_.corrupted;
  }
  if (duplicate < settings_.duplicate) {
    out.push_back(out[0]);
    ++counters_.duplicated;
  }
  return out;
}

}  // namespace hcaemu::fabric
