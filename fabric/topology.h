#pragma once
// The network hcareplay runs its hosts on (docs/replay.md, "Topology"): switches, full-duplex
// links with their rate and propagation delay, and what every switch does with its buffer (shared
// or per port), ECN marking (RED: kmin, kmax, pmax on the egress queue) and PFC (pause and resume
// thresholds on the bytes an ingress port holds, per priority). Hosts are host0..hostN-1, the
// workload's hosts in order. Built from a JSON file (format hcareplay-topology/1), from a leaf-spine
// description, or by default: every host on one 100 Gb/s switch. Parsing is strict: an unknown
// key, a wrong type or a dangling link is an error naming its place.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hcaemu::fabric {

inline constexpr const char* kTopologyFormat = "hcareplay-topology/1";

struct EcnConfig {
  bool enabled = true;
  // DCQCN paper (Zhu et al., SIGCOMM 2015, section 6): Kmin 5 KB, Kmax 200 KB, Pmax 1%.
  uint64_t kmin_bytes = 5 * 1000;
  uint64_t kmax_bytes = 200 * 1000;
  double pmax = 0.01;
};

struct PfcConfig {
  bool enabled = true;  // lossless: pause rather than drop
  // Pause an ingress port's upstream when the bytes that came in through it and still wait in the
  // switch pass xoff, resume below xon (per priority). Above Kmax so ECN acts first.
  uint64_t xoff_bytes = 500 * 1000;
  uint64_t xon_bytes = 480 * 1000;
  uint16_t pause_quanta = 0xffff;  // in a pause frame: 512 bit times each
  uint8_t priorities = 0xff;       // the priorities PFC covers (bit per priority)
};

struct SwitchConfig {
  // Trident2 class (the DCQCN paper's Arista 7050QX-32): 12 MB shared among its ports.
  uint64_t buffer_bytes = 12 * 1000 * 1000;
  bool shared_buffer = true;  // false: every egress port has buffer_bytes of its own
  EcnConfig ecn;
  PfcConfig pfc;
};

struct Endpoint {
  bool is_host = true;
  uint32_t index = 0;  // host number or switch number
  bool operator==(const Endpoint&) const = default;
};

struct Link {
  Endpoint a, b;
  double gbps = 100.0;
  double propagation_ns = 100.0;
};

struct Topology {
  uint32_t hosts = 0;
  std::vector<std::string> switch_names;  // one per switch
  SwitchConfig switch_config;             // every switch alike
  std::vector<Link> links;
  bool ecmp = true;                        // spread over equal-cost paths by the UDP source port
  std::string describe() const;            // "2 hosts, 1 switch, 2 links at 100 Gb/s"
};

// Every host on one switch, each by a link of `gbps` and `propagation_ns`.
Topology single_switch(uint32_t hosts, double gbps, double propagation_ns);
// Hosts straight to each other (a link per pair), no switch: the old --no-switch.
Topology direct(uint32_t hosts, double gbps, double propagation_ns);
// `leaves` leaf switches with hosts_per_leaf hosts each (host h on leaf h / hosts_per_leaf), every
// leaf linked to each of `spines` spine switches at uplink_gbps.
Topology leaf_spine(uint32_t leaves, uint32_t spines, uint32_t hosts_per_leaf, double host_gbps, double uplink_gbps,
                    double propagation_ns);

// Reads a topology file for a workload of `hosts` hosts; null with `error` naming the place.
std::optional<Topology> parse_topology(std::string_view text, uint32_t hosts, std::string* error);
// Empty when usable, else the first problem (a host without a link, a switch no host reaches...).
std::string validate(const Topology& topology);

// Sets one parameter by its dotted name (hcareplay run --set): switch.buffer_bytes,
// switch.shared_buffer, ecn.enabled, ecn.kmin_bytes, ecn.kmax_bytes, ecn.pmax, pfc.enabled,
// pfc.xoff_bytes, pfc.xon_bytes, pfc.pause_quanta, pfc.priorities, link.gbps and
// link.propagation_ns (every link), ecmp. False with `error` for an unknown key or a bad value.
bool set_parameter(Topology& topology, const std::string& key, const std::string& value, std::string* error);
std::vector<std::string> parameter_names();

}  // namespace hcaemu::fabric
