// Queue pair commands (mlx5-device-bringup.md section 6.4): CREATE/DESTROY/QUERY_QP and the state
// machine RST -> INIT -> RTR -> RTS (+ INIT2INIT, RTS2RTS, SQERR2RTS, 2ERR, 2RST). A transition
// from the wrong state gets BAD_QP_STATE. The QP keeps its whole qpc: the bindings made at create
// (PD, CQs, SRQ, XRCD, sizes, buffer, doorbell record, UAR) never change; each transition takes
// the fields it requires from the command's qpc (zero included) and an optional one only when
// the command's opt_param_mask names it (kAttributeFields below).
#include <algorithm>
#include <array>
#include <optional>

#include "common/log.h"
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"
#include "model/firmware/umem.h"
#include "model/prm/qpc_fields.h"

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
constexpr uint16_t k2Err = 0x507, k2Rst = 0x50a, kSqd2Rts = 0x50c, kInit2Init = 0x50e;
constexpr uint16_t kAttachToMcg = 0x806, kDetachFromMcg = 0x807;

constexpr Field kQpn{0x08, 23, 0};
constexpr Field kOptParamMask{0x10, 31, 0};
// opt_param_mask_95_32 (after the qpc): the extended optional parameters. Bit 34 (bit 2 of its low
// dword) is UDP_SPORT, which RTS2RTS takes for an RC or UC QP (mlx5dv_modify_qp_udp_sport, sent by
// libmlx5 through DevX; cap rts2rts_qp_udp_sport).
constexpr Field kOptParamMask63To32{0x10c, 31, 0};
constexpr uint32_t kOptUdpSport = 1u << 2;
// Bit 33 (bit 1 of that dword): the queue groups in qpc_data_ext, which INIT2INIT and RTS2RTS take
// when the command says it carries the extension (qpc_ext; libmlx5's mlx5dv_modify_qp_sched_elem).
constexpr uint32_t kOptQosQueueGroupId = 1u << 1;
// Bit 32 (bit 0 of that dword): a DCI stream channel to take out of error, named in qpc_data_ext
// (mlx5dv_dci_stream_id_reset: RTS2RTS through DevX).
constexpr uint32_t kOptDciStreamChannelId = 1u << 0;
constexpr Field kDciStreamChannelId{0x110, 15, 0};  // qpc_data_ext.dci_stream_channel_id
constexpr Field kQpcExt{0x08, 31, 31};
constexpr Field kQueueGroupRequester{0x114, 31, 0};  // qpc_data_ext.qos_queue_group_id_requester
constexpr Field kQueueGroupResponder{0x118, 31, 0};  // qpc_data_ext.qos_queue_group_id_responder
constexpr uint32_t kQpc = 0x18, kQpcSize = 0xe8, kPas = 0x110;
// create_qp_in: the work queues in a UMEM (DevX) instead of the PAS.
constexpr uint32_t kWqUmemOffset = 0x100;
constexpr Field kWqUmemId{0x108, 31, 0};
constexpr Field kWqUmemValid{0x10c, 31, 31};
constexpr uint32_t kModifyInSize = kQpc + kQpcSize;

constexpr uint32_t kMaxMtu = 5;  // IB enum: 1 = 256 ... 5 = 4096
constexpr uint32_t kPkeyTableSize = 128;

// Transitions and the states they leave from.
enum TransitionBit : uint8_t { kR2I = 1, kI2I = 2, kI2R = 4, kR2S = 8, kS2S = 16, kE2S = 32, kD2S = 64 };

struct Transition {
  uint16_t opcode;
  const char* name;
  uint8_t bit;           // for the field rules; 0 = the command carries no qpc
  uint32_t from;         // bitmask of QpState values it may start from
  QpState to;
};

constexpr uint32_t from(QpState s) { return 1u << uint32_t(s); }
constexpr uint32_t kAnyState = 0x7f;

constexpr std::array<Transition, 9> kTransitions{{
    {kRst2Init, "RST2INIT_QP", kR2I, from(QpState::kReset), QpState::kInit},
    {kInit2Init, "INIT2INIT_QP", kI2I, from(QpState::kInit), QpState::kInit},
    {kInit2Rtr, "INIT2RTR_QP", kI2R, from(QpState::kInit), QpState::kRtr},
    {kRtr2Rts, "RTR2RTS_QP", kR2S, from(QpState::kRtr), QpState::kRts},
    {kRts2Rts, "RTS2RTS_QP", kS2S, from(QpState::kRts), QpState::kRts},
    {kSqErr2Rts, "SQERR2RTS_QP", kE2S, from(QpState::kSqError), QpState::kRts},
    // The SQ drained at a fenced WQE after a signature error (rdma/signature.cpp) resumes there.
    {kSqd2Rts, "SQD_RTS_QP", kD2S, from(QpState::kSqDrained), QpState::kRts},
    {k2Err, "2ERR_QP", 0, kAnyState, QpState::kError},
    {k2Rst, "2RST_QP", 0, kAnyState, QpState::kReset},
}};

// opt_param_mask bits of the modify commands (PRM "QP optional parameters"; Linux enum mlx5_qp_optpar).
namespace opt {
inline constexpr uint32_t kAltAddrPath = 1u << 0, kRre = 1u << 1, kRae = 1u << 2, kRwe = 1u << 3,
                          kPkeyIndex = 1u << 4, kQkey = 1u << 5, kRnrTimeout = 1u << 6, kPriAddrPath = 1u << 7,
                          kSraMax = 1u << 8, kRraMax = 1u << 9, kPmState = 1u << 10, kRetryCount = 1u << 12,
                          kRnrRetry = 1u << 13, kAckTimeout = 1u << 14, kLagTxAff = 1u << 15, kPriPort = 1u << 16,
                          kSrqn = 1u << 18, kCqnRcv = 1u << 19, kCounterSetId = 1u << 25;
inline constexpr uint32_t kDrainSigerr = 1u << 11;  // INIT2INIT: qpc.drain_sigerr (libmlx5, DevX)
}

// A DCI takes a connected QP's transitions (its path's attributes, retry budget and PSNs); where it
// sends is in each WQE.
bool connected(uint8_t st) { return st == qp_st::kRc || st == qp_st::kUc || st == qp_st::kXrc || st == qp_st::kDci; }

// The optional parameters a transition accepts for a service type (the PRM's per-transition
// tables). A bit outside them is ignored, as the driver never sends one (it masks its own request
// with the same table).
uint32_t allowed_optional(uint8_t transition, uint8_t st) {
  using namespace opt;
  const bool rc = st == qp_st::kRc || st == qp_st::kXrc, uc = st == qp_st::kUc;
  const uint32_t access = rc ? (kRre | kRwe | kRae) : uc ? kRwe : 0;
  const uint32_t datagram_qkey = connected(st) ? 0 : kQkey;
  switch (transition) {
    case kI2I:
      return access | kPkeyIndex | kPriPort | datagram_qkey | (connected(st) ? kLagTxAff | kDrainSigerr : 0) |
             kCounterSetId;
    case kI2R: return access | kPkeyIndex | datagram_qkey | (connected(st) ? kAltAddrPath | kLagTxAff : 0) | kCounterSetId;
    case kR2S:
      return access | datagram_qkey | (connected(st) ? kAltAddrPath | kPmState : 0) | (rc ? kRnrTimeout : 0) |
             kCounterSetId;
    case kS2S:
    case kD2S:
      return access | (connected(st) ? kAltAddrPath | kPmState : kQkey) | (rc ? kRnrTimeout : 0) | kCounterSetId;
    case kE2S: return access | datagram_qkey | (rc ? kRnrTimeout : 0) | kCounterSetId;
    default: return 0;  // RST2INIT takes its parameters as required ones
  }
}

// The qpc fields the modify commands set. A transition takes a field when it is required there
// (`required` for every service type, `required_connected` for RC/UC/XRC only: the path, PSNs and
// retry budget mean nothing to a datagram QP) or when the command's opt_param_mask carries the
// field's optional bit and the transition accepts it; every other field of the command's qpc is
// ignored, so a driver that leaves an attribute out (zero) keeps the value set before. UC is the
// case in point: mlx5_ib sends its access flags at RST2INIT only; INIT2RTR carries rwe = 0 without
// the RWE bit.
struct FieldRule {
  Field field;
  uint8_t required;
  uint8_t required_connected;
  uint32_t optional_bit;  // 0: never optional
};
constexpr std::array<FieldRule, 35> kAttributeFields{{
    {qpc::kLagTxPortAffinity, kR2I, 0, opt::kLagTxAff},
    {qpc::kPmState, kR2I, 0, opt::kPmState},
    {qpc::kMtu, kI2R, 0, 0},
    {qpc::kLogMsgMax, kI2R, 0, 0},
    {qpc::kCounterSetId, kR2I, 0, opt::kCounterSetId},
    {qpc::kRemoteQpn, 0, kI2R, 0},
    {qpc::kPkeyIndex, kR2I, 0, opt::kPkeyIndex},
    {qpc::kForceLoopback, 0, kI2R, opt::kPriAddrPath},  // ads.fl (mlx5 DR's send ring)
    {{0x1c, 31, 0}, 0, kI2R, opt::kPriAddrPath},    // ads.grh / rlid
    {qpc::kAckTimeout, 0, kR2S, opt::kAckTimeout},
    {{0x20, 23, 0}, 0, kI2R, opt::kPriAddrPath},    // ads.src_addr_index, stat_rate, hop_limit
    {{0x24, 31, 0}, 0, kI2R, opt::kPriAddrPath},    // ads.tclass, flow_label
    {{0x28, 31, 0}, 0, kI2R, opt::kPriAddrPath},    // ads.rgid_rip
    {{0x2c, 31, 0}, 0, kI2R, opt::kPriAddrPath},
    {{0x30, 31, 0}, 0, kI2R, opt::kPriAddrPath},
    {{0x34, 31, 0}, 0, kI2R, opt::kPriAddrPath},
    {{0x38, 31, 0}, 0, kI2R, opt::kPriAddrPath},    // ads.dscp, ecn, udp_sport
    {{0x3c, 31, 24}, 0, kI2R, opt::kPriAddrPath},   // ads.eth_prio, sl
    {qpc::kVhcaPortNum, kR2I, kI2R, opt::kPriPort},
    {qpc::kRmacHigh, 0, kI2R, opt::kPriAddrPath},
    {qpc::kRmacLow, 0, kI2R, opt::kPriAddrPath},
    {qpc::kLogAckReqFreq, 0, kR2S, 0},
    {qpc::kLogSraMax, 0, kR2S, opt::kSraMax},
    {qpc::kRetryCount, 0, kR2S, opt::kRetryCount},
    {qpc::kRnrRetry, 0, kR2S, opt::kRnrRetry},
    {qpc::kNextSendPsn, kR2S, 0, 0},
    {qpc::kLogRraMax, 0, kI2R, opt::kRraMax},
    {qpc::kAtomicMode, kR2I, 0, opt::kRae},  // goes with rae
    {qpc::kRre, kR2I, 0, opt::kRre},
    {qpc::kRwe, kR2I, 0, opt::kRwe},
    {qpc::kRae, kR2I, 0, opt::kRae},
    {qpc::kMinRnrNak, 0, kI2R, opt::kRnrTimeout},
    {qpc::kNextRcvPsn, 0, kI2R, 0},
    {qpc::kQkey, kR2I, 0, opt::kQkey},
    {qpc::kDrainSigerr, 0, 0, opt::kDrainSigerr},
}};

bool service_type_supported(uint32_t st) {
  return st == qp_st::kRc || st == qp_st::kUc || st == qp_st::kUd || st == qp_st::kXrc || st == qp_st::kQp1 ||
         st == qp_st::kRegUmr || st == qp_st::kDci;
}

void release(Resources& r, const QueuePair& qp) {
  if (ProtectionDomain* pd = r.pds.find(qp.pd)) --pd->refs;
  if (CompletionQueue* cq = qp.cqn_snd != 0 ? r.cqs.find(qp.cqn_snd) : nullptr) --cq->refs;
  if (CompletionQueue* cq = qp.cqn_rcv != 0 ? r.cqs.find(qp.cqn_rcv) : nullptr) --cq->refs;
  if (SharedReceiveQueue* srq = qp.srqn != 0 ? r.srqs.find(qp.srqn) : nullptr) --srq->refs;
  if (XrcDomain* xrcd = qp.xrcd != 0 ? r.xrcds.find(qp.xrcd) : nullptr) --xrcd->refs;
}

// The QP a QP command names: a DCT shares the numbers but is no QP (firmware/dct.cpp has its
// commands).
QueuePair* named_qp(CommandCall& call) {
  QueuePair* qp = lookup_owned(call, call.function().resources.qps, get(call.in(), kQpn), kCheckLookup);
  if (qp != nullptr && qp->st == qp_st::kDct) {
    call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), kCheckLookup));
    return nullptr;
  }
  return qp;
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
  // A DCI's streams (DCS) within the caps; other QPs have none.
  const uint32_t streams = get(ctx, qpc::kLogNumDciStreamChannels), errored = get(ctx, qpc::kLogNumDciErroredStreams);
  const bool streams_ok = qp.st == qp_st::kDci ? streams <= r.limits.log_max_dci_stream_channels &&
                                                     errored <= r.limits.log_max_dci_errored_streams
                                               : streams == 0 && errored == 0;
  if (!service_type_supported(qp.st) || !streams_ok ||
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
  if (get(ctx, qpc::kDbrUmemValid) != 0 &&
      !place_doorbell_record(call, get(ctx, qpc::kDbrUmemId), qp.dbr_addr, qp.dbr_umem))
    return;
  if (size != 0) {
    auto buffer = get(call.in(), kWqUmemValid) != 0
                      ? umem_buffer(call, get(call.in(), kWqUmemId), get64(call.in(), kWqUmemOffset), size, false)
                      : queue_buffer(call, kPas, get(ctx, qpc::kLogPageSize), get(ctx, qpc::kPageOffset), size);
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
  QueuePair* qp = named_qp(call);
  if (qp == nullptr) return;
  release(r, *qp);
  r.multicast.forget_qp(qpn);
  r.qps.erase(qpn);
}

// ATTACH_TO_MCG / DETACH_FROM_MCG (attach_to_mcg_in: qpn, multicast_gid at 0x10): a UD QP of the
// function joins or leaves a multicast GID's group (mlx5_ib attaches nothing else).
constexpr uint32_t kMulticastGid = 0x10, kMcgInSize = kMulticastGid + 16;
enum McgCheck : uint16_t { kCheckNotUd = 0x30, kCheckNotMulticast = 0x31, kCheckGroupFull = 0x32, kCheckNotAttached = 0x33 };

bool mcg_operands(CommandCall& call, MulticastGroups::Gid& mgid) {
  if (!start(call, kMcgInSize)) return false;
  const QueuePair* qp = named_qp(call);
  if (qp == nullptr) return false;
  std::copy_n(call.in().begin() + kMulticastGid, mgid.size(), mgid.begin());
  const uint16_t check = qp->st != qp_st::kUd ? kCheckNotUd : !is_multicast_gid(mgid) ? kCheckNotMulticast : 0;
  if (check != 0) call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), check));
  return check == 0;
}

void attach_to_mcg(CommandCall& call) {
  MulticastGroups::Gid mgid{};
  if (!mcg_operands(call, mgid)) return;
  switch (call.function().resources.multicast.attach(mgid, get(call.in(), kQpn))) {
    case MulticastGroups::Result::kOk: return;
    case MulticastGroups::Result::kTooManyGroups:
      return call.fail(CommandStatus::kExceedLimit, syndrome(call.opcode(), kCheckFull));
    default: return call.fail(CommandStatus::kExceedLimit, syndrome(call.opcode(), kCheckGroupFull));
  }
}

void detach_from_mcg(CommandCall& call) {
  MulticastGroups::Gid mgid{};
  if (!mcg_operands(call, mgid)) return;
  if (call.function().resources.multicast.detach(mgid, get(call.in(), kQpn)) != MulticastGroups::Result::kOk)
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckNotAttached));
}

void query_qp(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize, kModifyInSize)) return;
  QueuePair* qp = named_qp(call);
  if (qp == nullptr) return;
  set(call.out(), kOptParamMask, qp->opt_param_mask);
  auto out = sub(call.out(), kQpc, kQpcSize);
  std::copy(qp->context.begin(), qp->context.end(), out.begin());
  set(out, qpc::kHwSqWqebbCounter, qp->sq_consumer & 0xffff);
}

// What each transition needs of the context it leaves behind (fields it did not take were checked
// when they were taken).
bool check_transition_result(CommandCall& call, const Transition& t, const QueuePair& qp,
                             std::span<const uint8_t> next) {
  const Resources& r = call.function().resources;
  bool ok = get(next, qpc::kPkeyIndex) < kPkeyTableSize && get(next, qpc::kVhcaPortNum) <= r.limits.num_ports &&
            counter_set_known(call.function().q_counters, get(next, qpc::kCounterSetId));
  if (t.bit == kI2R && connected(qp.st)) {
    const uint32_t mtu = get(next, qpc::kMtu);
    ok = ok && mtu >= 1 && mtu <= kMaxMtu && get(next, qpc::kLogMsgMax) <= r.limits.log_max_msg &&
         get(next, qpc::kSrcAddrIndex) < r.limits.roce_address_table_size;
  }
  if (!ok) call.fail(CommandStatus::kBadParameter, syndrome(t.opcode, kCheckParameter));
  return ok;
}

// The context after transition `t`: the fields it takes from the command's qpc (required ones, and
// optional ones whose opt_param_mask bit is set and accepted), the rest as they were.
std::array<uint8_t, kQpcSize> transition_context(const Transition& t, const QueuePair& qp,
                                                 std::span<const uint8_t> ctx, uint32_t opt_param_mask) {
  std::array<uint8_t, kQpcSize> next = qp.context;
  const uint32_t optional = opt_param_mask & allowed_optional(t.bit, qp.st);
  for (const FieldRule& rule : kAttributeFields) {
    const bool required = (rule.required & t.bit) != 0 || (connected(qp.st) && (rule.required_connected & t.bit) != 0);
    if (required || (optional & rule.optional_bit) != 0) set(next, rule.field, get(ctx, rule.field));
  }
  return next;
}

// The queue groups (objects/scheduling_elements.h) an INIT2INIT or RTS2RTS with the extension
// names: 0 leaves a group; otherwise a queue group of the sender's. Only an RC QP has a responder's
// group. Nothing (the command failed) when they are not acceptable.
struct QueueGroups {
  uint32_t requester, responder;
};
std::optional<QueueGroups> queue_groups(CommandCall& call, const QueuePair& qp) {
  const QueueGroups groups{get(call.in(), kQueueGroupRequester), get(call.in(), kQueueGroupResponder)};
  const bool type_ok = qp.st == qp_st::kRc || ((qp.st == qp_st::kUc || qp.st == qp_st::kUd) && groups.responder == 0);
  if (!type_ok || !may_join_queue_group(call, groups.requester) || !may_join_queue_group(call, groups.responder)) {
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckParameter));
    return std::nullopt;
  }
  return groups;
}

// mlx5dv_dci_stream_id_reset: a DCI stream in error is taken out of it; one that is not in error
// cannot be reset (the command fails, as rdma-core's tests expect).
bool reset_dci_stream(CommandCall& call, QueuePair& qp) {
  const uint16_t stream = uint16_t(get(call.in(), kDciStreamChannelId));
  auto& errored = qp.rc.dci.errored_streams;
  const auto it = std::find(errored.begin(), errored.end(), stream);
  if (qp.st != qp_st::kDci || it == errored.end()) {
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckParameter));
    return false;
  }
  errored.erase(it);
  return true;
}

void modify_qp(CommandCall& call, const Transition& t) {
  if (!start(call, t.bit != 0 ? kModifyInSize : mbox::kHeaderSize)) return;
  QueuePair* qp = named_qp(call);
  if (qp == nullptr) return;
  if ((t.from & from(qp->state)) == 0) {
    log().debug("qp {:#x}: {} from state {} refused", get(call.in(), kQpn), t.name, qp_state_name(qp->state));
    call.fail(CommandStatus::kBadQpState, syndrome(t.opcode, kCheckState));
    return;
  }
  if (t.bit != 0) {
    const uint32_t mask = get(call.in(), kOptParamMask);
    auto next = transition_context(t, *qp, sub(call.in(), kQpc, kQpcSize), mask);
    const uint32_t extended = call.in().size() >= kOptParamMask63To32.offset + 4 ? get(call.in(), kOptParamMask63To32) : 0;
    if (t.bit == kS2S && (extended & kOptUdpSport) != 0 && (qp->st == qp_st::kRc || qp->st == qp_st::kUc))
      set(next, qpc::kUdpSport, get(sub(call.in(), kQpc, kQpcSize), qpc::kUdpSport));
    std::optional<QueueGroups> groups;
    if ((t.bit == kI2I || t.bit == kS2S) && (extended & kOptQosQueueGroupId) != 0 && get(call.in(), kQpcExt) != 0 &&
        call.need_input(kQueueGroupResponder.offset + 4) && !(groups = queue_groups(call, *qp)))
      return;
    if (call.failed() || !check_transition_result(call, t, *qp, next)) return;
    if (t.bit == kS2S && (extended & kOptDciStreamChannelId) != 0 && get(call.in(), kQpcExt) != 0 &&
        (!call.need_input(kDciStreamChannelId.offset + 4) || !reset_dci_stream(call, *qp)))
      return;
    if (groups) {
      qp->sched_group_requester = groups->requester;
      qp->sched_group_responder = groups->responder;
    }
    if (const uint32_t ignored = mask & ~allowed_optional(t.bit, qp->st); ignored != 0)
      log().debug("qp {:#x}: {} ignores optional parameters {:#x}", get(call.in(), kQpn), t.name, ignored);
    qp->context = next;
    qp->opt_param_mask = mask;
  }
  if (t.to == QpState::kReset) {
    qp->sched_group_requester = qp->sched_group_responder = 0;
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
  if ((t.bit == kI2R || t.bit == kR2S) && call.function().qp_ready) call.function().qp_ready(get(call.in(), kQpn));
  if (t.bit == kD2S && call.function().send_queue_resumed) call.function().send_queue_resumed(get(call.in(), kQpn));
}

}  // namespace

void register_qp_commands(CommandTable& table) {
  table.add(kCreateQp, "CREATE_QP", create_qp, Senders::kUser);
  table.add(kDestroyQp, "DESTROY_QP", destroy_qp, Senders::kUser);
  table.add(kQueryQp, "QUERY_QP", query_qp, Senders::kUser);
  table.add(kAttachToMcg, "ATTACH_TO_MCG", attach_to_mcg, Senders::kUser);
  table.add(kDetachFromMcg, "DETACH_FROM_MCG", detach_from_mcg, Senders::kUser);
  for (const Transition& t : kTransitions) table.add(t.opcode, t.name, [&t](CommandCall& call) { modify_qp(call, t); }, Senders::kUser);
  register_dct_commands(table);
}

}  // namespace hcaemu::model
