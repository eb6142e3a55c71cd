// Signature keys on the send queue and the CQ (objects/block_signature.h, objects/signature_path.h):
// SET_PSV WQEs, and SIGERR CQEs for failed PI checks.
#include "common/endian.h"
#include "common/log.h"
#include "model/function_context.h"
#include "model/rdma/engine.h"
#include "model/rdma/internal.h"

namespace hcaemu::model {
namespace {

// SET_PSV's segment after the control segment: psv_index, then the transient signature.
constexpr uint32_t kPsvIndex = 16, kTransientSignature = 24, kSetPsvBytes = 32;
// SIGERR CQE (opcode 12).
constexpr uint8_t kCqeSigErr = 0xc;
constexpr uint32_t kExpectedSignature = 0x10, kActualSignature = 0x14, kExpectedRefTag = 0x18, kActualRefTag = 0x1c,
                   kSyndrome = 0x20, kSigType = 0x22, kDomain = 0x23, kKey = 0x24, kErrorOffset = 0x28;
constexpr uint8_t kSigTypeBlock = 0, kDomainWire = 0, kDomainMemory = 1;
constexpr uint8_t kFenceDrains = 2;  // fm of the WQEs a drain stops at (libmlx5's IBV_SEND_FENCE is 4)

}  // namespace

bool RdmaEngine::set_psv(const QueuePair& qp, std::span<const uint8_t> wqe) {
  if (wqe.size() < kSetPsvBytes) return false;
  Psv* psv = f_.resources.psvs.find(load_be32(&wqe[kPsvIndex]) & 0xffffff);
  if (psv == nullptr || psv->pd != qp.pd) return false;
  psv->transient_signature = load_be64(&wqe[kTransientSignature]);
  return true;
}

void RdmaEngine::signature_error(uint32_t qpn, QueuePair& qp, uint32_t cqn, const SignatureError& error) {
  ++counters_.signature_errors;
  Mkey* key = f_.resources.mkeys.find(error.key >> 8);
  // Reported once per configuration: the UMR that configures the key again arms it.
  if (key == nullptr || key->sigerr_expected == key->sigerr_count) return;
  key->sigerr_count ^= 1;
  ++counters_.signature_errors_reported;
  const SigCheckFailure& f = error.failure;
  log().debug("function {}: QP {:#x}: signature error on key {:#x} at block offset {} (syndrome {:#x})",
              f_.identity.vhca_id, qpn, error.key, f.offset, f.syndrome);
  write_cqe(f_, cqn, [&](std::span<uint8_t> cqe) {
    store_be32(&cqe[kExpectedSignature], f.expected_signature);
    store_be32(&cqe[kActualSignature], f.actual_signature);
    store_be32(&cqe[kExpectedRefTag], f.expected_ref_tag);
    store_be32(&cqe[kActualRefTag], f.actual_ref_tag);
    store_be16(&cqe[kSyndrome], f.syndrome);
    cqe[kSigType] = kSigTypeBlock;
    cqe[kDomain] = f.memory_domain ? kDomainMemory : kDomainWire;
    store_be32(&cqe[kKey], error.key);
    store_be64(&cqe[kErrorOffset], f.offset);
    store_be32(&cqe[cqe::kSopDropQpn], qpn & 0xffffff);
    cqe[cqe::kOpOwn] = uint8_t(kCqeSigErr << 4);
  });
  if (get(qp.context, qpc::kDrainSigerr)) qp.rc.req.signature_error_pending = true;
}

bool RdmaEngine::drains_for_signature_error(uint32_t qpn, QueuePair& qp, const SendWqe& wqe) {
  if (!qp.rc.req.signature_error_pending || wqe.fence < kFenceDrains) return false;
  if (!qp.rc.req.outstanding.empty()) {  // the completions before it first: the completer resumes
    qp.rc.req.fence_blocked = true;       // a fence-blocked SQ as each of them completes
    return true;
  }
  move_to(qp, QpState::kSqDrained);
  eq_post_qp_srq(f_, eqe::kSqDrained, eqe::kResourceQp, qpn);
  log().debug("function {}: QP {:#x}: SQ drained at WQE {:#x} (opcode {:#x}, fm {}) after a signature error",
              f_.identity.vhca_id, qpn, wqe.wqe_index, wqe.opcode, wqe.fence);
  return true;
}

void RdmaEngine::send_queue_resumed(uint32_t qpn) {
  QueuePair* qp = f_.resources.qps.find(qpn);
  if (qp == nullptr) return;
  qp->rc.req.signature_error_pending = false;
  process_sq(qpn, *qp);  // the WQEs from where it drained, read again (the driver may have cancelled some)
}

}  // namespace hcaemu::model
