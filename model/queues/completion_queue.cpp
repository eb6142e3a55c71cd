#include "model/queues/completion_queue.h"

#include "common/endian.h"
#include "common/log.h"
#include "model/queues/doorbell_unit.h"
#include "model/function_context.h"

namespace hcaemu::model {
namespace {

constexpr uint32_t kCounterMask = 0xffffff;
constexpr uint32_t kCompletionCqn = 0x18;  // in the EQE data: cqn of a completion event
constexpr uint32_t kCqErrorCqn = 0x00;     // CQ error event: cqn, then the syndrome byte
constexpr uint32_t kCqErrorSyndrome = 0x0b;

void notify(FunctionContext& f, uint32_t cqn, CompletionQueue& cq) {
  cq.arm = CqArm::kNone;
  std::array<uint8_t, eqe::kDataSize> data{};
  store_be32(&data[kCompletionCqn], cqn & kCounterMask);
  ++cq.completion_events;
  eq_write(f, cq.eqn, eqe::kCompletion, 0, data);
}

// Consumer index the driver last published in the doorbell record; the arm CI when unreadable.
uint32_t consumer_index(FunctionContext& f, CompletionQueue& cq) {
  uint32_t record = 0;
  return read_doorbell_record(f.memory, cq.dbr_addr, record) ? record & kCounterMask : cq.arm_ci;
}

bool solicited_pending(const CompletionQueue& cq, uint32_t ci) {
  if (!cq.has_solicited) return false;
  const uint32_t solicited = (cq.last_solicited - ci) & kCounterMask;
  const uint32_t pending = (cq.producer - ci) & kCounterMask;
  return solicited != 0 && solicited <= pending;
}

// Takes the producer's slot (before any DMA: a writer that waits on it must not share the slot) and
// writes `entry` (its opcode in op_own[7:4]) there with the slot's owner bit, op_own last so the
// driver never sees a CQE before its contents.
bool store_cqe(FunctionContext& f, CompletionQueue& cq, std::array<uint8_t, cqe::kSize>& entry) {
  const uint32_t slot = cq.producer;
  cq.producer = (cq.producer + 1) & kCounterMask;
  const uint8_t owner = uint8_t((slot >> cq.log_size) & 1);
  entry[cqe::kOpOwn] = uint8_t((entry[cqe::kOpOwn] & 0xf0) | owner);
  const uint64_t at = cq.cqe_offset(slot);
  if (f.memory == nullptr || !cq.ring.write(*f.memory, at, std::span<const uint8_t>(entry.data(), cqe::kOpOwn)) ||
      !cq.ring.write(*f.memory, at + cqe::kOpOwn, std::span<const uint8_t>(&entry[cqe::kOpOwn], 1))) {
    ++cq.dma_faults;
    return false;
  }
  return true;
}

}  // namespace

// Runs inside one work item of the function (model/hca_function.h): nothing else changes the
// function's objects meanwhile, so the CQ found here is still the CQ after each DMA.
CqeResult write_cqe(FunctionContext& f, uint32_t cqn, const CqeFill& fill, bool solicited) {
  CompletionQueue* cq = f.resources.cqs.find(cqn);
  if (cq == nullptr) return CqeResult::kNoSuchCq;
  if (cq->in_error) {
    ++cq->dropped_in_error;
    return CqeResult::kInError;
  }
  // The doorbell record is read only when the CI last seen says the ring may be full: a DMA read
  // per CQE would cost a PCIe round trip that the hardware does not spend.
  if (((cq->producer - cq->known_ci) & kCounterMask) >= cq->entries()) cq->known_ci = consumer_index(f, *cq);
  const uint32_t ci = cq->known_ci;
  if (((cq->producer - ci) & kCounterMask) >= cq->entries()) {
    // Overrun: the CQ goes to error, the driver hears of it on its async EQ (type 0x04).
    cq->in_error = true;
    ++cq->overruns;
    ++f.resources.counters.cq_error_events;
    if (f.cq_overrun_log.allow())
      log().warn("cq {}: overrun (producer {:#x}, ci {:#x}, {} entries); CQ error event", cqn, cq->producer, ci,
                 cq->entries());
    std::array<uint8_t, eqe::kDataSize> data{};
    store_be32(&data[kCqErrorCqn], cqn & kCounterMask);
    data[kCqErrorSyndrome] = cqe::kCqErrorOverrun;
    eq_post(f, eqe::kCqError, 0, data);
    return CqeResult::kOverrun;
  }
  std::array<uint8_t, cqe::kSize> entry{};
  if (fill) fill(entry);
  // Completion time on the device clock (what ibv_wc_read_completion_ts and mlx5e's hardware
  // timestamps read); an error CQE has its syndromes where the timestamp's low bytes would be.
  const uint8_t opcode = entry[cqe::kOpOwn] >> 4;
  const bool error = opcode == cqe::kRequesterError || opcode == cqe::kResponderError;
  if (f.clock_ticks && !error)
    store_be64(&entry[cqe::kTimestamp], f.clock_ticks());
  if (!store_cqe(f, *cq, entry)) return CqeResult::kDmaFault;
  ++cq->cqes;
  if (solicited || error) {
    cq->has_solicited = true;
    cq->last_solicited = cq->producer;
    solicited = true;
  }
  if (cq->arm == CqArm::kNext || (cq->arm == CqArm::kSolicited && solicited)) notify(f, cqn, *cq);
  return CqeResult::kWritten;
}

CqResizeResult resize_cq(FunctionContext& f, CompletionQueue& cq, PageList&& ring, uint32_t log_size,
                         uint32_t log_stride) {
  cq.known_ci = consumer_index(f, cq);
  const uint32_t unpolled = (cq.producer - cq.known_ci) & kCounterMask;
  if (unpolled > (1u << log_size)) return CqResizeResult::kTooSmall;
  if (unpolled >= cq.entries()) return CqResizeResult::kNoRoom;
  std::array<uint8_t, cqe::kSize> entry{};
  entry[cqe::kOpOwn] = uint8_t(cqe::kResize << 4);
  if (!store_cqe(f, cq, entry)) return CqResizeResult::kDmaFault;
  cq.ring = std::move(ring);
  cq.log_size = log_size;
  cq.log_stride = log_stride;
  return CqResizeResult::kDone;
}

bool cq_arm_doorbell(FunctionContext& f, uint32_t cqn, uint32_t ci, uint32_t cmd, uint32_t arm_sn) {
  CompletionQueue* cq = f.resources.cqs.find(cqn);
  if (cq == nullptr || cmd > 1) return false;
  ci &= kCounterMask;
  if (((cq->producer - ci) & kCounterMask) > cq->entries()) return false;  // CI ahead of what we wrote
  cq->arm_ci = ci;
  if (((ci - cq->known_ci) & kCounterMask) <= cq->entries()) cq->known_ci = ci;
  cq->arm_sn = arm_sn;
  cq->arm = cmd == 0 ? CqArm::kNext : CqArm::kSolicited;
  const bool pending = ((cq->producer - ci) & kCounterMask) != 0;
  if ((cq->arm == CqArm::kNext && pending) || (cq->arm == CqArm::kSolicited && solicited_pending(*cq, ci)))
    notify(f, cqn, *cq);
  return true;
}

}  // namespace hcaemu::model
