#pragma once
// A queue counter set (ALLOC_Q_COUNTER): what the RDMA data path counts for the QPs bound to it
// (qpc.counter_set_id, set by mlx5_ib at RST2INIT), kept as QUERY_Q_COUNTER returns it: 32-bit
// counters that wrap, at their query_q_counter_out byte offsets. mlx5_ib shows them in
// /sys/class/infiniband/<dev>/ports/<n>/hw_counters and `rdma statistic`.
#include <array>
#include <cstdint>
#include <map>

namespace hcaemu::model {

namespace q_counter {
inline constexpr uint32_t kRxWriteRequests = 0x10, kRxReadRequests = 0x18, kRxAtomicRequests = 0x20;
inline constexpr uint32_t kOutOfBuffer = 0x30;  // a request or datagram found no receive WQE
inline constexpr uint32_t kOutOfSequence = 0x38, kDuplicateRequest = 0x40;
inline constexpr uint32_t kRnrNakRetryErr = 0x48, kPacketSeqErr = 0x50, kImpliedNakSeqErr = 0x58,
                          kLocalAckTimeoutErr = 0x60;
inline constexpr uint32_t kReqRnrRetriesExceeded = 0x70;
inline constexpr uint32_t kRespLocalLengthError = 0x78, kReqLocalLengthError = 0x7c, kRespLocalQpError = 0x80,
                          kLocalOperationError = 0x84, kRespLocalProtection = 0x88, kReqLocalProtection = 0x8c;
inline constexpr uint32_t kRespCqeError = 0x90, kReqCqeError = 0x94, kReqBadResponse = 0x9c;
inline constexpr uint32_t kReqRemoteInvalidRequest = 0xa0, kRespRemoteInvalidRequest = 0xa4,
                          kReqRemoteAccessErrors = 0xa8, kRespRemoteAccessErrors = 0xac,
                          kReqRemoteOperationErrors = 0xb0, kReqTransportRetriesExceeded = 0xb4;
inline constexpr uint32_t kRespCqeFlushError = 0xbc, kReqCqeFlushError = 0xc0;
inline constexpr uint32_t kOutSize = 0x100;  // query_q_counter_out
}  // namespace q_counter

// How many sets a function may allocate (cap max_qp_cnt): mlx5e takes two, mlx5_ib one per port.
inline constexpr uint32_t kMaxQueueCounterSets = 64;

struct QueueCounterSet {
  std::array<uint32_t, q_counter::kOutSize / 4> words{};
  void bump(uint32_t offset) { ++words[offset / 4]; }
  uint32_t at(uint32_t offset) const { return words[offset / 4]; }
};

// A function's sets by their ID (ALLOC_Q_COUNTER hands out 1..kMaxQueueCounterSets).
using QueueCounterSets = std::map<uint32_t, QueueCounterSet>;

// Whether a QP or RQ context may name set `id`: none (0), or one the function has.
inline bool counter_set_known(const QueueCounterSets& sets, uint32_t id) { return id == 0 || sets.count(id) != 0; }

// One more at `offset` in set `id` of a QP or RQ context, when it names one the function has (0: none).
inline void count_into(QueueCounterSets& sets, uint32_t id, uint32_t offset) {
  if (auto found = sets.find(id); found != sets.end()) found->second.bump(offset);
}

}  // namespace hcaemu::model
