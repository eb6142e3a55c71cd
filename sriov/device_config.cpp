#include "sriov/device_config.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <fstream>
#include <stdexcept>
#include <tuple>

namespace hcaemu::sriov {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

void check_known_keys(const json& object, std::initializer_list<const char*> keys, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known) fail("unknown key \"" + where + it.key() + "\"");
  }
}

template <typename T>
void take(const json& object, const char* key, T& out, const std::string& where) {
  if (!object.contains(key)) return;
  const json& v = object.at(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    fail("\"" + where + key + "\" must be a non-negative integer");
  uint64_t raw = v.get<uint64_t>();
  if (raw > std::numeric_limits<T>::max()) fail("\"" + where + key + "\" is too large");
  out = T(raw);
}

uint64_t parse_hex_or_number(const json& v, const std::string& key) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    size_t used = 0;
    try {
      uint64_t value = std::stoull(s, &used, 0);
      if (used == s.size()) return value;
    } catch (const std::exception&) {
    }
  }
  fail("\"" + key + "\" must be a number or a \"0x...\" string");
}

void take_function(const json& object, const char* key, FunctionShape& shape) {
  if (!object.contains(key)) return;
  const json& f = object.at(key);
  const std::string where = std::string(key) + ".";
  if (!f.is_object()) fail("\"" + std::string(key) + "\" must be an object");
  check_known_keys(f, {"bar0_mib", "msix_vectors", "translation_entries", "log_max_qp", "log_max_cq", "log_max_mkey",
                       "log_max_srq"},
                   where);
  uint64_t mib = shape.bar0_size >> 20;
  take(f, "bar0_mib", mib, where);
  if (mib > (1ull << 20)) fail("\"" + where + "bar0_mib\" is too large");
  shape.bar0_size = mib << 20;
  take(f, "msix_vectors", shape.msix_vectors, where);
  take(f, "translation_entries", shape.translation_entries, where);
  take(f, "log_max_qp", shape.quotas.log_max_qp, where);
  take(f, "log_max_cq", shape.quotas.log_max_cq, where);
  take(f, "log_max_mkey", shape.quotas.log_max_mkey, where);
  take(f, "log_max_srq", shape.quotas.log_max_srq, where);
}

}  // namespace

VfSettings DeviceConfig::vf_settings(uint16_t vf) const {
  auto it = vfs.find(vf);
  return it != vfs.end() ? it->second : VfSettings{};
}

namespace {
uint64_t mac_value(const std::array<uint8_t, 6>& mac) {
  uint64_t value = 0;
  for (uint8_t b : mac) value = (value << 8) | b;
  return value;
}
// mac + offset, carried through all 48 bits.
std::array<uint8_t, 6> mac_plus(const std::array<uint8_t, 6>& mac, uint64_t offset) {
  uint64_t value = mac_value(mac) + offset;
  std::array<uint8_t, 6> out{};
  for (int i = 5; i >= 0; --i, value >>= 8) out[size_t(i)] = uint8_t(value);
  return out;
}
constexpr uint64_t kSecondPortMacOffset = 0x8000;
}  // namespace

std::array<uint8_t, 6> DeviceConfig::function_mac(uint16_t vhca_id) const { return mac_plus(mac_base, vhca_id); }

std::string DeviceConfig::function_name(uint16_t vhca_id) const {
  const std::string pf = port == 0 ? "pf" : "pf" + std::to_string(port);
  if (vhca_id == 0) return pf;
  return (port == 0 ? "" : pf + "-") + "vf" + std::to_string(vhca_id - 1);
}

DeviceConfig DeviceConfig::port_config(uint8_t index) const {
  if (index >= physical_ports) throw std::out_of_range("no physical port " + std::to_string(index));
  DeviceConfig c = *this;
  c.port = index;
  if (index == 0) return c;
  c.mac_base = port1.mac_base.value_or(mac_plus(mac_base, kSecondPortMacOffset));
  c.vfs = port1.vfs;
  c.port_tc = port1.port_tc;
  c.uplink = port1.uplink;
  return c;
}

namespace {
std::array<uint8_t, 6> parse_mac(const std::string& text) {
  std::array<unsigned, 6> v{};
  char extra = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &extra) != 6)
    fail("\"mac_base\" must look like \"02:c9:00:00:00:00\"");
  std::array<uint8_t, 6> mac{};
  for (size_t i = 0; i < 6; ++i) {
    if (v[i] > 0xff) fail("\"mac_base\" has an octet above ff");
    mac[i] = uint8_t(v[i]);
  }
  if (mac[0] & 1) fail("\"mac_base\" must be a unicast address");
  return mac;
}

std::string format_mac(const std::array<uint8_t, 6>& m) {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return text;
}
}  // namespace

void DeviceConfig::validate() const {
  auto power_of_two_bar = [](uint64_t size, const char* key) {
    if (size < (1ull << 20) || !std::has_single_bit(size))
      fail(std::string("\"") + key + ".bar0_mib\" must be a power of two of at least 1");
  };
  power_of_two_bar(pf.bar0_size, "pf");
  power_of_two_bar(vf.bar0_size, "vf");
  if (pf.msix_vectors < 1 || pf.msix_vectors > 512) fail("\"pf.msix_vectors\" must be 1..512 (the table shares BAR2 with the PBA)");
  if (vf.msix_vectors < 1 || vf.msix_vectors > 512) fail("\"vf.msix_vectors\" must be 1..512 (the table shares BAR2 with the PBA)");
  for (const auto& [shape, key] : {std::pair{&pf, "pf"}, std::pair{&vf, "vf"}}) {
    if (shape->translation_entries < (1u << 10) || shape->translation_entries > (uint64_t(1) << 28))
      fail(std::string("\"") + key + ".translation_entries\" must be 1024..268435456 (8 bytes each)");
    using Q = model::ObjectQuotas;
    for (const auto& [value, name, most] : {std::tuple{shape->quotas.log_max_qp, "log_max_qp", Q::kMaxLogQp},
                                            std::tuple{shape->quotas.log_max_cq, "log_max_cq", Q::kMaxLogCq},
                                            std::tuple{shape->quotas.log_max_mkey, "log_max_mkey", Q::kMaxLogMkey},
                                            std::tuple{shape->quotas.log_max_srq, "log_max_srq", Q::kMaxLogSrq}})
      if (value < Q::kMinLog || value > most)
        fail(std::string("\"") + key + "." + name + "\" must be " + std::to_string(Q::kMinLog) + ".." +
             std::to_string(most) + " (a power of two of objects)");
  }
  if (total_vfs > 127) fail("\"total_vfs\" must be at most 127 (ConnectX firmware limit per PF)");
  if (link_generation < 1 || link_generation > 5) fail("\"pcie.generation\" must be 1..5");
  auto check_vf_numbers = [this](const std::map<uint16_t, VfSettings>& settings, const std::string& key) {
    for (const auto& [vf, unused] : settings)
      if (vf >= total_vfs) fail("\"" + key + "\" names VF " + std::to_string(vf) + ", beyond total_vfs");
  };
  check_vf_numbers(vfs, "vfs");
  if (!std::has_single_bit(unsigned(link_width)) || link_width > 32) fail("\"pcie.width\" must be 1, 2, 4, 8, 16 or 32");
  if (physical_ports < 1 || physical_ports > 2) fail("\"physical_ports\" must be 1 or 2");
  if (physical_ports == 2 && port == 0) {
    check_vf_numbers(port1.vfs, "port1.vfs");
    // Each port's functions take mac_base .. mac_base + total_vfs: the two ranges must not meet.
    const uint64_t first0 = mac_value(mac_base), first1 = mac_value(port_config(1).mac_base);
    if (first1 <= first0 + total_vfs && first0 <= first1 + total_vfs)
      fail("\"port1.mac_base\" gives port 1's functions addresses of port 0's (each port takes mac_base to "
           "mac_base + total_vfs)");
  }
}

// "vfs": {"3": {"spoofchk": false, "trust": true}, ...}: settings by VF number.
void take_vf_settings(const json& vfs, std::map<uint16_t, VfSettings>& into) {
  if (!vfs.is_object()) fail("\"vfs\" must be an object keyed by VF number");
  for (const auto& [key, value] : vfs.items()) {
    unsigned vf = 0;
    char extra = 0;
    if (std::sscanf(key.c_str(), "%u%c", &vf, &extra) != 1 || vf > 0xffff)
      fail("\"vfs\" keys must be VF numbers, not \"" + key + "\"");
    if (!value.is_object()) fail("\"vfs." + key + "\" must be an object");
    check_known_keys(value, {"spoofchk", "trust", "max_tx_rate", "min_tx_rate"}, "vfs." + key + ".");
    VfSettings settings;
    auto take_switch = [&](const char* name, bool& into) {
      if (!value.contains(name)) return;
      if (!value.at(name).is_boolean()) fail("\"vfs." + key + "." + name + "\" must be true or false");
      into = value.at(name).get<bool>();
    };
    take_switch("spoofchk", settings.spoofchk);
    take_switch("trust", settings.trust);
    auto take_rate = [&](const char* name, uint32_t& into) {
      if (!value.contains(name)) return;
      const json& rate = value.at(name);
      if (!rate.is_number_unsigned() || rate.get<uint64_t>() > 1'000'000)
        fail("\"vfs." + key + "." + name + "\" must be a rate in Mb/s from 0 (none) to 1000000");
      into = rate.get<uint32_t>();
    };
    take_rate("max_tx_rate", settings.max_tx_rate_mbps);
    take_rate("min_tx_rate", settings.min_tx_rate_mbps);
    if (settings.max_tx_rate_mbps != 0 && settings.min_tx_rate_mbps > settings.max_tx_rate_mbps)
      fail("\"vfs." + key + "\": min_tx_rate above max_tx_rate");
    into[uint16_t(vf)] = settings;
  }
}

// "port_qos": {"trust": "pcp"|"dscp", "prio_tc": [8 classes], "tsa": [8 of "ets"|"strict"],
// "tcbw": [8 percentages, the ETS classes' adding up to 100]}, as mlnx_qos sets them.
void take_port_qos(const json& q, PortTcConfig& tc) {
  if (!q.is_object()) fail("\"port_qos\" must be an object");
  check_known_keys(q, {"trust", "prio_tc", "tsa", "tcbw"}, "port_qos.");
  if (q.contains("trust")) {
    const json& t = q.at("trust");
    if (t != "pcp" && t != "dscp") fail("\"port_qos.trust\" must be \"pcp\" or \"dscp\"");
    tc.trust_dscp = t == "dscp";
  }
  auto eight = [&](const char* key) -> const json& {
    const json& a = q.at(key);
    if (!a.is_array() || a.size() != 8) fail("\"port_qos." + std::string(key) + "\" must be an array of 8");
    return a;
  };
  if (q.contains("prio_tc")) {
    const json& a = eight("prio_tc");
    for (size_t i = 0; i < 8; ++i) {
      if (!a[i].is_number_unsigned() || a[i].get<unsigned>() > 7) fail("\"port_qos.prio_tc\" holds classes 0..7");
      tc.prio_tc[i] = a[i].get<uint8_t>();
    }
  }
  if (q.contains("tsa")) {
    const json& a = eight("tsa");
    for (size_t i = 0; i < 8; ++i) {
      if (a[i] != "ets" && a[i] != "strict") fail("\"port_qos.tsa\" holds \"ets\" or \"strict\"");
      tc.tsa[i] = a[i] == "strict" ? PortTcConfig::Tsa::kStrict : PortTcConfig::Tsa::kEts;
    }
  }
  if (q.contains("tcbw")) {
    const json& a = eight("tcbw");
    for (size_t i = 0; i < 8; ++i) {
      if (!a[i].is_number_unsigned() || a[i].get<unsigned>() > 100) fail("\"port_qos.tcbw\" holds percentages 0..100");
      tc.tcbw[i] = a[i].get<uint8_t>();
    }
  }
  unsigned ets_total = 0;
  for (size_t i = 0; i < 8; ++i)
    if (tc.tsa[i] == PortTcConfig::Tsa::kEts) ets_total += tc.tcbw[i];
  if (ets_total != 100) fail("\"port_qos.tcbw\": the ETS classes' percentages add up to " + std::to_string(ets_total) + ", not 100");
}

// "uplink": {"endpoint", "faults", "pcap"}, all strings (checked when hcaemu opens the link).
void take_uplink(const json& u, UplinkConfig& uplink) {
  if (!u.is_object()) fail("\"uplink\" must be an object");
  check_known_keys(u, {"endpoint", "faults", "pcap"}, "uplink.");
  for (auto [key, into] : {std::pair{"endpoint", &uplink.endpoint}, {"faults", &uplink.faults}, {"pcap", &uplink.pcap}}) {
    if (!u.contains(key)) continue;
    if (!u.at(key).is_string()) fail("\"uplink." + std::string(key) + "\" must be a string");
    *into = u.at(key).get<std::string>();
  }
  if (uplink.endpoint.empty() && (!uplink.faults.empty() || !uplink.pcap.empty()))
    fail("\"uplink\" has faults or a pcap but no endpoint");
}

// "port1": {"mac_base", "vfs", "port_qos", "uplink"}: the second port's own settings.
void take_second_port(const json& p, SecondPortConfig& port1) {
  try {
    if (!p.is_object()) fail("must be an object");
    check_known_keys(p, {"mac_base", "vfs", "port_qos", "uplink"}, "");
    if (p.contains("mac_base")) port1.mac_base = parse_mac(p.at("mac_base").get<std::string>());
    if (p.contains("vfs")) take_vf_settings(p.at("vfs"), port1.vfs);
    if (p.contains("port_qos")) take_port_qos(p.at("port_qos"), port1.port_tc);
    if (p.contains("uplink")) take_uplink(p.at("uplink"), port1.uplink);
  } catch (const std::runtime_error& e) {
    fail(std::string("in \"port1\": ") + e.what());
  }
}

PortTcConfig parse_port_qos(const std::string& json_text, const PortTcConfig& base) {
  PortTcConfig tc = base;
  try {
    take_port_qos(json::parse(json_text), tc);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("port_qos: ") + e.what());
  }
  return tc;
}

std::string port_qos_json(const PortTcConfig& tc) {
  json tsa = json::array();
  for (auto t : tc.tsa) tsa.push_back(t == PortTcConfig::Tsa::kStrict ? "strict" : "ets");
  return json{{"trust", tc.trust_dscp ? "dscp" : "pcp"}, {"prio_tc", tc.prio_tc}, {"tsa", tsa}, {"tcbw", tc.tcbw}}.dump();
}

DeviceConfig load_device_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot open");
  DeviceConfig config;
  try {
    json root = json::parse(in);
    if (!root.is_object()) fail("the top level must be an object");
    check_known_keys(root, {"preset", "vendor_id", "pf_device_id", "vf_device_id", "subsystem_vendor_id",
                            "subsystem_id", "revision", "firmware", "pf", "vf", "total_vfs", "pcie",
                            "serial_number", "mac_base", "vfs", "uplink", "port_qos", "physical_ports", "port1",
                            "software_steering"},
                     "");
    if (root.contains("preset")) {
      config.preset = root.at("preset").get<std::string>();
      if (config.preset != "connectx-6dx") fail("unknown preset \"" + config.preset + "\" (known: connectx-6dx)");
    }
    take(root, "vendor_id", config.vendor_id, "");
    take(root, "pf_device_id", config.pf_device_id, "");
    take(root, "vf_device_id", config.vf_device_id, "");
    take(root, "subsystem_vendor_id", config.subsystem_vendor_id, "");
    take(root, "subsystem_id", config.subsystem_id, "");
    take(root, "revision", config.revision, "");
    take(root, "total_vfs", config.total_vfs, "");
    if (root.contains("software_steering")) {
      if (!root.at("software_steering").is_boolean()) fail("\"software_steering\" must be true or false");
      config.software_steering = root.at("software_steering").get<bool>();
    }
    if (root.contains("firmware")) {
      const std::string v = root.at("firmware").get<std::string>();
      unsigned major = 0, minor = 0, sub = 0;
      char extra = 0;
      if (std::sscanf(v.c_str(), "%u.%u.%u%c", &major, &minor, &sub, &extra) != 3 || major > 0xffff ||
          minor > 0xffff || sub > 0xffff)
        fail("\"firmware\" must look like \"22.35.1012\"");
      config.firmware = {uint16_t(major), uint16_t(minor), uint16_t(sub)};
    }
    take_function(root, "pf", config.pf);
    take_function(root, "vf", config.vf);
    if (root.contains("pcie")) {
      const json& p = root.at("pcie");
      if (!p.is_object()) fail("\"pcie\" must be an object");
      check_known_keys(p, {"generation", "width"}, "pcie.");
      take(p, "generation", config.link_generation, "pcie.");
      take(p, "width", config.link_width, "pcie.");
    }
    if (root.contains("mac_base")) config.mac_base = parse_mac(root.at("mac_base").get<std::string>());
    if (root.contains("serial_number")) config.serial_number = parse_hex_or_number(root.at("serial_number"), "serial_number");
    if (root.contains("vfs")) take_vf_settings(root.at("vfs"), config.vfs);
    if (root.contains("port_qos")) take_port_qos(root.at("port_qos"), config.port_tc);
    if (root.contains("uplink")) take_uplink(root.at("uplink"), config.uplink);
    take(root, "physical_ports", config.physical_ports, "");
    if (root.contains("port1")) {
      if (config.physical_ports != 2) fail("\"port1\" needs \"physical_ports\": 2");
      take_second_port(root.at("port1"), config.port1);
    }
    config.validate();
  } catch (const json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  return config;
}

namespace {
json shape_json(const FunctionShape& f) {
  return {{"bar0_mib", f.bar0_size >> 20}, {"msix_vectors", f.msix_vectors}, {"translation_entries", f.translation_entries},
          {"log_max_qp", f.quotas.log_max_qp}, {"log_max_cq", f.quotas.log_max_cq},
          {"log_max_mkey", f.quotas.log_max_mkey}, {"log_max_srq", f.quotas.log_max_srq}};
}
}  // namespace

std::string to_json(const DeviceConfig& c) {
  char fw[32];
  std::snprintf(fw, sizeof fw, "%u.%u.%u", c.firmware.major, c.firmware.minor, c.firmware.subminor);
  char serial[24];
  std::snprintf(serial, sizeof serial, "0x%016llx", static_cast<unsigned long long>(c.serial_number));
  json j = {{"preset", c.preset},
            {"vendor_id", c.vendor_id},
            {"pf_device_id", c.pf_device_id},
            {"vf_device_id", c.vf_device_id},
            {"subsystem_vendor_id", c.subsystem_vendor_id},
            {"subsystem_id", c.subsystem_id},
            {"revision", c.revision},
            {"firmware", fw},
            {"pf", shape_json(c.pf)},
            {"vf", shape_json(c.vf)},
            {"total_vfs", c.total_vfs},
            {"pcie", {{"generation", c.link_generation}, {"width", c.link_width}}},
            {"serial_number", serial},
            {"mac_base", format_mac(c.mac_base)}};
  auto port_settings = [](const DeviceConfig& port, json& into) {
    json vfs = json::object();
    for (const auto& [vf, settings] : port.vfs)
      vfs[std::to_string(vf)] = {{"spoofchk", settings.spoofchk}, {"trust", settings.trust},
                                 {"max_tx_rate", settings.max_tx_rate_mbps}, {"min_tx_rate", settings.min_tx_rate_mbps}};
    into["vfs"] = vfs;
    if (port.port_tc != PortTcConfig{}) into["port_qos"] = json::parse(port_qos_json(port.port_tc));
    if (!port.uplink.endpoint.empty())
      into["uplink"] = {{"endpoint", port.uplink.endpoint}, {"faults", port.uplink.faults}, {"pcap", port.uplink.pcap}};
  };
  port_settings(c, j);
  j["physical_ports"] = c.physical_ports;
  j["software_steering"] = c.software_steering;
  if (c.physical_ports == 2) {
    const DeviceConfig second = c.port_config(1);
    json port1 = {{"mac_base", format_mac(second.mac_base)}};
    port_settings(second, port1);
    j["port1"] = port1;
  }
  return j.dump(2);
}

}  // namespace hcaemu::sriov
