#pragma once
// Receive WQEs (mlx5-device-bringup.md section 7.4). An RQ WQE is one stride (16 << log_rq_stride
// bytes) of data segments; a list shorter than the stride ends with a data segment whose lkey is
// MLX5_INVALID_LKEY (0x100). An SRQ/RMP WQE starts with a 16-byte next segment (the linked-list
// index of the next WQE, BE16 at byte 2), then the same data segments.
//
// A data segment with byte_count 0 (not the terminator) means 2 GiB, as in send WQEs: libmlx5
// leaves zero-length SGEs out, so only a hostile or broken guest writes one. Inline segments do
// not exist in receive WQEs (kBadInline). The WQE signature segment (qpc.wq_signature) is not
// supported: the caps keep it off.
#include <cstdint>
#include <span>
#include <vector>

#include "model/queues/send_wqe.h"

namespace hcaemu::model {

// `bytes` = one whole stride (a non-zero multiple of 16). `out` is replaced.
WqeError parse_recv_wqe(std::span<const uint8_t> bytes, std::vector<Sge>& out);

// `bytes` = one whole SRQ stride (at least the 16-byte next segment; a multiple of 16). `out` is replaced.
WqeError parse_srq_wqe(std::span<const uint8_t> bytes, uint16_t& next_wqe_index, std::vector<Sge>& out);

}  // namespace hcaemu::model
