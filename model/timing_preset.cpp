#include "model/timing_preset.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace hcaemu::model {

using nlohmann::json;

namespace {

// Every value of a preset: its JSON key, where it lives and its range. The loader, the validator
// and the test all walk this table.
struct Field {
  const char* key;
  double TimingPreset::*real = nullptr;
  uint32_t TimingPreset::*count = nullptr;
  double min, max;
};

constexpr Field kFields[] = {
    {"hca_clock_mhz", &TimingPreset::hca_clock_mhz, nullptr, 1, 10000},
    {"doorbell_cycles", nullptr, &TimingPreset::doorbell_cycles, 0, 1e6},
    {"wqe_fetch_cycles", nullptr, &TimingPreset::wqe_fetch_cycles, 0, 1e6},
    {"per_packet_tx_cycles", nullptr, &TimingPreset::per_packet_tx_cycles, 0, 1e6},
    {"per_packet_rx_cycles", nullptr, &TimingPreset::per_packet_rx_cycles, 0, 1e6},
    {"cqe_cycles", nullptr, &TimingPreset::cqe_cycles, 0, 1e6},
    {"eqe_cycles", nullptr, &TimingPreset::eqe_cycles, 0, 1e6},
    {"command_latency_us", &TimingPreset::command_latency_us, nullptr, 0, 1e6},
    {"link_gbps", &TimingPreset::link_gbps, nullptr, 0.001, 10000},
    {"propagation_ns", &TimingPreset::propagation_ns, nullptr, 0, 1e9},
    {"pcie_gen", nullptr, &TimingPreset::pcie_gen, 1, 5},
    {"pcie_width", nullptr, &TimingPreset::pcie_width, 1, 32},
    {"pcie_one_way_ns", &TimingPreset::pcie_one_way_ns, nullptr, 0, 1e6},
};

double value_of(const TimingPreset& p, const Field& f) { return f.real ? p.*f.real : double(p.*f.count); }

const Field* find_field(const std::string& key) {
  for (const Field& f : kFields)
    if (key == f.key) return &f;
  return nullptr;
}

}  // namespace

bool set_timing_parameter(TimingPreset& p, const std::string& key, const std::string& value, std::string* error) {
  const Field* f = find_field(key);
  if (f == nullptr) {
    if (error) *error = "unknown timing preset key " + key;
    return false;
  }
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || !(v >= f->min && v <= f->max) || (f->count && v != std::floor(v))) {
    if (error) *error = key + ": \"" + value + "\" is not a " + (f->count ? "whole number" : "number") + " in [" +
                        std::to_string(f->min) + ", " + std::to_string(f->max) + "]";
    return false;
  }
  if (f->real) p.*f->real = v;
  else p.*f->count = uint32_t(v);
  return true;
}

std::vector<std::string> timing_parameter_names() {
  std::vector<std::string> names;
  for (const Field& f : kFields) names.push_back(f.key);
  return names;
}

namespace {

TimingPreset connectx6dx_100g() { return TimingPreset{}; }

// Same pipeline, one PCIe generation down: the ConnectX-4/5 class on Gen3 x16 that calibration.md's
// measured latencies come from.
TimingPreset connectx5_100g() {
  TimingPreset p;
  p.name = "connectx5-100g";
  p.description = "ConnectX-5 class: 100 Gb/s port on PCIe Gen3 x16";
  p.pcie_gen = 3;
  return p;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

void check_known(const json& object, std::initializer_list<const char*> extra, bool fields, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = fields && find_field(it.key());
    for (const char* k : extra) known = known || it.key() == k;
    if (!known) fail(where + "unknown key \"" + it.key() + "\"");
  }
}

std::string string_at(const json& object, const char* key, const std::string& where) {
  const json& v = object.at(key);
  if (!v.is_string()) fail(where + "\"" + key + "\" must be a string");
  return v.get<std::string>();
}

TimingPreset parse_preset(const json& j, size_t index, const std::vector<TimingPreset>& earlier) {
  std::string where = "presets[" + std::to_string(index) + "]: ";
  if (!j.is_object()) fail(where + "must be an object");
  if (!j.contains("name")) fail(where + "has no \"name\"");
  const std::string name = string_at(j, "name", where);
  if (name.empty()) fail(where + "\"name\" is empty");
  where = "preset \"" + name + "\": ";
  check_known(j, {"name", "description", "base", "sources"}, true, where);

  TimingPreset p;
  p.description.clear();
  bool have_base = false;
  if (j.contains("base")) {
    const std::string base = string_at(j, "base", where);
    std::optional<TimingPreset> from;
    for (const auto& e : earlier)
      if (e.name == base) from = e;
    if (!from) from = builtin_timing_preset(base);
    if (!from) fail(where + "unknown base \"" + base + "\"");
    p = *from;
    have_base = true;
  }
  p.name = name;
  if (j.contains("description")) p.description = string_at(j, "description", where);

  for (const Field& f : kFields) {
    if (!j.contains(f.key)) {
      if (!have_base) fail(where + "\"" + f.key + "\" is missing (give every value, or a \"base\")");
      continue;
    }
    const json& v = j.at(f.key);
    if (f.count) {
      if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
        fail(where + "\"" + f.key + "\" must be a non-negative integer");
      const uint64_t raw = v.get<uint64_t>();
      if (double(raw) > f.max) fail(where + "\"" + f.key + "\" is too large");
      p.*f.count = uint32_t(raw);
    } else {
      if (!v.is_number()) fail(where + "\"" + f.key + "\" must be a number");
      p.*f.real = v.get<double>();
    }
  }
  if (j.contains("sources")) {
    const json& s = j.at("sources");
    if (!s.is_object()) fail(where + "\"sources\" must be an object");
    check_known(s, {"description"}, true, where + "sources: ");
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!it.value().is_string()) fail(where + "sources: \"" + it.key() + "\" must be a string");
  }
  if (std::string problem = validate_timing_preset(p); !problem.empty()) fail(where + problem);
  return p;
}

}  // namespace

std::string validate_timing_preset(const TimingPreset& p) {
  if (p.name.empty()) return "the name is empty";
  for (const Field& f : kFields) {
    const double v = value_of(p, f);
    if (!std::isfinite(v) || v < f.min || v > f.max)
      return "\"" + std::string(f.key) + "\" must be in " + json(f.min).dump() + ".." + json(f.max).dump();
  }
  if (!std::has_single_bit(p.pcie_width)) return "\"pcie_width\" must be 1, 2, 4, 8, 16 or 32";
  return {};
}

std::vector<TimingPreset> builtin_timing_presets() { return {connectx6dx_100g(), connectx5_100g()}; }

std::optional<TimingPreset> builtin_timing_preset(std::string_view name) {
  for (TimingPreset& p : builtin_timing_presets())
    if (p.name == name) return std::move(p);
  return std::nullopt;
}

std::vector<TimingPreset> load_timing_presets(const std::string& json_path, std::string* error) {
  std::vector<TimingPreset> presets;
  try {
    std::ifstream in(json_path);
    if (!in) fail("cannot open");
    const json root = json::parse(in);
    if (!root.is_object()) fail("the top level must be an object");
    check_known(root, {"about", "presets"}, false, "");
    if (!root.contains("presets") || !root.at("presets").is_array() || root.at("presets").empty())
      fail("\"presets\" must be a non-empty array");
    size_t index = 0;
    for (const json& j : root.at("presets")) {
      TimingPreset p = parse_preset(j, index++, presets);
      for (const auto& e : presets)
        if (e.name == p.name) fail("preset \"" + p.name + "\" is defined twice");
      presets.push_back(std::move(p));
    }
  } catch (const std::exception& e) {
    if (error) *error = json_path + ": " + e.what();
    return {};
  }
  return presets;
}

}  // namespace hcaemu::model
