#pragma once
// Modify-header contexts as the firmware takes them (ALLOC_MODIFY_HEADER_CONTEXT): PRM set and copy
// actions of 8 bytes each, decoded once when the context is allocated and applied to a frame by a
// firmware flow entry's MOD_HDR action on NIC RX and TX (eth/queues.cpp). Software-owned tables
// carry their own action lists in header-modify ICM (ste_v1.cpp); both act through PacketState.
// The fields offered are the outer MAC addresses and the ethertype: what frame::match_key can
// match again downstream. Other fields and ADD actions are refused when the context is allocated.
#include <cstdint>
#include <span>
#include <vector>

#include "model/steering/packet_state.h"

namespace hcaemu::model::steering {

inline constexpr uint32_t kModifyActionSize = 8;
inline constexpr uint32_t kMaxModifyHeaderActions = 32;  // flow_table_prop_layout.max_modify_header_actions

// One action in PacketState's terms: a modify-header field dword (dr_ste_v1's MDFY_FLD numbers),
// the bit it starts at and how many bits.
struct ModifyAction {
  enum class Kind : uint8_t { kSet, kCopy };
  Kind kind = Kind::kSet;
  uint8_t field = 0, shift = 0, length = 0;
  uint8_t from_field = 0, from_shift = 0;  // kCopy
  uint32_t value = 0;                      // kSet: the low `length` bits
};

// Decodes `count` PRM actions from `bytes` into `out`; nullptr, or why they cannot be taken.
const char* decode_modify_actions(std::span<const uint8_t> bytes, uint32_t count, std::vector<ModifyAction>& out);
// Applies them in order; nullptr, or why one could not act (the frame is then dropped).
const char* apply_modify_actions(PacketState& state, std::span<const ModifyAction> actions);

}  // namespace hcaemu::model::steering
