#pragma once
// The completion queue engine (mlx5-device-bringup.md sections 6.3, 7.2 and 7.5): 64-byte CQEs in a
// host ring described by a PAS list, owner bit = (producer >> log_size) & 1 in op_own, arming from
// the UAR CQ doorbell (+0x20), a completion EQE on cqc.c_eqn when an armed CQ gets a CQE. The data
// paths (requester, responder, Ethernet) produce CQEs only through write_cqe(). A CQE that would
// overwrite one the driver has not consumed (CI from the doorbell record) is not written: the CQ
// goes to error and a CQ error event (type 0x04) is posted instead.
#include <array>
#include <cstdint>
#include <memory>
#include <functional>
#include <span>

#include "model/queues/page_list.h"

namespace hcaemu::model {

struct FunctionContext;

// Error CQE syndromes (mlx5-device-bringup.md section 7.5), for every work queue: Ethernet SQs
// and RQs, RDMA QPs, SRQs.
namespace cqe_syndrome {
inline constexpr uint8_t kLocalLength = 0x01, kLocalQpOperation = 0x02, kLocalProtection = 0x04, kWrFlushed = 0x05,
                         kMwBind = 0x06;
inline constexpr uint8_t kBadResponse = 0x10, kLocalAccess = 0x11, kRemoteInvalidRequest = 0x12, kRemoteAccess = 0x13,
                         kRemoteOperation = 0x14, kRetryExceeded = 0x15, kRnrRetryExceeded = 0x16;
}  // namespace cqe_syndrome

namespace cqe {
inline constexpr uint32_t kSize = 64;
inline constexpr uint32_t kSrqnUserIndex = 0x20;
inline constexpr uint32_t kImmediate = 0x24;
inline constexpr uint32_t kByteCount = 0x2c;
inline constexpr uint32_t kTimestamp = 0x30;    // BE64 device clock (not in error CQEs: 0x36/0x37 are their syndromes)
inline constexpr uint32_t kSopDropQpn = 0x38;   // [31:24] send opcode (requester), [23:0] QPN/SQN
inline constexpr uint32_t kWqeCounter = 0x3c;   // BE16
inline constexpr uint32_t kErrSyndrome = 0x37;  // error CQEs
inline constexpr uint32_t kVendorErrSyndrome = 0x36;
inline constexpr uint32_t kOpOwn = 0x3f;        // [7:4] opcode, [0] owner

enum Opcode : uint8_t {
  kRequester = 0x0,
  kRespWriteImm = 0x1,
  kRespSend = 0x2,
  kRespSendImm = 0x3,
  kRespSendInv = 0x4,
  kResize = 0x5,
  kRequesterError = 0xd,
  kResponderError = 0xe,
  kInvalid = 0xf,
};

inline constexpr uint8_t kCqErrorOverrun = 0x01;  // CQ error event syndrome
}  // namespace cqe

enum class CqArm : uint8_t { kNone, kNext, kSolicited };

struct CompletionQueue {
  uint32_t log_size = 0;
  // 64-byte CQEs (cqc.cqe_sz 0) or 128-byte slots (1): the CQE in a slot's last 64 bytes, where
  // libmlx5 and mlx5_ib read it; the first half stays the driver's (no data is scattered there).
  uint32_t log_stride = 6;
  uint32_t uar_page = 0;
  uint32_t eqn = 0;           // cqc.c_eqn
  uint64_t dbr_addr = 0;      // doorbell record: dword0 = CI (driver), dword1 = arm word
  std::shared_ptr<const void> dbr_umem;  // the UMEM the record is in (DevX), held while the CQ lives
  PageList ring;
  std::array<uint8_t, 0x40> context{};  // cqc as created/modified (QUERY_CQ)
  uint32_t producer = 0;      // CQEs written (24-bit counter)
  CqArm arm = CqArm::kNone;
  uint32_t arm_ci = 0;        // CI carried by the last arm doorbell
  uint32_t known_ci = 0;      // CI last read from the doorbell record
  uint32_t arm_sn = 0;
  bool has_solicited = false;
  uint32_t last_solicited = 0;  // producer value right after the last solicited/error CQE
  bool in_error = false;
  uint32_t refs = 0;          // QPs and SRQs completing into this CQ

  // Statistics.
  uint64_t cqes = 0;
  uint64_t completion_events = 0;
  uint64_t overruns = 0;
  uint64_t dropped_in_error = 0;
  uint64_t dma_faults = 0;

  uint32_t entries() const { return 1u << log_size; }
  uint64_t ring_bytes() const { return uint64_t(1) << (log_size + log_stride); }
  // Where the CQE of counter value `slot` starts in the ring.
  uint64_t cqe_offset(uint32_t slot) const {
    return (uint64_t(slot & (entries() - 1)) << log_stride) + ((uint64_t(1) << log_stride) - 64);
  }
};

// Fills a zeroed 64-byte CQE; the writer then sets the owner bit (keeping the opcode the fill put
// into op_own[7:4]) and writes op_own last.
using CqeFill = std::function<void(std::span<uint8_t>)>;

enum class CqeResult { kWritten, kNoSuchCq, kOverrun, kInError, kDmaFault };

// Appends one CQE to CQ `cqn` of the function. `solicited` marks a CQE that satisfies a
// solicited-only arm (solicited events and error CQEs).
CqeResult write_cqe(FunctionContext& f, uint32_t cqn, const CqeFill& fill, bool solicited = false);

// MODIFY_CQ's resize: a RESIZE CQE (opcode 5) goes into the old ring where the next CQE would, and
// the CQEs after it into `ring` (1 << log_size slots of 1 << log_stride bytes) at the counter
// values that follow; the driver copies the unpolled CQEs up to the RESIZE one across. Refused
// (nothing changed) when the old ring has no room for it or the new one none for what is unpolled.
enum class CqResizeResult { kDone, kNoRoom, kTooSmall, kDmaFault };
CqResizeResult resize_cq(FunctionContext& f, CompletionQueue& cq, PageList&& ring, uint32_t log_size,
                         uint32_t log_stride);

// The +0x20 doorbell: cmd 0 arms for the next CQE, 1 for the next solicited one. An arm whose CI
// is behind the producer fires at once. False when `cqn` names no CQ of the function or the
// command is unknown.
bool cq_arm_doorbell(FunctionContext& f, uint32_t cqn, uint32_t ci, uint32_t cmd, uint32_t arm_sn);

}  // namespace hcaemu::model
