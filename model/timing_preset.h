#pragma once
// Named timing presets of the HCA model: pipeline cycles per stage, firmware command latency,
// port rate, propagation to the peer and the PCIe link it sits on. Pure C++ (no SystemC), so the
// model, benchmarks and tests share one source of numbers. The built-in presets and the file
// config/timing-presets.json carry the same values (a unit test keeps them equal); the file also
// says where each value comes from. docs/timing.md explains the calibration.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pcie/link_timing.h"

namespace hcaemu::model {

struct TimingPreset {
  std::string name = "connectx6dx-100g";
  std::string description = "ConnectX-6 Dx class: 100 GbE RoCEv2 port on PCIe Gen4 x16";
  double hca_clock_mhz = 1000.0;  // pipeline clock
  // HCA pipeline cost per stage, in clock cycles (latency through the stage, not its occupancy).
  uint32_t doorbell_cycles = 10;       // doorbell write decoded -> WQE fetch issued
  uint32_t wqe_fetch_cycles = 40;      // parse and check the WQE after its DMA read
  uint32_t per_packet_tx_cycles = 60;  // build one packet (headers, ICRC) once its payload is in
  uint32_t per_packet_rx_cycles = 60;  // check one packet (ICRC, PSN, rkey) before its payload DMA
  uint32_t cqe_cycles = 20;            // build a CQE before its DMA write
  uint32_t eqe_cycles = 20;            // build an EQE before its DMA write and MSI-X
  double command_latency_us = 2.0;     // firmware, per command
  double link_gbps = 100.0;            // port rate
  double propagation_ns = 100.0;       // cable + one switch hop, one way
  // The PCIe link (informational here: pcie/ models it; link_config() hands these over).
  uint32_t pcie_gen = 4;
  uint32_t pcie_width = 16;
  double pcie_one_way_ns = 250.0;  // fixed latency of one traversal (pcie::LinkConfig::one_way_latency_ns)

  // Ethernet overhead around a frame on the wire: preamble 7 + SFD 1 + FCS 4 + inter-frame gap 12.
  static constexpr uint32_t kWireOverheadBytes = 24;

  double cycles_ns(uint32_t cycles) const { return double(cycles) * 1000.0 / hca_clock_mhz; }
  // Serialisation of a frame of frame_bytes (destination MAC to the end of the payload/ICRC,
  // without FCS) at the port rate, with the overhead above.
  double wire_ns(uint32_t frame_bytes) const { return double(frame_bytes + kWireOverheadBytes) * 8.0 / link_gbps; }
  // The PCIe link this preset assumes (MPS, MRRS and the rest at pcie::LinkConfig's defaults).
  pcie::LinkConfig link_config() const {
    pcie::LinkConfig c;
    c.gen = uint8_t(pcie_gen);
    c.width = uint8_t(pcie_width);
    c.one_way_latency_ns = pcie_one_way_ns;
    return c;
  }

  bool operator==(const TimingPreset&) const = default;
};

// Empty if the preset is usable, else the first problem, naming the key.
std::string validate_timing_preset(const TimingPreset& preset);

// Sets one value by its key (hcareplay run --set preset.KEY=V): false with `error` for an unknown
// key, a value that is not a number or one out of the key's range.
bool set_timing_parameter(TimingPreset& preset, const std::string& key, const std::string& value, std::string* error);
std::vector<std::string> timing_parameter_names();

// "connectx6dx-100g" (the default, TimingPreset{}) and "connectx5-100g".
std::optional<TimingPreset> builtin_timing_preset(std::string_view name);
std::vector<TimingPreset> builtin_timing_presets();

// Reads a presets file: {"presets": [{"name": ..., <keys of TimingPreset>, "sources": {...}}, ...]}.
// A preset gives every value, or names a "base" (a built-in preset or one earlier in the file)
// whose values it starts from. Unknown keys, wrong types, out-of-range values and duplicate
// names are errors: an empty vector and "FILE: preset NAME: reason" in *error.
std::vector<TimingPreset> load_timing_presets(const std::string& json_path, std::string* error);

}  // namespace hcaemu::model
