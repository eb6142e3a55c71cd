#include "fabric/topology.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // aggregates name only what they set

namespace hcaemu::fabric {

using nlohmann::json;

namespace {

struct Invalid {
  std::string what;
};
[[noreturn]] void fail(const std::string& place, const std::string& what) { throw Invalid{place + ": " + what}; }

void only_keys(const json& object, const std::string& place, std::initializer_list<const char*> keys) {
  if (!object.is_object()) fail(place, "must be an object");
  for (const auto& item : object.items())
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return item.key() == k; }))
      fail(place + "." + item.key(), "unknown key");
}

uint64_t unsigned_of(const json& v, const std::string& place, uint64_t max = UINT64_MAX) {
  if (!v.is_number_unsigned()) fail(place, "must be an unsigned integer");
  if (v.get<uint64_t>() > max) fail(place, "must be at most " + std::to_string(max));
  return v.get<uint64_t>();
}
double positive_of(const json& v, const std::string& place) {
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) fail(place, "must be a number above 0");
  return v.get<double>();
}
double non_negative_of(const json& v, const std::string& place) {
  if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>())) fail(place, "must be a number, 0 or more");
  return v.get<double>();
}
bool bool_of(const json& v, const std::string& place) {
  if (!v.is_boolean()) fail(place, "must be true or false");
  return v.get<bool>();
}
uint32_t count_of(const json& object, const std::string& place, const char* key) {
  if (!object.contains(key)) fail(place, std::string("missing key \"") + key + "\"");
  const uint64_t v = unsigned_of(object.at(key), place + "." + key, 4096);
  if (v == 0) fail(place + "." + key, "must be at least 1");
  return uint32_t(v);
}

void parse_switch(const json& j, SwitchConfig& c, const std::string& place) {
  only_keys(j, place, {"buffer_bytes", "shared_buffer", "ecn", "pfc"});
  if (j.contains("buffer_bytes")) c.buffer_bytes = unsigned_of(j["buffer_bytes"], place + ".buffer_bytes");
  if (j.contains("shared_buffer")) c.shared_buffer = bool_of(j["shared_buffer"], place + ".shared_buffer");
  if (j.contains("ecn")) {
    const json& e = j["ecn"];
    const std::string p = place + ".ecn";
    only_keys(e, p, {"enabled", "kmin_bytes", "kmax_bytes", "pmax"});
    if (e.contains("enabled")) c.ecn.enabled = bool_of(e["enabled"], p + ".enabled");
    if (e.contains("kmin_bytes")) c.ecn.kmin_bytes = unsigned_of(e["kmin_bytes"], p + ".kmin_bytes");
    if (e.contains("kmax_bytes")) c.ecn.kmax_bytes = unsigned_of(e["kmax_bytes"], p + ".kmax_bytes");
    if (e.contains("pmax")) c.ecn.pmax = non_negative_of(e["pmax"], p + ".pmax");
  }
  if (j.contains("pfc")) {
    const json& f = j["pfc"];
    const std::string p = place + ".pfc";
    only_keys(f, p, {"enabled", "xoff_bytes", "xon_bytes", "pause_quanta", "priorities"});
    if (f.contains("enabled")) c.pfc.enabled = bool_of(f["enabled"], p + ".enabled");
    if (f.contains("xoff_bytes")) c.pfc.xoff_bytes = unsigned_of(f["xoff_bytes"], p + ".xoff_bytes");
    if (f.contains("xon_bytes")) c.pfc.xon_bytes = unsigned_of(f["xon_bytes"], p + ".xon_bytes");
    if (f.contains("pause_quanta")) c.pfc.pause_quanta = uint16_t(unsigned_of(f["pause_quanta"], p + ".pause_quanta", 0xffff));
    if (f.contains("priorities")) c.pfc.priorities = uint8_t(unsigned_of(f["priorities"], p + ".priorities", 0xff));
  }
}

Endpoint endpoint_of(const json& v, const std::string& place, const std::map<std::string, uint32_t>& switches,
                     uint32_t hosts) {
  if (!v.is_string()) fail(place, "must be a string (hostN or a switch's name)");
  const std::string name = v.get<std::string>();
  if (auto it = switches.find(name); it != switches.end()) return {false, it->second};
  if (name.rfind("host", 0) == 0) {
    uint32_t n = 0;
    const char* first = name.data() + 4;
    const char* last = name.data() + name.size();
    const auto [end, ec] = std::from_chars(first, last, n);
    if (ec == std::errc() && end == last && first != last) {
      if (n >= hosts) fail(place, "\"" + name + "\": the workload has " + std::to_string(hosts) + " hosts");
      return {true, n};
    }
  }
  fail(place, "\"" + name + "\" is neither hostN nor a switch named in \"switches\"");
}

Topology parse(const json& j, uint32_t hosts) {
  only_keys(j, "topology", {"format", "switch", "ecmp", "link", "leaf_spine", "switches", "links"});
  if (!j.contains("format") || j["format"] != kTopologyFormat)
    fail("topology.format", std::string("must be \"") + kTopologyFormat + "\"");
  double gbps = 100.0, propagation = 100.0;
  if (j.contains("link")) {
    only_keys(j["link"], "topology.link", {"gbps", "propagation_ns"});
    if (j["link"].contains("gbps")) gbps = positive_of(j["link"]["gbps"], "topology.link.gbps");
    if (j["link"].contains("propagation_ns"))
      propagation = non_negative_of(j["link"]["propagation_ns"], "topology.link.propagation_ns");
  }
  if (j.contains("leaf_spine") && (j.contains("switches") || j.contains("links")))
    fail("topology", "give either \"leaf_spine\" or \"switches\" and \"links\", not both");
  Topology t = single_switch(hosts, gbps, propagation);
  if (j.contains("leaf_spine")) {
    const json& ls = j["leaf_spine"];
    const std::string p = "topology.leaf_spine";
    only_keys(ls, p, {"leaves", "spines", "hosts_per_leaf", "uplink_gbps"});
    const uint32_t leaves = count_of(ls, p, "leaves"), spines = count_of(ls, p, "spines");
    const uint32_t per_leaf = count_of(ls, p, "hosts_per_leaf");
    if (uint64_t(leaves) * per_leaf < hosts)
      fail(p, std::to_string(leaves) + " leaves of " + std::to_string(per_leaf) + " hosts hold fewer than the workload's " +
                  std::to_string(hosts) + " hosts");
    const double uplink = ls.contains("uplink_gbps") ? positive_of(ls["uplink_gbps"], p + ".uplink_gbps") : gbps;
    t = leaf_spine(leaves, spines, per_leaf, gbps, uplink, propagation);
    t.hosts = hosts;
    std::erase_if(t.links, [&](const Link& l) { return l.a.is_host && l.a.index >= hosts; });
  } else if (j.contains("switches") || j.contains("links")) {
    if (!j.contains("switches") || !j.contains("links")) fail("topology", "\"switches\" and \"links\" come together");
    if (!j["switches"].is_array()) fail("topology.switches", "must be an array of names");
    std::map<std::string, uint32_t> names;
    t.switch_names.clear();
    t.links.clear();
    for (size_t i = 0; i < j["switches"].size(); ++i) {
      const std::string p = "topology.switches[" + std::to_string(i) + "]";
      const json& n = j["switches"][i];
      if (!n.is_string() || n.get<std::string>().empty() || n.get<std::string>().rfind("host", 0) == 0)
        fail(p, "must be a name not starting with \"host\"");
      if (!names.emplace(n.get<std::string>(), uint32_t(i)).second) fail(p, "a second switch of that name");
      t.switch_names.push_back(n.get<std::string>());
    }
    if (!j["links"].is_array()) fail("topology.links", "must be an array");
    for (size_t i = 0; i < j["links"].size(); ++i) {
      const std::string p = "topology.links[" + std::to_string(i) + "]";
      const json& l = j["links"][i];
      only_keys(l, p, {"a", "b", "gbps", "propagation_ns"});
      if (!l.contains("a") || !l.contains("b")) fail(p, "needs \"a\" and \"b\"");
      Link link{endpoint_of(l["a"], p + ".a", names, hosts), endpoint_of(l["b"], p + ".b", names, hosts), gbps, propagation};
      if (l.contains("gbps")) link.gbps = positive_of(l["gbps"], p + ".gbps");
      if (l.contains("propagation_ns")) link.propagation_ns = non_negative_of(l["propagation_ns"], p + ".propagation_ns");
      if (link.a == link.b) fail(p, "a link from a node to itself");
      t.links.push_back(link);
    }
  }
  if (j.contains("switch")) parse_switch(j["switch"], t.switch_config, "topology.switch");
  if (j.contains("ecmp")) t.ecmp = bool_of(j["ecmp"], "topology.ecmp");
  if (const std::string why = validate(t); !why.empty()) fail("topology", why);
  return t;
}

}  // namespace

std::string Topology::describe() const {
  std::set<double> rates;
  for (const Link& l : links) rates.insert(l.gbps);
  std::string text = std::to_string(hosts) + " hosts, " + std::to_string(switch_names.size()) + " switch" +
                     (switch_names.size() == 1 ? "" : "es") + ", " + std::to_string(links.size()) + " links at ";
  for (double r : rates) {
    char number[32];
    std::snprintf(number, sizeof number, "%s%g", r == *rates.begin() ? "" : "/", r);
    text += number;
  }
  return text + " Gb/s";
}

Topology single_switch(uint32_t hosts, double gbps, double propagation_ns) {
  Topology t{.hosts = hosts, .switch_names = {"switch0"}};
  for (uint32_t h = 0; h < hosts; ++h) t.links.push_back({{true, h}, {false, 0}, gbps, propagation_ns});
  return t;
}

Topology direct(uint32_t hosts, double gbps, double propagation_ns) {
  Topology t{.hosts = hosts};
  for (uint32_t a = 0; a < hosts; ++a)
    for (uint32_t b = a + 1; b < hosts; ++b) t.links.push_back({{true, a}, {true, b}, gbps, propagation_ns});
  return t;
}

Topology leaf_spine(uint32_t leaves, uint32_t spines, uint32_t hosts_per_leaf, double host_gbps, double uplink_gbps,
                    double propagation_ns) {
  Topology t{.hosts = leaves * hosts_per_leaf};
  for (uint32_t l = 0; l < leaves; ++l) t.switch_names.push_back("leaf" + std::to_string(l));
  for (uint32_t s = 0; s < spines; ++s) t.switch_names.push_back("spine" + std::to_string(s));
  for (uint32_t h = 0; h < t.hosts; ++h) t.links.push_back({{true, h}, {false, h / hosts_per_leaf}, host_gbps, propagation_ns});
  for (uint32_t l = 0; l < leaves; ++l)
    for (uint32_t s = 0; s < spines; ++s) t.links.push_back({{false, l}, {false, leaves + s}, uplink_gbps, propagation_ns});
  return t;
}

std::string validate(const Topology& t) {
  const uint32_t nodes = t.hosts + uint32_t(t.switch_names.size());
  const auto id = [&](const Endpoint& e) { return e.is_host ? e.index : t.hosts + e.index; };
  std::vector<std::vector<uint32_t>> next(nodes);
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (const Link& l : t.links) {
    if ((l.a.is_host && l.a.index >= t.hosts) || (l.b.is_host && l.b.index >= t.hosts) ||
        (!l.a.is_host && l.a.index >= t.switch_names.size()) || (!l.b.is_host && l.b.index >= t.switch_names.size()))
      return "a link names a node that does not exist";
    if (!pairs.insert(std::minmax(id(l.a), id(l.b))).second) return "two links between the same two nodes";
    next[id(l.a)].push_back(id(l.b));
    next[id(l.b)].push_back(id(l.a));
  }
  for (uint32_t h = 0; h < t.hosts; ++h) {
    const size_t switch_links = std::count_if(next[h].begin(), next[h].end(), [&](uint32_t n) { return n >= t.hosts; });
    if (next[h].empty()) return "host" + std::to_string(h) + " has no link";
    if (switch_links > 1) return "host" + std::to_string(h) + " has more than one link to switches (one port per host)";
    if (switch_links == 1 && next[h].size() > 1) return "host" + std::to_string(h) + " links to a switch and to hosts";
  }
  // Every host reaches every other one.
  if (t.hosts > 1) {
    std::vector<bool> seen(nodes);
    std::vector<uint32_t> todo{0};
    seen[0] = true;
    while (!todo.empty()) {
      const uint32_t n = todo.back();
      todo.pop_back();
      for (uint32_t m : next[n])
        if (!seen[m]) seen[m] = true, todo.push_back(m);
    }
    for (uint32_t h = 0; h < t.hosts; ++h)
      if (!seen[h]) return "host" + std::to_string(h) + " cannot reach host0";
  }
  const EcnConfig& e = t.switch_config.ecn;
  if (e.enabled && e.kmax_bytes <= e.kmin_bytes) return "ecn.kmax_bytes must be above ecn.kmin_bytes";
  if (e.pmax > 1) return "ecn.pmax must be at most 1";
  const PfcConfig& p = t.switch_config.pfc;
  if (p.enabled && p.xon_bytes >= p.xoff_bytes) return "pfc.xon_bytes must be below pfc.xoff_bytes";
  if (p.enabled && p.pause_quanta == 0) return "pfc.pause_quanta must be at least 1";
  if (t.switch_config.buffer_bytes < 9216) return "switch.buffer_bytes must hold a jumbo frame (9216 bytes)";
  return {};
}

namespace {

struct Parameter {
  const char* name;
  std::function<void(Topology&, const std::string&)> set;
};

uint64_t parse_unsigned(const std::string& v) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) throw Invalid{"\"" + v + "\" is not an unsigned integer"};
  return n;
}
double parse_number(const std::string& v) {
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || !std::isfinite(d) || d < 0) throw Invalid{"\"" + v + "\" is not a number, 0 or more"};
  return d;
}
bool parse_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "on") return true;
  if (v == "false" || v == "0" || v == "off") return false;
  throw Invalid{"\"" + v + "\" is not true or false"};
}

const std::vector<Parameter>& parameters() {
  static const std::vector<Parameter> all = {
      {"switch.buffer_bytes", [](Topology& t, const std::string& v) { t.switch_config.buffer_bytes = parse_unsigned(v); }},
      {"switch.shared_buffer", [](Topology& t, const std::string& v) { t.switch_config.shared_buffer = parse_bool(v); }},
      {"ecn.enabled", [](Topology& t, const std::string& v) { t.switch_config.ecn.enabled = parse_bool(v); }},
      {"ecn.kmin_bytes", [](Topology& t, const std::string& v) { t.switch_config.ecn.kmin_bytes = parse_unsigned(v); }},
      {"ecn.kmax_bytes", [](Topology& t, const std::string& v) { t.switch_config.ecn.kmax_bytes = parse_unsigned(v); }},
      {"ecn.pmax", [](Topology& t, const std::string& v) { t.switch_config.ecn.pmax = parse_number(v); }},
      {"pfc.enabled", [](Topology& t, const std::string& v) { t.switch_config.pfc.enabled = parse_bool(v); }},
      {"pfc.xoff_bytes", [](Topology& t, const std::string& v) { t.switch_config.pfc.xoff_bytes = parse_unsigned(v); }},
      {"pfc.xon_bytes", [](Topology& t, const std::string& v) { t.switch_config.pfc.xon_bytes = parse_unsigned(v); }},
      {"pfc.pause_quanta",
       [](Topology& t, const std::string& v) {
         const uint64_t q = parse_unsigned(v);
         if (q > 0xffff) throw Invalid{"at most 65535"};
         t.switch_config.pfc.pause_quanta = uint16_t(q);
       }},
      {"pfc.priorities",
       [](Topology& t, const std::string& v) {
         const uint64_t p = parse_unsigned(v);
         if (p > 0xff) throw Invalid{"a bit mask of 8 priorities, at most 255"};
         t.switch_config.pfc.priorities = uint8_t(p);
       }},
      {"link.gbps",
       [](Topology& t, const std::string& v) {
         const double g = parse_number(v);
         if (g == 0) throw Invalid{"must be above 0"};
         for (Link& l : t.links) l.gbps = g;
       }},
      {"link.propagation_ns", [](Topology& t, const std::string& v) { for (Link& l : t.links) l.propagation_ns = parse_number(v); }},
      {"ecmp", [](Topology& t, const std::string& v) { t.ecmp = parse_bool(v); }},
  };
  return all;
}

}  // namespace

bool set_parameter(Topology& t, const std::string& key, const std::string& value, std::string* error) {
  for (const Parameter& p : parameters()) {
    if (key != p.name) continue;
    try {
      p.set(t, value);
    } catch (const Invalid& bad) {
      if (error) *error = key + ": " + bad.what;
      return false;
    }
    return true;
  }
  if (error) *error = "unknown topology parameter " + key;
  return false;
}

std::vector<std::string> parameter_names() {
  std::vector<std::string> names;
  for (const Parameter& p : parameters()) names.push_back(p.name);
  return names;
}

std::optional<Topology> parse_topology(std::string_view text, uint32_t hosts, std::string* error) {
  try {
    return parse(json::parse(text), hosts);
  } catch (const Invalid& bad) {
    if (error) *error = bad.what;
  } catch (const json::exception& e) {
    if (error) *error = std::string("not JSON: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace hcaemu::fabric
