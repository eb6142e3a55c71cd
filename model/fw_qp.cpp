// Queue pair commands (mlx5-device-bringup.md section 6.4): CREATE/DESTROY/QUERY_QP and the state
// machine RST -> INIT -> RTR -> RTS (+ INIT2INIT, RTS2RTS, SQERR2RTS, 2ERR, 2RST). A transition
// from the wrong state gets BAD_QP_STATE. The QP keeps its whole qpc: the bindings made at create
// (PD, CQs, SRQ, XRCD, sizes, buffer, doorbell record, UAR) never change; each transition takes
// the fields it is defined to set from the command's qpc (zero included), and other attribute
// fields only when the command carries them non-zero (optional parameters).
#include <array>

#include "common/log.h"
#include "model/firmware.h"
#include "model/fw_resource_helpers.h"
#include "model/qpc_fields.h"

namespace hcaemu::model {

const char* qp_state_name(QpState state) {
  switch (state) {
    case QpState::kReset: return "RST";
    case QpState::kInit: return "INIT";
    case QpState::kRtr: return "RTR";
    case QpState::kRts: return "RTS";
    case QpState::kSqError: return "SQER";
    case QpState::kSqDrained: return "SQD";
    case QpState::kError: return "ERR";
  }
  return "?";
}

namespace {

using namespace fw;

constexpr uint16_t kCreateQp = 0x500, kDestroyQp = 0x501, kQueryQp = 0x50b;
constexpr uint16_t kRst2Init = 0x502, kInit2Rtr = 0x503, kRtr2Rts = 0x504, kRts2Rts = 0x505, kSqErr2Rts = 0x506;
constexpr uint16_t k2Err = 0x507, k2Rst = 0x50a, kInit2Init = 0x50e;

constexpr Field kQpn{0x08, 23, 0};
constexpr Field kOptParamMask{0x10, 31, 0};
constexpr uint32_t kQpc = 0x18, kQpcSize = 0xe8, kPas = 0x110;
constexpr uint32_t kModifyInSize = kQpc + kQpcSize;

constexpr uint32_t kMaxMtu = 5;  // IB enum: 1 = 256 ... 5 = 4096
constexpr uint32_t kPkeyTableSize = 128;

// Transitions and the states they leave from.
enum TransitionBit : uint8_t { kR2I = 1, kI2I = 2, kI2R = 4, kR2S = 8, kS2S = 16, kE2S = 32 };

struct Transition {
  uint16_t opcode;
  const char* name;
  uint8_t bit;           // for the field rules; 0 = the command carries no qpc
  uint32_t from;         // bitmask of QpState values it may start from
  QpState to;
};

constexpr uint32_t from(QpState s) { return 1u << uint32_t(s); }
constexpr uint32_t kAnyState = 0x7f;

constexpr std::array<Transition, 8> kTransitions{{
    {kRst2Init, "RST2INIT_QP", kR2I, from(QpState::kReset), QpState::kInit},
    {kInit2Init, "INIT2INIT_QP", kI2I, from(QpState::kInit), QpState::kInit},
    {kInit2Rtr, "INIT2RTR_QP", kI2R, from(QpState::kInit), QpState::kRtr},
    {kRtr2Rts, "RTR2RTS_QP", kR2S, from(QpState::kRtr), QpState::kRts},
    {kRts2Rts, "RTS2RTS_QP", kS2S, from(QpState::kRts), QpState::kRts},
    {kSqErr2Rts, "SQERR2RTS_QP", kE2S, from(QpState::kSqError), QpState::kRts},
    {k2Err, "2ERR_QP", 0, kAnyState, QpState::kError},
    {k2Rst, "2RST_QP", 0, kAnyState, QpState::kReset},
}};

// Attribute fields a transition may change; `required` = transitions that always set it.
struct FieldRule {
  Field field;
  uint8_t required;
};
constexpr std::array<FieldRule, 26> kAttributeFields{{
    {{0x00, 27, 24}, 0},                  // lag_tx_port_affinity
    {{0x00, 12, 11}, 0},                  // pm_state
    {{0x08, 31, 29}, kI2R},               // mtu
    {{0x08, 28, 24}, kI2R},               // log_msg_max
    {{0x0c, 31, 24}, 0},                  // counter_set_id
    {{0x14, 23, 0}, kI2R},                // remote_qpn
    {{0x18, 15, 0}, kR2I},                // ads.pkey_index
    {{0x1c, 31, 0}, kI2R},                // ads.grh / rlid
    {{0x20, 31, 27}, kR2S},               // ads.ack_timeout
    {{0x20, 23, 0}, kI2R},                // ads.src_addr_index, stat_rate, hop_limit
    {{0x24, 31, 0}, kI2R},                // ads.tclass, flow_label
    {{0x28, 31, 0}, kI2R},                // ads.rgid_rip
    {{0x2c, 31, 0}, kI2R},
    {{0x30, 31, 0}, kI2R},
    {{0x34, 31, 0}, kI2R},
    {{0x38, 31, 0}, kI2R},                // ads.dscp, ecn, udp_sport
    {{0x3c, 31, 24}, kI2R},               // ads.eth_prio, sl
    {{0x3c, 23, 16}, 0},                  // ads.vhca_port_num
    {{0x3c, 15, 0}, kI2R},                // ads.rmac_47_32
    {{0x40, 31, 0}, kI2R},                // ads.rmac_31_0
    {{0x70, 31, 0}, kR2S},                // log_ack_req_freq, log_sra_max, retry_count, rnr_retry
    {{0x78, 23, 0}, kR2S},                // next_send_psn
    {{0x90, 23, 13}, kI2R},               // log_rra_max, atomic_mode, rre, rwe, rae
    {{0x94, 31, 0}, kI2R},                // min_rnr_nak, next_rcv_psn
    {{0xa8, 31, 0}, 0},                   // q_key
    {{0xc4, 16, 0}, 0},                   // cgs, cs_req, cs_res
}};

bool service_type_supported(uint32_t st) {
  return st == qp_st::kRc || st == qp_st::kUc || st == qp_st::kUd || st == qp_st::kXrc || st == qp_st::kQp1 ||
         st == qp_st::kRegUmr;
}

bool connected(uint8_t st) { return st == qp_st::kRc || st == qp_st::kUc || st == qp_st::kXrc; }

void release(Resources& r, const QueuePair& qp) {
  if (ProtectionDomain* pd = r.pds.find(qp.pd)) --pd->refs;
  if (CompletionQueue* cq = qp.cqn_snd != 0 ? r.cqs.find(qp.cqn_snd) : nullptr) --cq->refs;
  if (CompletionQueue* cq = qp.cqn_rcv != 0 ? r.cqs.find(qp.cqn_rcv) : nullptr) --cq->refs;
  if (SharedReceiveQueue* srq = qp.srqn != 0 ? r.srqs.find(qp.srqn) : nullptr) --srq->refs;
  if (XrcDomain* xrcd = qp.xrcd != 0 ? r.xrcds.find(qp.xrcd) : nullptr) --xrcd->refs;
}

void create_qp(CommandCall& call) {
  if (!start(call, kPas)) return;
  Resources& r = call.function().resources;
  const auto ctx = sub(call.in(), kQpc, kQpcSize);
  QueuePair qp;
  qp.st = uint8_t(get(ctx, qpc::kSt));
  qp.pd = get(ctx, qpc::kPd);
  qp.log_rq_size = get(ctx, qpc::kLogRqSize);
  qp.log_rq_stride = get(ctx, qpc::kLogRqStride);
  qp.no_sq = get(ctx, qpc::kNoSq);
  qp.log_sq_size = get(ctx, qpc::kLogSqSize);
  qp.uar_page = get(ctx, qpc::kUarPage);
  qp.rq_type = uint8_t(get(ctx, qpc::kRqType));
  qp.dbr_addr = get64(ctx, qpc::kDbrAddr);
  const uint32_t cqn_snd = get(ctx, qpc::kCqnSnd), cqn_rcv = get(ctx, qpc::kCqnRcv);
  const uint32_t srqn = get(ctx, qpc::kSrqn), xrcd_number = get(ctx, qpc::kXrcd);
  if (!service_type_supported(qp.st) ||
      (qp.rq_type != rq_type::kRegular && qp.rq_type != rq_type::kSrq && qp.rq_type != rq_type::kZeroLength)) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateQp, kCheckParameter));
    return;
  }
  if (!check_log_size(call, qp.log_rq_size, r.limits.log_max_qp_sz) ||
      !check_log_size(call, qp.log_sq_size, r.limits.log_max_qp_sz) || !check_dbr(call, qp.dbr_addr))
    return;
  if (qp.uar_page != 0 && !check_uar(call, qp.uar_page)) return;
  // The 6.1 driver creates its UMR QP with qpc.pd = 0 (UMR WQEs carry their own keys); every
  // other QP names a PD of its function.
  ProtectionDomain* pd = nullptr;
  if (!(qp.st == qp_st::kRegUmr && qp.pd == 0)) {
    pd = lookup(call, r.pds, qp.pd, kCheckPd);
    if (pd == nullptr) return;
  }
  // CQ and XRCD numbers are optional (0 = none, e.g. XRC target QPs); a number given must exist.
  CompletionQueue* snd = nullptr;
  CompletionQueue* rcv = nullptr;
  if (cqn_snd != 0 && (snd = lookup(call, r.cqs, cqn_snd, kCheckCq)) == nullptr) return;
  if (cqn_rcv != 0 && (rcv = lookup(call, r.cqs, cqn_rcv, kCheckCq)) == nullptr) return;
  XrcDomain* xrcd = nullptr;
  if ((xrcd_number != 0 || qp.st == qp_st::kXrc) && (xrcd = lookup(call, r.xrcds, xrcd_number, kCheckXrcd)) == nullptr)
    return;
  // srqn_rmpn_xrqn is always filled by the driver; it is a reference only for rq_type SRQ.
  SharedReceiveQueue* srq = nullptr;
  if (qp.rq_type == rq_type::kSrq && (srq = lookup(call, r.srqs, srqn, kCheckSrq)) == nullptr) return;

  qp.sq_offset = qp.rq_bytes();
  const uint64_t size = qp.rq_bytes() + qp.sq_bytes();
  if (size != 0) {
    const uint32_t log_page_size = PageList::kMinLogPageSize + get(ctx, qpc::kLogPageSize);
    if (log_page_size > PageList::kMaxLogPageSize) {
      call.fail(CommandStatus::kBadParameter, syndrome(kCreateQp, kCheckPas + uint16_t(PageListError::kPageSize)));
      return;
    }
    auto buffer = page_list(call, kPas, log_page_size, quantized_offset(get(ctx, qpc::kPageOffset), log_page_size), size);
    if (!buffer) return;
    qp.buffer = std::move(*buffer);
  }
  std::copy(ctx.begin(), ctx.end(), qp.context.begin());
  set(qp.context, qpc::kState, uint32_t(QpState::kReset));
  qp.cqn_snd = cqn_snd;
  qp.cqn_rcv = cqn_rcv;
  qp.srqn = srq != nullptr ? srqn : 0;
  qp.xrcd = xrcd != nullptr ? xrcd_number : 0;
  qp.opt_param_mask = get(call.in(), kOptParamMask);
  if (uint32_t qpn = insert(call, r.qps, r.limits.log_max_qp, std::move(qp))) {
    if (pd != nullptr) ++pd->refs;
    if (snd != nullptr) ++snd->refs;
    if (rcv != nullptr) ++rcv->refs;
    if (srq != nullptr) ++srq->refs;
    if (xrcd != nullptr) ++xrcd->refs;
    set(call.out(), kQpn, qpn);
  }
}

void destroy_qp(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  const uint32_t qpn = get(call.in(), kQpn);
  QueuePair* qp = lookup(call, r.qps, qpn, kCheckLookup);
  if (qp == nullptr) return;
  release(r, *qp);
  r.qps.erase(qpn);
}

void query_qp(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize, kModifyInSize)) return;
  QueuePair* qp = lookup(call, call.function().resources.qps, get(call.in(), kQpn), kCheckLookup);
  if (qp == nullptr) return;
  set(call.out(), kOptParamMask, qp->opt_param_mask);
  auto out = sub(call.out(), kQpc, kQpcSize);
  std::copy(qp->context.begin(), qp->context.end(), out.begin());
}

// What each transition needs from its qpc, as far as the qpc carries it.
bool check_transition_fields(CommandCall& call, const Transition& t, const QueuePair& qp,
                             std::span<const uint8_t> ctx) {
  const Resources& r = call.function().resources;
  bool ok = true;
  if (t.bit == kR2I || t.bit == kI2I) {
    const uint32_t port = get(ctx, qpc::kVhcaPortNum);
    ok = get(ctx, qpc::kPkeyIndex) < kPkeyTableSize && port <= r.limits.num_ports &&
         counter_set_known(call.function().q_counters, get(ctx, qpc::kCounterSetId));
  } else if (t.bit == kI2R && connected(qp.st)) {
    const uint32_t mtu = get(ctx, qpc::kMtu);
    ok = mtu >= 1 && mtu <= kMaxMtu && get(ctx, qpc::kLogMsgMax) <= r.limits.log_max_msg &&
         get(ctx, qpc::kSrcAddrIndex) < r.limits.roce_address_table_size;
  }
  if (!ok) call.fail(CommandStatus::kBadParameter, syndrome(t.opcode, kCheckParameter));
  return ok;
}

void modify_qp(CommandCall& call, const Transition& t) {
  if (!start(call, t.bit != 0 ? kModifyInSize : mbox::kHeaderSize)) return;
  QueuePair* qp = lookup(call, call.function().resources.qps, get(call.in(), kQpn), kCheckLookup);
  if (qp == nullptr) return;
  if ((t.from & from(qp->state)) == 0) {
    log().debug("qp {:#x}: {} from state {} refused", get(call.in(), kQpn), t.name, qp_state_name(qp->state));
    call.fail(CommandStatus::kBadQpState, syndrome(t.opcode, kCheckState));
    return;
  }
  if (t.bit != 0) {
    const auto ctx = sub(call.in(), kQpc, kQpcSize);
    if (!check_transition_fields(call, t, *qp, ctx)) return;
    for (const FieldRule& rule : kAttributeFields) {
      const uint32_t value = get(ctx, rule.field);
      if ((rule.required & t.bit) != 0 || value != 0) set(qp->context, rule.field, value);
    }
    qp->opt_param_mask = get(call.in(), kOptParamMask);
  }
  if (t.to == QpState::kReset) {
    qp->sq_consumer = 0;
    qp->rq_consumer = 0;
    qp->rc = {};
  }
  // The transport starts from the PSNs the transitions set (IBA 9.7: RTR sets the expected PSN,
  // RTS the first send PSN).
  if (t.bit == kI2R) {
    qp->rc.resp = {};
    qp->rc.resp.epsn = get(qp->context, qpc::kNextRcvPsn);
  }
  if (t.bit == kR2S) {
    qp->rc.req = {};
    qp->rc.req.next_psn = get(qp->context, qpc::kNextSendPsn);
    qp->rc.req.acked_psn = (qp->rc.req.next_psn - 1) & 0xffffff;
    qp->rc.req.retries_left = get(qp->context, qpc::kRetryCount);
    qp->rc.req.rnr_retries_left = get(qp->context, qpc::kRnrRetry);
  }
  const bool entered_error = t.to == QpState::kError && qp->state != QpState::kError;
  qp->state = t.to;
  set(qp->context, qpc::kState, uint32_t(t.to));
  if (entered_error && call.function().qp_moved_to_error) call.function().qp_moved_to_error(get(call.in(), kQpn));
}

}  // namespace

void register_qp_commands(CommandTable& table) {
  table.add(kCreateQp, "CREATE_QP", create_qp);
  table.add(kDestroyQp, "DESTROY_QP", destroy_qp);
  table.add(kQueryQp, "QUERY_QP", query_qp);
  for (const Transition& t : kTransitions) table.add(t.opcode, t.name, [&t](CommandCall& call) { modify_qp(call, t); });
}

}  // namespace hcaemu::model
