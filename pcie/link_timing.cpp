#include "pcie/link_timing.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace hcaemu::pcie {

namespace {

constexpr double kGtPerLane[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0};

// Recommended ACK latency limit and UpdateFC interval, in symbol times, for a 2.5 GT/s link
// (PCIe Base spec "Ack Transmission Latency Limit" / "UpdateFC Transmission Latency Guidelines"
// tables); rows x1..x32, columns MPS 128..4096. Faster generations add a fixed internal delay
// (gen2 +51, gen3 and later +96 symbol times). The model uses one table for both DLLP kinds.
constexpr uint16_t kAckLimitGen1[6][6] = {
    {237, 416, 559, 1071, 2095, 4143},  // x1
    {128, 217, 289, 545, 1057, 2081},   // x2
    {73, 118, 154, 282, 538, 1050},     // x4
    {67, 107, 86, 150, 278, 534},       // x8
    {48, 72, 86, 150, 278, 534},        // x16
    {33, 45, 52, 84, 148, 276},         // x32
};
constexpr uint16_t kGenExtraDelay[] = {0, 0, 51, 96, 96, 96};

bool pow2_in(unsigned v, unsigned lo, unsigned hi) { return std::has_single_bit(v) && v >= lo && v <= hi; }
uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

LinkTiming::LinkTiming(const LinkConfig& c) : cfg_(c) {
  if (c.gen < 1 || c.gen > 5) throw std::invalid_argument("PCIe gen must be 1..5");
  if (!pow2_in(c.width, 1, 32)) throw std::invalid_argument("PCIe width must be 1, 2, 4, 8, 16 or 32");
  if (!pow2_in(c.mps, 128, 4096) || !pow2_in(c.mrrs, 128, 4096)) throw std::invalid_argument("MPS/MRRS 128..4096");
  if (!pow2_in(c.rcb, 64, 512)) throw std::invalid_argument("RCB must be 64..512");
  if (c.one_way_latency_ns < 0) throw std::invalid_argument("latency must be >= 0");
  const double encoding = c.gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
  raw_gbps_ = kGtPerLane[c.gen] * encoding * c.width;
  if (c.dllp_overhead >= 0) {
    dllp_overhead_ = c.dllp_overhead;
  } else {
    const unsigned row = unsigned(std::countr_zero(unsigned(c.width)));
    const unsigned col = unsigned(std::countr_zero(unsigned(c.mps))) - 7;
    const double interval = kAckLimitGen1[row][col] + kGenExtraDelay[c.gen];
    // One ACK and one UpdateFC per interval, plus one SKP ordered set per 1538 symbols.
    dllp_overhead_ = 2.0 * kDllpSize / interval + double(kSkpLength) / kSkpInterval;
  }
  if (dllp_overhead_ >= 1.0) throw std::invalid_argument("DLLP overhead must be < 1");
  tlp_gbps_ = raw_gbps_ * (1.0 - dllp_overhead_);
}

unsigned LinkTiming::mwr_overhead() const {
  return kTlpFraming + kTlpCommonHdr + (cfg_.addr64 ? 12 : 8) + (cfg_.ecrc ? 4 : 0);
}
unsigned LinkTiming::mrd_overhead() const { return mwr_overhead(); }
unsigned LinkTiming::cpld_overhead() const { return kTlpFraming + kTlpCommonHdr + 8 + (cfg_.ecrc ? 4 : 0); }

uint64_t LinkTiming::write_wire_bytes(uint64_t bytes) const {
  return bytes + std::max<uint64_t>(1, div_up(bytes, cfg_.mps)) * mwr_overhead();
}
uint64_t LinkTiming::read_request_wire_bytes(uint64_t bytes) const {
  return std::max<uint64_t>(1, div_up(bytes, cfg_.mrrs)) * mrd_overhead();
}
uint64_t LinkTiming::completion_wire_bytes(uint64_t bytes) const {
  const unsigned chunk = cfg_.completions_in_rcb ? cfg_.rcb : cfg_.mps;
  return bytes + std::max<uint64_t>(1, div_up(bytes, chunk)) * cpld_overhead();
}

Nanos LinkTiming::serialize(uint64_t wire_bytes) const { return Nanos(double(wire_bytes) * 8.0 / tlp_gbps_); }

Nanos LinkTiming::mmio_read_latency(uint32_t bytes) const {
  return Nanos(2 * cfg_.one_way_latency_ns) + serialize(mrd_overhead()) + serialize(completion_wire_bytes(bytes));
}

Nanos LinkTiming::mmio_write_latency(uint32_t bytes) const {
  return Nanos(cfg_.one_way_latency_ns) + serialize(write_wire_bytes(bytes));
}

Nanos LinkTiming::dma_write_time(uint64_t bytes) const {
  return Nanos(cfg_.one_way_latency_ns) + serialize(write_wire_bytes(bytes));
}

Nanos LinkTiming::dma_write_occupancy(uint64_t bytes) const { return serialize(write_wire_bytes(bytes)); }

// Requests go up while completions come down on the other direction of the full-duplex link, so
// after the first request is out and the round trip has passed, the completions are the bottleneck.
Nanos LinkTiming::dma_read_time(uint64_t bytes) const {
  const uint64_t first_req = std::min<uint64_t>(bytes, cfg_.mrrs);
  return serialize(read_request_wire_bytes(first_req)) + Nanos(2 * cfg_.one_way_latency_ns) +
         serialize(completion_wire_bytes(bytes));
}

Nanos LinkTiming::config_access_latency() const {
  // CfgRd/CfgWr carry a 3 DW header; the completion carries at most one dword.
  const unsigned cfg_req = kTlpFraming + kTlpCommonHdr + 8 + 4;
  return Nanos(2 * cfg_.one_way_latency_ns) + serialize(cfg_req) + serialize(cpld_overhead() + 4);
}

double LinkTiming::effective_write_gbps() const {
  return tlp_gbps_ * double(cfg_.mps) / double(cfg_.mps + mwr_overhead());
}

double LinkTiming::effective_read_gbps() const {
  const unsigned chunk = cfg_.completions_in_rcb ? cfg_.rcb : cfg_.mps;
  return tlp_gbps_ * double(chunk) / double(chunk + cpld_overhead());
}

}  // namespace hcaemu::pcie
