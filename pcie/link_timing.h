#pragma once
// A PCIe link cost model after the pcie-bench model (Neugebauer et al., SIGCOMM 2018) that
// calibration.md derives its figures from: per-lane rate and encoding, ACK and FC-update DLLPs
// at the rates the base spec recommends, SKP ordered sets, and per-TLP framing + header bytes.
// Pure arithmetic, no SystemC: PcieLink (pcie_link.h) turns it into TLM delays.
#include <chrono>
#include <cstdint>

namespace hcaemu::pcie {

using Nanos = std::chrono::duration<double, std::nano>;

struct LinkConfig {
  uint8_t gen = 3;                  // 1..5 = 2.5/5/8/16/32 GT/s
  uint8_t width = 16;               // 1, 2, 4, 8, 16, 32 lanes
  uint16_t mps = 256;               // Max_Payload_Size, bytes (128..4096)
  uint16_t mrrs = 512;              // Max_Read_Request_Size, bytes (128..4096)
  uint16_t rcb = 64;                // Read Completion Boundary: 64 or 128 (root port; up to 512 in the model)
  bool completions_in_rcb = false;  // true: completers split at every RCB; false: at MPS
  bool addr64 = true;               // 64-bit addresses (4 DW headers)
  bool ecrc = false;                // 4 B TLP digest
  double one_way_latency_ns = 500;  // fixed per-direction latency; SimBricks' default
  double dllp_overhead = -1;        // fraction of raw bandwidth lost to ACK/FC/SKP; < 0 = derive
};

class LinkTiming {
 public:
  // Per-TLP byte costs (pcie-bench model): 2 B framing + 6 B seq/LCRC around every TLP ("DLLP
  // header"), 4 B common TLP header, plus the request-specific header words.
  static constexpr unsigned kTlpFraming = 8;
  static constexpr unsigned kTlpCommonHdr = 4;
  static constexpr unsigned kDllpSize = 8;  // one ACK or UpdateFC DLLP on the wire
  static constexpr unsigned kSkpInterval = 1538, kSkpLength = 4;

  explicit LinkTiming(const LinkConfig& cfg = {});  // throws std::invalid_argument

  const LinkConfig& config() const { return cfg_; }
  double raw_gbps() const { return raw_gbps_; }  // after 8b/10b or 128b/130b encoding, all lanes
  double tlp_gbps() const { return tlp_gbps_; }  // left for TLPs after ACK/FC DLLPs and SKPs
  double dllp_overhead() const { return dllp_overhead_; }

  // Wire bytes of each TLP kind (header + framing, no payload).
  unsigned mwr_overhead() const;  // memory write: 24 B with 64-bit addresses
  unsigned mrd_overhead() const;  // memory read request, same header size
  unsigned cpld_overhead() const; // completion with data: 20 B
  uint64_t write_wire_bytes(uint64_t bytes) const;       // MWr TLPs split at MPS
  uint64_t read_request_wire_bytes(uint64_t bytes) const;  // MRd TLPs split at MRRS
  uint64_t completion_wire_bytes(uint64_t bytes) const;  // CplD TLPs split at MPS or RCB

  Nanos serialize(uint64_t wire_bytes) const;  // time on the wire at tlp_gbps()

  // Host CPU -> device register access: a read is non-posted (request down, completion up).
  Nanos mmio_read_latency(uint32_t bytes) const;
  Nanos mmio_write_latency(uint32_t bytes) const;  // posted: one way
  // Device -> host memory: until the last byte has landed (write) or arrived back (read).
  Nanos dma_write_time(uint64_t bytes) const;
  // How long a posted DMA write keeps the device's DMA engine busy: its TLPs' time on the link. The
  // engine goes on without waiting for them to land (PCIe keeps posted writes in order).
  Nanos dma_write_occupancy(uint64_t bytes) const;
  Nanos dma_read_time(uint64_t bytes) const;
  Nanos config_access_latency() const;  // CfgRd/CfgWr round trip (both are non-posted)

  // Steady-state payload bandwidth for long transfers, Gb/s.
  double effective_write_gbps() const;
  double effective_read_gbps() const;

 private:
  LinkConfig cfg_;
  double raw_gbps_ = 0, tlp_gbps_ = 0, dllp_overhead_ = 0;
};

}  // namespace hcaemu::pcie
