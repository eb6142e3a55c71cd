#pragma once
// What one emulated HCA looks like: identity, firmware version, BAR sizes, vectors, VF limits and
// the PCIe link. Defaults are a ConnectX-6 Dx on a PCIe Gen4 x16 link; a JSON file overrides any
// of them (hcaemu --config). Unknown keys and out-of-range values are errors, not surprises.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "sriov/port_scheduler.h"

#include "model/firmware/init_segment.h"
#include "model/objects/object_quotas.h"

namespace hcaemu::sriov {

struct FunctionShape {
  uint64_t bar0_size = 0;     // HCA registers + UAR pages
  uint32_t msix_vectors = 0;  // MSI-X table size
  // hcaemu's memory for the function's translation tables (MKEY MTTs and queue page lists), in
  // entries (8 bytes each): a command past it fails with the exceeded-limit status, so no guest
  // takes the memory of all.
  uint64_t translation_entries = uint64_t(1) << 24;
  // Objects the function may hold (log_max_qp, _cq, _mkey, _srq; its caps say the same).
  model::ObjectQuotas quotas{};
};

// What the host admin sets per VF (the role of `ip link set PF vf N ...`).
struct VfSettings {
  bool spoofchk = true;  // drop the VF's frames whose source MAC is not its own
  // A trusted VF's allmulti/promiscuous mode reaches the switch (it receives every group frame);
  // an untrusted VF gets only the groups it subscribed to, whatever mode its driver asks for.
  bool trust = false;
  // Transmit rates in Mb/s (`ip link set PF vf N max_tx_rate/min_tx_rate`), 0 for none: the port's
  // transmit scheduler caps the VF at its maximum and shares the port by the minimums (weights).
  uint32_t max_tx_rate_mbps = 0, min_tx_rate_mbps = 0;
};

// The physical port's link, as hcaemu's --uplink, --uplink-faults and --uplink-pcap give it (the
// command line wins over the file). The texts are checked when hcaemu opens the link.
struct UplinkConfig {
  std::string endpoint;  // empty: no uplink
  std::string faults;
  std::string pcap;
};

// The second physical port (physical_ports 2). A dual-port ConnectX-6 Dx shows each port as a PF of
// its own (PCI functions 0 and 1 of one card: same device IDs, firmware and serial number), each
// with its own VFs, embedded switch, traffic classes and uplink. What is not given here is port 0's
// (shape, firmware, total_vfs); per-VF settings and traffic classes start from the defaults.
struct SecondPortConfig {
  std::optional<std::array<uint8_t, 6>> mac_base;  // default: port 0's mac_base + 0x8000
  std::map<uint16_t, VfSettings> vfs;
  PortTcConfig port_tc;
  UplinkConfig uplink;
};

struct DeviceConfig {
  // The port's traffic classes (mlnx_qos --trust/--prio_tc/--tsa/--tcbw); one class by default.
  PortTcConfig port_tc;
  std::string preset = "connectx-6dx";
  uint16_t vendor_id = 0x15b3;
  uint16_t pf_device_id = 0x101d;
  uint16_t vf_device_id = 0x101e;
  uint16_t subsystem_vendor_id = 0x15b3;
  uint16_t subsystem_id = 0x0016;
  uint8_t revision = 0;
  model::FirmwareVersion firmware{22, 35, 1012};
  FunctionShape pf{32ull << 20, 64, uint64_t(1) << 24};  // 128 MiB of translation tables
  FunctionShape vf{2ull << 20, 16, uint64_t(1) << 22};   // 32 MiB
  uint16_t total_vfs = 8;
  uint8_t link_generation = 4;  // 1..5
  uint8_t link_width = 16;      // 1, 2, 4, 8, 16, 32
  double link_one_way_ns = 500;  // fixed latency of one PCIe traversal; hcaemu sets it from the timing preset
  uint64_t serial_number = 0x0c42a10300e1d0c0ull;
  // MAC of the PF; VF n gets base + 1 + n (the way an admin's `ip link set pf vf N mac` would set
  // them). Locally administered by default, so it never clashes with a real adapter.
  std::array<uint8_t, 6> mac_base{0x02, 0xc9, 0x00, 0x00, 0x00, 0x00};

  // Per-VF settings by VF number; VFs not listed keep VfSettings' defaults.
  std::map<uint16_t, VfSettings> vfs;
  UplinkConfig uplink;

  // mlx5 DR software steering in every function (model/steering/): the caps offer it, SW ICM and
  // software-owned tables are served (docs/mlx5-dr.md; flow meters are missing).
  bool software_steering = true;

  uint8_t physical_ports = 1;  // 1 or 2
  SecondPortConfig port1;      // used when physical_ports is 2
  // Which physical port this configuration describes: 0, or 1 in what port_config(1) returns.
  uint8_t port = 0;

  // The configuration of physical port `index` (< physical_ports): port 0 is this one, port 1 this
  // one with port1's settings in place of port 0's.
  DeviceConfig port_config(uint8_t index) const;

  std::array<uint8_t, 6> function_mac(uint16_t vhca_id) const;
  // How logs, sockets and hcactl name a function: "pf", "vf3" on port 0; "pf1", "pf1-vf3" on port 1.
  std::string function_name(uint16_t vhca_id) const;
  VfSettings vf_settings(uint16_t vf) const;

  // Throws std::runtime_error naming the offending key when the combination is invalid.
  void validate() const;
};

// Reads a JSON file; keys not given keep their defaults. Throws std::runtime_error with the file
// name and the reason on any error.
DeviceConfig load_device_config(const std::filesystem::path& file);

// The port's traffic classes from the JSON text of a "port_qos" object, over `base` (keys not given
// keep its values); throws std::runtime_error naming what is wrong (hcactl port qos).
PortTcConfig parse_port_qos(const std::string& json_text, const PortTcConfig& base);
std::string port_qos_json(const PortTcConfig& tc);

// The JSON text of a configuration (what `hcaemu --print-config` shows).
std::string to_json(const DeviceConfig& config);

}  // namespace hcaemu::sriov
