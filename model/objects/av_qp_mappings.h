#pragma once
// Address-to-QP mappings (libmlx5's mlx5dv_map_ah_to_qp, general objects of type AV_QP_MAPPING):
// a hint that datagram traffic (DCI, UD) to one address should take the congestion control the
// named QP negotiated through ECE. The model has one congestion control algorithm (DCQCN, per
// sending QP: congestion/), so a mapping selects nothing on the data path; it is validated, kept,
// reported by QUERY_GENERAL_OBJECT and destroyed as a ConnectX keeps the hint.
#include <array>
#include <cstdint>

#include "model/objects/object_table.h"

namespace hcaemu::model {

struct AvQpMapping {
  uint32_t qpn = 0;                // the QP (or DCT) whose congestion control the address takes
  uint8_t sl_or_eth_prio = 0;      // remote_address_vector
  uint8_t src_addr_index = 0;      // the sender's GID index
  std::array<uint8_t, 16> rgid{};  // the remote GID (an IPv4 address mapped into IPv6 for RoCEv2/IPv4)
};

// IDs from 1; at most 2^16 mappings a function (one per address handle a process maps).
using AvQpMappings = ObjectTable<AvQpMapping>;
inline constexpr uint32_t kLogMaxAvQpMappings = 16;

}  // namespace hcaemu::model
