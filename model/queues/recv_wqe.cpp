// Receive WQE parsing (mlx5-device-bringup.md section 7.4).
#include "model/queues/recv_wqe.h"

#include "common/endian.h"

namespace hcaemu::model {
namespace {

using namespace wqe_format;

constexpr uint32_t kDataByteCount = 0, kDataLkey = 4, kDataAddr = 8;  // mlx5_wqe_data_seg
constexpr uint32_t kNextSegment = 16;                                 // mlx5_wqe_srq_next_seg
constexpr uint32_t kNextWqeIndex = 2;

// Data segments up to the terminator or the end of `list` (a multiple of 16, possibly empty).
WqeError parse_data_list(std::span<const uint8_t> list, std::vector<Sge>& out) {
  out.clear();
  if (list.size() % kSegment != 0) return WqeError::kBadDs;
  for (size_t at = 0; at < list.size(); at += kSegment) {
    const uint8_t* p = &list[at];
    const uint32_t byte_count = load_be32(p + kDataByteCount);
    const uint32_t lkey = load_be32(p + kDataLkey);
    if (lkey == kInvalidLkey) break;
    if (byte_count & kInlineFlag) return WqeError::kBadInline;
    out.push_back({load_be64(p + kDataAddr), lkey, byte_count == 0 ? kZeroByteCountLength : byte_count});
  }
  return WqeError::kNone;
}

}  // namespace

WqeError parse_recv_wqe(std::span<const uint8_t> bytes, std::vector<Sge>& out) {
  if (bytes.empty()) {
    out.clear();
    return WqeError::kBadDs;
  }
  return parse_data_list(bytes, out);
}

WqeError parse_srq_wqe(std::span<const uint8_t> bytes, uint16_t& next_wqe_index, std::vector<Sge>& out) {
  if (bytes.size() < kNextSegment) {
    out.clear();
    return WqeError::kBadDs;
  }
  next_wqe_index = load_be16(&bytes[kNextWqeIndex]);
  return parse_data_list(bytes.subspan(kNextSegment), out);
}

}  // namespace hcaemu::model
