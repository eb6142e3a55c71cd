#pragma once
// Where a software-owned steering walk (mlx5 DR, steering/ste_v1.h) ends when it leaves steering
// ICM: the device names its terminals by ICM addresses, which the driver writes into its STEs as
// hit or miss targets. The caps announce the drop and allow ones (flow_table_nic_cap
// sw_steering_nic_rx_action_drop_icm_address...), CREATE_TIR answers a TIR's, QUERY_FLOW_TABLE a
// firmware table's. They lie in [2^39, 2^40): below 2^40 as STE pointers need, 64-byte aligned,
// and outside every steering ICM region (objects/sw_icm.h, all below 2^38 + 2^34).
#include <cstdint>
#include <optional>

#include "model/objects/sw_icm.h"

namespace hcaemu::model::steering {

inline constexpr uint64_t kTerminalBase = uint64_t(1) << 39;
inline constexpr uint64_t kNicRxDrop = kTerminalBase;
inline constexpr uint64_t kNicTxDrop = kTerminalBase + 0x40;
inline constexpr uint64_t kNicTxAllow = kTerminalBase + 0x80;
inline constexpr uint64_t kTirTerminals = kTerminalBase + (uint64_t(1) << 32);
inline constexpr uint64_t kFlowTableTerminals = kTerminalBase + (uint64_t(2) << 32);
inline constexpr uint64_t kSamplerTerminals = kTerminalBase + (uint64_t(3) << 32);
static_assert(kHeaderModifyPatternIcm.start + (uint64_t(1) << kHeaderModifyPatternIcm.log_size) < kTerminalBase);

// 24-bit object numbers, 64 bytes apart.
inline constexpr uint64_t tir_address(uint32_t tirn) { return kTirTerminals + (uint64_t(tirn & 0xffffff) << 6); }
inline constexpr uint64_t flow_table_address(uint32_t table_id) {
  return kFlowTableTerminals + (uint64_t(table_id & 0xffffff) << 6);
}

inline constexpr uint64_t sampler_address(uint32_t sampler) {
  return kSamplerTerminals + (uint64_t(sampler & 0xffffff) << 6);
}

enum class TerminalKind : uint8_t { kDrop, kAllow, kTir, kFlowTable, kSampler };
struct Terminal {
  TerminalKind kind;
  uint32_t id = 0;  // the TIR, flow table or flow sampler
};

// The terminal at `address`, nullopt when it is none (an STE address, or nothing).
std::optional<Terminal> terminal_at(uint64_t address);

}  // namespace hcaemu::model::steering
