#pragma once
// The STE v1 interpreter (ConnectX-6 Dx, steering_format_version 1): how the device walks the
// steering entries mlx5 DR (rdma-core's software steering) writes into steering ICM, for one frame,
// from a software-owned flow table's root to a terminal (steering/terminals.h). docs/mlx5-dr.md
// section 4 has the entry format, lookup types, the hash and the walk; this is that section in code.
//
// An entry is 64 bytes: control (0x00-0x1f: lookup type, counter, miss and hit addresses, the next
// table's lookup type and byte mask, two action slots), then a 16-byte bit mask and a 16-byte tag.
// A frame hits an entry when the entry's lookup type's fields of the frame, under the mask, equal the
// tag. A hit counts, acts and goes to the hit address (a hash table of 2^k entries, indexed by the
// CRC-32 of the next lookup type's fields under the byte mask); a miss goes to the miss address.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "model/objects/sw_icm.h"
#include "model/steering/packet_state.h"
#include "transport/ethernet.h"

namespace hcaemu::model::steering {

inline constexpr uint32_t kSteBytes = 64;
inline constexpr uint32_t kMaxSteHops = 256;  // a longer walk is a loop the driver wrote

// Lookup types (entry format << 8 | definer index) the interpreter builds fields for.
namespace lookup_type {
inline constexpr uint16_t kEthL2Dst = 0x0003, kEthL2Src = 0x0005, kEthL2SrcDst = 0x000b;
inline constexpr uint16_t kTunnelHeader = 0x000e;  // FLEX_PARSER_TNL_HEADER, as DR uses it for Geneve
inline constexpr uint16_t kDontCare = 0x000f, kSteeringRegisters0 = 0x010f;
}

// The 16 bytes lookup type `type` sees of a frame; nullopt for a type the model does not parse.
using DefinerFields = std::array<uint8_t, 16>;
std::optional<DefinerFields> definer_fields(uint16_t type, const PacketState& packet);

// Match definers (MATCH_DEFINER objects, docs/mlx5-dr.md): a definer's 32-byte tag of a frame in
// its format, under its mask. Match-format entries (lookup type 0x04 << 8 | the definer's index)
// compare all 32 bytes, and a table whose next lookup names a definer hashes them all. Format 0
// (dr_ste_v1's def0: reg_c_0/1, MACs, ethertype, L3/L4 type, first VLAN, TCP flags) is the one
// offered; indices 0x40 and up are definers, below them the fixed lookup types.
inline constexpr uint32_t kDefinerTagBytes = 32;
inline constexpr uint8_t kFirstDefinerIndex = 0x40;
using DefinerTag = std::array<uint8_t, kDefinerTagBytes>;
struct MatchDefinerView {
  uint16_t format = 0;
  DefinerTag mask{};
};
// The definer of index `index`, or nullptr.
using Definers = std::function<const MatchDefinerView*(uint8_t index)>;
// Format `format`'s tag of a frame (unmasked); nullopt for a format not offered, or one whose
// mask covers a field the model does not parse.
std::optional<DefinerTag> definer_tag(const MatchDefinerView& definer, const PacketState& packet);

// The hash that places an entry in its table: CRC-32 (reflected 0xEDB88320, initial 0, no final
// XOR) of the 16 bytes (32 for a definer), byte-swapped. Entry index = hash % entries.
uint32_t ste_hash(std::span<const uint8_t> bytes);

struct SteVerdict {
  enum class Outcome : uint8_t { kDrop, kAllow, kTir, kFlowTable, kSampler, kFault };
  Outcome outcome = Outcome::kFault;
  uint32_t id = 0;                    // the TIR, firmware flow table or flow sampler
  std::optional<uint32_t> flow_tag;   // the last FLOW_TAG action taken
  std::vector<uint32_t> counters;     // flow counters of the entries hit, in order
  // The frame as the entries' actions left it (VLAN push/pop), when they rewrote it.
  bool rewritten = false;
  std::vector<uint8_t> frame;
  uint32_t hops = 0;
  const char* fault = "";             // why, with kFault (the frame is then dropped)
  uint16_t fault_lookup_type = 0;     // the lookup type of the entry (or hash) at fault
  uint64_t fault_address = 0;         // the entry's ICM address
  std::array<uint8_t, 64> fault_entry{};  // and its bytes, for the log
};

// The data of the function's packet reformat context `id` (ALLOC_PACKET_REFORMAT_CONTEXT), which an
// INSERT_POINTER action names; empty when there is none.
using ReformatData = std::function<std::span<const uint8_t>(uint32_t id)>;

// Walks steering ICM from `root` (a table's start anchor: one entry) for `frame`.
SteVerdict walk_ste_v1(const SwIcm& icm, uint64_t root, std::span<const uint8_t> frame,
                       const ReformatData& reformats = {}, const Definers& definers = {});

}  // namespace hcaemu::model::steering
