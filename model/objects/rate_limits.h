#pragma once
// Packet pacing: the function's table of transmit rates (SET_PP_RATE_LIMIT). mlx5_core hands out
// the indices (its rl_table: ethtool's tx maxrate, a raw packet QP's rate limit, a DevX process's
// mlx5dv_pp_alloc) and sets each entry here; an Ethernet SQ whose context names an entry
// (sqc.packet_pacing_rate_limit_index) sends no faster than its rate. Entry 0 means "no limit".
#include <array>
#include <cstdint>

namespace hcaemu::model {

struct RateLimitEntry {
  uint32_t rate_kbps = 0;  // 0: the entry is not set
  uint32_t burst_bytes = 0;
  uint16_t typical_packet_size = 0;
  uint16_t owner = 0;  // the uid that set it: 0 the kernel, kSharedResourceUid, or a user context
};

class RateLimitTable {
 public:
  static constexpr uint32_t kSize = 128;  // qos_cap.packet_pacing_rate_table_size (entry 0 included)
  // qos_cap.packet_pacing_min_rate / max_rate, in kb/s: any rate up to the port's 100 Gb/s.
  static constexpr uint32_t kMinRateKbps = 1;
  static constexpr uint32_t kMaxRateKbps = 100'000'000;

  static bool valid_index(uint32_t index) { return index != 0 && index < kSize; }
  // The entry at `index` when it is set; null for 0 (no limit), an index past the table or an
  // entry not set.
  const RateLimitEntry* find(uint32_t index) const {
    return valid_index(index) && entries_[index].rate_kbps != 0 ? &entries_[index] : nullptr;
  }
  RateLimitEntry& at(uint32_t index) { return entries_[index]; }
  void clear() { entries_.fill({}); }

 private:
  std::array<RateLimitEntry, kSize> entries_{};
};

}  // namespace hcaemu::model
