// The driver's UMR QP (service type REG_UMR): mlx5_ib posts UMR WQEs on it to load, re-register or
// revoke an MKEY and sleeps until their completion. Each WQE is applied to the function's MKEYs
// (model/objects/umr.cpp) and completes like a send: a requester CQE when signalled, or an error CQE that
// stops the send queue (the driver then takes the QP through RESET back to RTS and reports the
// failure), so the driver never waits for ever.
#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "model/queues/completion_queue.h"
#include "model/queues/doorbell_unit.h"
#include "model/function_context.h"
#include "model/rdma/engine.h"
#include "model/rdma/internal.h"
#include "model/objects/memory_protection.h"
#include "model/objects/umr.h"

namespace hcaemu::model {

using namespace rdma_internal;

namespace {
uint8_t umr_syndrome(UmrError error) {
  const bool protection = error == UmrError::kBadKey || error == UmrError::kBadPd || error == UmrError::kState ||
                          error == UmrError::kXltRead;
  return protection ? syndrome::kLocalProtection : syndrome::kLocalQpOperation;
}
}  // namespace

void RdmaEngine::process_umr_sq(uint32_t qpn, QueuePair& qp) {
  if (qp.state != QpState::kRts && !send_queue_stopped(qp)) return;
  uint32_t producer = 0;
  if (!read_doorbell_record(f_.memory, qp.dbr_addr + kSqDbrOffset, producer)) {
    ++counters_.dma_faults;
    return;
  }
  const uint32_t sq_blocks = 1u << qp.log_sq_size;
  std::vector<uint8_t> bytes;
  while (((producer - qp.sq_consumer) & kCounterMask16) != 0) {
    const uint32_t available = (producer - qp.sq_consumer) & kCounterMask16;
    SendWqe wqe;  // what the CQEs name
    wqe.opcode = umr::kOpcode;
    wqe.wqe_index = uint16_t(qp.sq_consumer);
    uint8_t ds = 0;
    if (available > sq_blocks || !fetch_wqe(*f_.memory, qp, qp.sq_consumer, bytes, ds)) {
      ++counters_.umr_errors;
      qp.sq_consumer = producer & kCounterMask16;
      if (!send_queue_stopped(qp)) requester_error(qpn, qp, wqe, syndrome::kLocalQpOperation);
      return;
    }
    wait_until(now_ps() + timing_.wqe_parse_ps);
    const uint32_t blocks = std::clamp<uint32_t>((uint32_t(ds) + 3) / 4, 1, available);
    qp.sq_consumer = (qp.sq_consumer + blocks) & kCounterMask16;
    if (send_queue_stopped(qp)) {
      ++counters_.flushed_wqes;
      error_cqe(qp.cqn_snd, qpn, wqe.opcode, wqe.wqe_index, syndrome::kWrFlushed, false, user_index_of(qp));
      continue;
    }
    ++counters_.umr_wqes;
    // A translation's entries, read through the driver's local DMA key (a key of the UMR QP's PD).
    const XltReader read_xlt = [&](uint32_t lkey, uint64_t address, std::span<uint8_t> out) {
      std::vector<DmaChunk> chunks;
      // The 6.1 driver's UMR QP has no PD (qpc.pd 0): the list's key is then taken in its own PD.
      // Either way only this function's keys, hence its own memory, are reachable.
      const uint32_t pd = qp.pd != 0 ? qp.pd : kAnyPd;
      const ProtectionError error = translate(f_.resources, lkey, pd, address, out.size(), access::kLocalRead, chunks, qpn);
      if (error != ProtectionError::kNone) {
        log().debug("function {}: UMR QP {:#x}: translation list at {:#x} through key {:#x}: {}", f_.identity.vhca_id,
                    qpn, address, lkey, protection_error_name(error));
        return false;
      }
      if (read_chunks(*f_.memory, chunks, 0, out)) return true;
      ++counters_.dma_faults;
      return false;
    };
    const UmrError error = apply_umr(f_.resources, bytes, read_xlt);
    if (error != UmrError::kNone) {
      if (counters_.umr_errors++ < 10)
        log().warn("function {}: UMR WQE {:#x} on QP {:#x} refused: {}", f_.identity.vhca_id, wqe.wqe_index, qpn,
                   umr_error_name(error));
      requester_error(qpn, qp, wqe, umr_syndrome(error));
      return;
    }
    SendWqe ctrl;
    if (!parse_ctrl_segment(bytes, ctrl) || !ctrl.signalled) continue;
    ++counters_.requester_cqes;
    write_cqe(f_, qp.cqn_snd, [&](std::span<uint8_t> cqe) { fill_requester_cqe(cqe, qpn, umr::kOpcode, wqe.wqe_index, user_index_of(qp)); });
  }
}

}  // namespace hcaemu::model
