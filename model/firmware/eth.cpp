// Ethernet transport objects (mlx5-device-bringup.md section 4.4): TIS, TIR, RQT, RQ and SQ with
// their create/modify/destroy/query commands, and the RQ/SQ state machine RST -> RDY -> ERR. The
// flow steering commands are in firmware/eth_flow.cpp. Layouts: mlx5-layouts.md tisc, tirc, rqtc, rqc,
// sqc, wq, create_*_in, modify_*_in. Every ID the driver names is looked up in the function's own
// tables; references are counted so an object in use cannot be destroyed.
#include "model/eth/objects.h"
#include "model/firmware/firmware.h"
#include "model/steering/terminals.h"
#include "model/firmware/resource_helpers.h"
#include "model/firmware/umem.h"

namespace hcaemu::model {

const char* wq_state_name(WqState state) {
  switch (state) {
    case WqState::kReset: return "RST";
    case WqState::kReady: return "RDY";
    case WqState::kError: return "ERR";
  }
  return "?";
}

namespace {

using fw::check;
using fw::lookup;
using fw::lookup_owned;

constexpr uint16_t kCreateTir = 0x900, kModifyTir = 0x901, kDestroyTir = 0x902, kQueryTir = 0x903;
constexpr uint16_t kCreateSq = 0x904, kModifySq = 0x905, kDestroySq = 0x906, kQuerySq = 0x907;
constexpr uint16_t kCreateRq = 0x908, kModifyRq = 0x909, kDestroyRq = 0x90a, kQueryRq = 0x90b;
constexpr uint16_t kCreateTis = 0x912, kModifyTis = 0x913, kDestroyTis = 0x914, kQueryTis = 0x915;
constexpr uint16_t kCreateRqt = 0x916, kModifyRqt = 0x917, kDestroyRqt = 0x918, kQueryRqt = 0x919;

// Checks of this file (syndrome(opcode, check)); the shared ones come from firmware/resource_helpers.h.
enum EthCheck : uint16_t {
  kCheckTd = 0x20,
  kCheckTis = 0x21,
  kCheckRq = 0x22,
  kCheckRqt = 0x23,
  kCheckTransition = 0x24,
  kCheckStride = 0x25,
  kCheckListSize = 0x26,
};

constexpr uint32_t kCtx = 0x20;          // context offset in create/modify inputs and query outputs
constexpr uint32_t kObjectNumber = 0x08;  // create_*_out [23:0], destroy/query/modify_*_in [23:0]
constexpr Field kObjectId{0x08, 23, 0};
constexpr Field kCurrentState{0x08, 31, 28};  // modify_rq_in.rq_state / modify_sq_in.sq_state
constexpr uint32_t kBitmask = 0x10;      // modify_*_in.modify_bitmask (64 bits)
constexpr uint32_t kQueueInSize = 0x110, kPas = 0x110;

// rqc / sqc (offsets inside the context).
constexpr Field kQState{0x00, 23, 20};
constexpr Field kRqMemType{0x00, 27, 24};
constexpr Field kHairpin{0x00, 17, 17};
constexpr Field kQCqn{0x08, 23, 0};
constexpr Field kSqTisListSize{0x20, 31, 16};
constexpr Field kSqTis0{0x2c, 23, 0};
constexpr uint32_t kQueueCtxSize = 0xf0;  // rqc, sqc
constexpr uint32_t kWq = 0x30, kWqSize = 0xc0;

// wq (offsets inside the wq context).
constexpr Field kWqType{0x00, 31, 28};
constexpr Field kWqSignature{0x00, 27, 27};
constexpr Field kWqPageOffset{0x04, 20, 16};
constexpr Field kWqPd{0x08, 23, 0};
constexpr Field kWqUarPage{0x0c, 23, 0};
constexpr uint32_t kWqDbr = 0x10;
constexpr Field kWqLogStride{0x20, 19, 16};
constexpr Field kWqLogPageSize{0x20, 12, 8};
constexpr Field kWqLogSize{0x20, 4, 0};
// A DevX queue's ring and doorbell record in UMEMs instead of the PAS and dbr_addr.
constexpr Field kWqDbrUmemValid{0x24, 31, 31};
constexpr Field kWqUmemValid{0x24, 30, 30};
constexpr Field kWqDbrUmemId{0x28, 31, 0};
constexpr Field kWqUmemId{0x2c, 31, 0};
constexpr uint32_t kWqUmemOffset = 0x30;
constexpr uint32_t kSqLogStride = 6;      // 64-byte WQEBBs
constexpr uint32_t kRqMinLogStride = 4, kRqMaxLogStride = 11;

// tisc / tirc / rqtc.
constexpr uint32_t kTiscSize = 0xa0, kTircSize = 0xf0, kRqtcSize = 0xf0;
constexpr Field kTisTd{0x24, 23, 0};
constexpr Field kTisPd{0x2c, 23, 0};
constexpr Field kTirDispType{0x04, 31, 28};
constexpr Field kTirInlineRqn{0x1c, 23, 0};
constexpr Field kTirIndirectTable{0x20, 23, 0};
constexpr Field kTirTd{0x24, 23, 0};
constexpr Field kRqtMaxSize{0x14, 15, 0};
constexpr Field kRqtActualSize{0x18, 15, 0};
constexpr uint32_t kRqtList = kCtx + kRqtcSize;  // rq_num[] after the context, 4 bytes each
constexpr uint32_t kMaxRqtSize = 1u << 16;

// modify_tir_bitmask (low dword of the 64-bit mask) and the tirc bytes each bit covers.
constexpr uint32_t kTirModifyLro = 1u << 0, kTirModifyHash = 1u << 2, kTirModifySelfLb = 1u << 4;
constexpr uint32_t kModifyRqtList = 1u << 0;

uint32_t modify_bitmask(CommandCall& call) { return uint32_t(get64(call.in(), kBitmask)); }

std::span<const uint8_t> context_in(CommandCall& call, uint32_t size) { return sub(call.in(), kCtx, size); }

template <size_t N>
void copy_context(std::span<const uint8_t> from, std::array<uint8_t, N>& to) {
  std::copy_n(from.begin(), std::min(from.size(), N), to.begin());
}

template <size_t N>
bool answer_context(CommandCall& call, const std::array<uint8_t, N>& context) {
  if (!call.need_output(kCtx + N)) return false;
  std::copy(context.begin(), context.end(), call.out().begin() + kCtx);
  return true;
}

void answer_object(CommandCall& call, uint32_t id) { set(call.out(), Field{kObjectNumber, 23, 0}, id); }

bool check_td(CommandCall& call, uint32_t td) {
  if (call.function().resources.tds.contains(td)) return true;
  call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), kCheckTd));
  return false;
}

// ---- the wq context of an RQ or SQ ----

// The ring in the command's PAS (the kernel's queues).
std::optional<PageList> pas_buffer(CommandCall& call, std::span<const uint8_t> wq, uint64_t bytes) {
  const uint32_t log_page_size = PageList::kMinLogPageSize + get(wq, kWqLogPageSize);
  if (!check(call, log_page_size <= PageList::kMaxLogPageSize, fw::kCheckPas)) return std::nullopt;
  return fw::page_list(call, kPas, log_page_size, fw::quantized_offset(get(wq, kWqPageOffset), log_page_size), bytes);
}

// Validates and builds the ring of a create_rq_in / create_sq_in (context at 0x20, PAS at 0x110).
std::optional<WorkQueueRing> parse_wq(CommandCall& call, bool is_sq) {
  const auto wq = sub(call.in(), kCtx + kWq, kWqSize);
  WorkQueueRing ring;
  ring.type = uint8_t(get(wq, kWqType));
  ring.pd = get(wq, kWqPd);
  ring.uar_page = get(wq, kWqUarPage);
  ring.dbr_addr = get64(wq, kWqDbr);
  ring.log_stride = get(wq, kWqLogStride);
  ring.log_size = get(wq, kWqLogSize);
  const bool stride_ok = is_sq ? ring.log_stride == kSqLogStride
                               : ring.log_stride >= kRqMinLogStride && ring.log_stride <= kRqMaxLogStride;
  if (!check(call, get(wq, kWqSignature) == 0, fw::kCheckParameter) ||
      !check(call, is_sq ? ring.type == wq_type::kCyclic : ring.type <= wq_type::kCyclicStriding, fw::kCheckParameter) ||
      !check(call, stride_ok, kCheckStride) || !fw::check_log_size(call, ring.log_size, kLogMaxWqSize) ||
      // mlx5e's drop RQ (it only ever drops) is created without a PD.
      (!(ring.pd == 0 && !is_sq) && !lookup(call, call.function().resources.pds, ring.pd, fw::kCheckPd)) ||
      !fw::check_dbr(call, ring.dbr_addr) ||
      (is_sq && !fw::check_uar(call, ring.uar_page)))
    return std::nullopt;
  if (get(wq, kWqDbrUmemValid) != 0 &&
      !fw::place_doorbell_record(call, get(wq, kWqDbrUmemId), ring.dbr_addr, ring.dbr_umem))
    return std::nullopt;
  auto buffer = get(wq, kWqUmemValid) != 0
                    ? fw::umem_buffer(call, get(wq, kWqUmemId), get64(wq, kWqUmemOffset), ring.bytes(), false)
                    : pas_buffer(call, wq, ring.bytes());
  if (!buffer) return std::nullopt;
  ring.buffer = std::move(*buffer);
  return ring;
}

// RQ/SQ state machine: RST -> RDY, RDY -> RDY/ERR/RST, ERR -> ERR/RST.
bool transition_allowed(WqState from, WqState to) {
  switch (from) {
    case WqState::kReset: return to == WqState::kReset || to == WqState::kReady;
    case WqState::kReady: return true;
    case WqState::kError: return to == WqState::kError || to == WqState::kReset;
  }
  return false;
}

std::optional<WqState> state_of(uint32_t value) {
  if (value == uint32_t(WqState::kReset) || value == uint32_t(WqState::kReady) || value == uint32_t(WqState::kError))
    return WqState(value);
  return std::nullopt;
}

// Reads current and next state of a MODIFY_RQ/MODIFY_SQ and checks the transition.
std::optional<WqState> next_state(CommandCall& call, WqState current) {
  const auto claimed = state_of(get(call.in(), kCurrentState));
  const auto next = state_of(get(context_in(call, 4), kQState));
  if (!check(call, claimed.has_value() && next.has_value(), fw::kCheckParameter)) return std::nullopt;
  if (!check(call, *claimed == current && transition_allowed(current, *next), kCheckTransition,
             CommandStatus::kBadResourceState))
    return std::nullopt;
  return next;
}

// ---- RQ ----

void create_rq(CommandCall& call) {
  if (!fw::start(call, kQueueInSize)) return;
  FunctionContext& f = call.function();
  const auto rqc = context_in(call, kQueueCtxSize);
  const uint32_t cqn = get(rqc, kQCqn);
  if (!check(call, get(rqc, kQState) == uint32_t(WqState::kReset), kCheckTransition) ||
      !check(call, get(rqc, kRqMemType) == 0 && get(rqc, kHairpin) == 0, fw::kCheckParameter) ||
      !check(call, counter_set_known(f.q_counters, get(rqc, rqc::kCounterSetId)), fw::kCheckParameter))
    return;
  CompletionQueue* cq = lookup(call, f.resources.cqs, cqn, fw::kCheckCq);
  if (cq == nullptr) return;
  auto ring = parse_wq(call, false);
  if (!ring) return;
  EthReceiveQueue rq;
  copy_context(rqc, rq.context);
  rq.cqn = cqn;
  rq.wq = std::move(*ring);
  const uint32_t pd = rq.wq.pd;
  const uint32_t rqn = fw::insert(call, f.eth.rqs, 16, std::move(rq));
  if (rqn == 0) return;
  ++cq->refs;
  if (ProtectionDomain* owner = f.resources.pds.find(pd)) ++owner->refs;  // none for the drop RQ
  answer_object(call, rqn);
}

void modify_rq(CommandCall& call) {
  if (!fw::start(call, kQueueInSize)) return;
  EthReceiveQueue* rq = lookup_owned(call, call.function().eth.rqs, get(call.in(), kObjectId), kCheckRq);
  if (rq == nullptr) return;
  const auto next = next_state(call, rq->state);
  if (!next) return;
  // modify_bitmask: vsd (bit 1), scatter_fcs (bit 2), counter_set_id (bit 3); taken from the context.
  const auto rqc = context_in(call, kQueueCtxSize);
  const uint32_t mask = modify_bitmask(call);
  const bool counter_set_ok = counter_set_known(call.function().q_counters, get(rqc, rqc::kCounterSetId));
  if ((mask & 0x8) && !check(call, counter_set_ok, fw::kCheckParameter)) return;
  if (mask & 0x2) set(rq->context, Field{0x00, 28, 28}, get(rqc, Field{0x00, 28, 28}));
  if (mask & 0x4) set(rq->context, Field{0x00, 29, 29}, get(rqc, Field{0x00, 29, 29}));
  if (mask & 0x8) set(rq->context, rqc::kCounterSetId, get(rqc, rqc::kCounterSetId));
  if (*next == WqState::kReset) rq->consumer = 0;
  rq->state = *next;
  set(rq->context, kQState, uint32_t(*next));
}

void destroy_rq(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  FunctionContext& f = call.function();
  const uint32_t rqn = get(call.in(), kObjectId);
  EthReceiveQueue* rq = lookup_owned(call, f.eth.rqs, rqn, kCheckRq);
  if (rq == nullptr || !fw::not_in_use(call, rq->refs)) return;
  if (CompletionQueue* cq = f.resources.cqs.find(rq->cqn)) --cq->refs;
  if (ProtectionDomain* pd = f.resources.pds.find(rq->wq.pd)) --pd->refs;
  f.eth.rqs.erase(rqn);
}

void query_rq(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  EthReceiveQueue* rq = lookup_owned(call, call.function().eth.rqs, get(call.in(), kObjectId), kCheckRq);
  if (rq != nullptr) answer_context(call, rq->context);
}

// ---- SQ ----

constexpr uint32_t kModifySqRateLimit = 1u << 0, kModifySqQosQueueGroup = 1u << 2;  // modify_bitmask

// An SQ's packet pacing entry: 0 (no limit), or a set entry of the kernel's, one shared by every
// process, or the sender's own (another process's dedicated entry is not its to use).
bool check_rate_limit(CommandCall& call, uint32_t index) {
  if (index == 0) return true;
  const RateLimitEntry* entry = call.function().resources.rate_limits.find(index);
  return check(call,
               entry != nullptr && (entry->owner == kKernelUid || entry->owner == kSharedResourceUid ||
                                    fw::acts_for(call, entry->owner)),
               fw::kCheckParameter);
}

// An SQ's queue group (objects/scheduling_elements.h): 0 (none), or a queue group the sender may use.
bool check_queue_group(CommandCall& call, uint32_t id) {
  return check(call, fw::may_join_queue_group(call, id), fw::kCheckParameter);
}

void create_sq(CommandCall& call) {
  if (!fw::start(call, kQueueInSize)) return;
  FunctionContext& f = call.function();
  const auto sqc = context_in(call, kQueueCtxSize);
  const uint32_t cqn = get(sqc, kQCqn);
  const uint32_t tis_list = get(sqc, kSqTisListSize);
  const uint32_t tisn = tis_list == 0 ? 0 : get(sqc, kSqTis0);
  if (!check(call, get(sqc, kQState) == uint32_t(WqState::kReset), kCheckTransition) ||
      !check(call, get(sqc, kHairpin) == 0 && tis_list <= 1, fw::kCheckParameter) ||
      !check_rate_limit(call, get(sqc, sqc::kRateLimitIndex)) ||
      !check_queue_group(call, get(sqc, sqc::kQosQueueGroupId)))
    return;
  // Raw Ethernet from a user context: only one created with RAW_TX.
  const UserContext* sender = call.uid() == kKernelUid ? nullptr : f.resources.user_contexts.find(call.uid());
  if (!check(call, sender == nullptr || (sender->cap & kUctxCapRawTx) != 0, fw::kCheckUid)) return;
  CompletionQueue* cq = lookup(call, f.resources.cqs, cqn, fw::kCheckCq);
  if (cq == nullptr) return;
  TransportInterfaceSend* tis = nullptr;
  if (tis_list == 1 && (tis = lookup(call, f.eth.tises, tisn, kCheckTis)) == nullptr) return;
  auto ring = parse_wq(call, true);
  if (!ring) return;
  EthSendQueue sq;
  copy_context(sqc, sq.context);
  sq.cqn = cqn;
  sq.tisn = tisn;
  sq.wq = std::move(*ring);
  const uint32_t pd = sq.wq.pd;
  const uint32_t sqn = fw::insert(call, f.eth.sqs, 16, std::move(sq));
  if (sqn == 0) return;
  ++cq->refs;
  ++f.resources.pds.find(pd)->refs;
  if (tis != nullptr) ++tis->refs;
  answer_object(call, sqn);
}

void modify_sq(CommandCall& call) {
  if (!fw::start(call, kQueueInSize)) return;
  EthSendQueue* sq = lookup_owned(call, call.function().eth.sqs, get(call.in(), kObjectId), fw::kCheckLookup);
  if (sq == nullptr) return;
  const auto next = next_state(call, sq->state);
  if (!next) return;
  const auto sqc = context_in(call, kQueueCtxSize);
  const uint32_t mask = modify_bitmask(call);
  if (((mask & kModifySqRateLimit) != 0 && !check_rate_limit(call, get(sqc, sqc::kRateLimitIndex))) ||
      ((mask & kModifySqQosQueueGroup) != 0 && !check_queue_group(call, get(sqc, sqc::kQosQueueGroupId))))
    return;
  if ((mask & kModifySqRateLimit) != 0) set(sq->context, sqc::kRateLimitIndex, get(sqc, sqc::kRateLimitIndex));
  if ((mask & kModifySqQosQueueGroup) != 0) set(sq->context, sqc::kQosQueueGroupId, get(sqc, sqc::kQosQueueGroupId));
  if (*next == WqState::kReset) sq->consumer = 0;  // the driver restarts its counters at 0 too
  sq->state = *next;
  set(sq->context, kQState, uint32_t(*next));
}

void destroy_sq(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  FunctionContext& f = call.function();
  const uint32_t sqn = get(call.in(), kObjectId);
  EthSendQueue* sq = lookup_owned(call, f.eth.sqs, sqn, fw::kCheckLookup);
  if (sq == nullptr) return;
  if (CompletionQueue* cq = f.resources.cqs.find(sq->cqn)) --cq->refs;
  if (ProtectionDomain* pd = f.resources.pds.find(sq->wq.pd)) --pd->refs;
  if (TransportInterfaceSend* tis = f.eth.tises.find(sq->tisn)) --tis->refs;
  f.eth.sqs.erase(sqn);
}

void query_sq(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  EthSendQueue* sq = lookup_owned(call, call.function().eth.sqs, get(call.in(), kObjectId), fw::kCheckLookup);
  if (sq != nullptr) answer_context(call, sq->context);
}

// ---- TIS ----

void create_tis(CommandCall& call) {
  if (!fw::start(call, kCtx + kTiscSize)) return;
  FunctionContext& f = call.function();
  const auto tisc = context_in(call, kTiscSize);
  TransportInterfaceSend tis;
  tis.td = get(tisc, kTisTd);
  const uint32_t pd = get(tisc, kTisPd);
  if (!check_td(call, tis.td) || (pd != 0 && !lookup(call, f.resources.pds, pd, fw::kCheckPd))) return;
  copy_context(tisc, tis.context);
  const uint32_t tisn = fw::insert(call, f.eth.tises, 16, std::move(tis));
  if (tisn != 0) answer_object(call, tisn);
}

void modify_tis(CommandCall& call) {
  if (!fw::start(call, kCtx + kTiscSize)) return;
  TransportInterfaceSend* tis = lookup_owned(call, call.function().eth.tises, get(call.in(), kObjectId), kCheckTis);
  if (tis == nullptr) return;
  // prio (bit 0), lag_tx_port_affinity (bit 1), strict_lag_tx_port_affinity (bit 2): all in dword 0.
  const auto tisc = context_in(call, kTiscSize);
  const uint32_t mask = modify_bitmask(call);
  if (mask & 0x1) set(tis->context, Field{0x00, 19, 16}, get(tisc, Field{0x00, 19, 16}));
  if (mask & 0x2) set(tis->context, Field{0x00, 27, 24}, get(tisc, Field{0x00, 27, 24}));
  if (mask & 0x4) set(tis->context, Field{0x00, 31, 31}, get(tisc, Field{0x00, 31, 31}));
}

void destroy_tis(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  const uint32_t tisn = get(call.in(), kObjectId);
  TransportInterfaceSend* tis = lookup_owned(call, call.function().eth.tises, tisn, kCheckTis);
  if (tis == nullptr || !fw::not_in_use(call, tis->refs)) return;
  call.function().eth.tises.erase(tisn);
}

void query_tis(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  TransportInterfaceSend* tis = lookup_owned(call, call.function().eth.tises, get(call.in(), kObjectId), kCheckTis);
  if (tis != nullptr) answer_context(call, tis->context);
}

// ---- RQT ----

// Reads and validates an RQ list of `size` entries at kRqtList.
std::optional<std::vector<uint32_t>> parse_rq_list(CommandCall& call, uint32_t size) {
  if (!check(call, call.in().size() >= kRqtList + uint64_t(size) * 4, kCheckListSize, CommandStatus::kBadInputLength))
    return std::nullopt;
  std::vector<uint32_t> rqns(size);
  for (uint32_t i = 0; i < size; ++i) {
    rqns[i] = get(call.in(), Field{kRqtList + 4 * i, 23, 0});
    if (lookup(call, call.function().eth.rqs, rqns[i], kCheckRq) == nullptr) return std::nullopt;
  }
  return rqns;
}

void reference_rqs(FunctionContext& f, const std::vector<uint32_t>& rqns, int delta) {
  for (uint32_t rqn : rqns)
    if (EthReceiveQueue* rq = f.eth.rqs.find(rqn)) rq->refs += uint32_t(delta);
}

void create_rqt(CommandCall& call) {
  if (!fw::start(call, kRqtList)) return;
  FunctionContext& f = call.function();
  const auto rqtc = context_in(call, kRqtcSize);
  const uint32_t max_size = get(rqtc, kRqtMaxSize), actual = get(rqtc, kRqtActualSize);
  if (!check(call, max_size >= 1 && max_size <= kMaxRqtSize && actual <= max_size, kCheckListSize)) return;
  auto rqns = parse_rq_list(call, actual);
  if (!rqns) return;
  RqTable rqt;
  copy_context(rqtc, rqt.context);
  rqt.max_size = max_size;
  rqt.rqns = std::move(*rqns);
  const std::vector<uint32_t> referenced = rqt.rqns;
  const uint32_t rqtn = fw::insert(call, f.eth.rqts, 16, std::move(rqt));
  if (rqtn == 0) return;
  reference_rqs(f, referenced, +1);
  answer_object(call, rqtn);
}

void modify_rqt(CommandCall& call) {
  if (!fw::start(call, kRqtList)) return;
  FunctionContext& f = call.function();
  RqTable* rqt = lookup_owned(call, f.eth.rqts, get(call.in(), kObjectId), kCheckRqt);
  if (rqt == nullptr || (modify_bitmask(call) & kModifyRqtList) == 0) return;
  const uint32_t actual = get(context_in(call, kRqtcSize), kRqtActualSize);
  if (!check(call, actual <= rqt->max_size, kCheckListSize)) return;
  auto rqns = parse_rq_list(call, actual);
  if (!rqns) return;
  reference_rqs(f, rqt->rqns, -1);
  rqt->rqns = std::move(*rqns);
  reference_rqs(f, rqt->rqns, +1);
  set(rqt->context, kRqtActualSize, actual);
}

void destroy_rqt(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  FunctionContext& f = call.function();
  const uint32_t rqtn = get(call.in(), kObjectId);
  RqTable* rqt = lookup_owned(call, f.eth.rqts, rqtn, kCheckRqt);
  if (rqt == nullptr || !fw::not_in_use(call, rqt->refs)) return;
  reference_rqs(f, rqt->rqns, -1);
  f.eth.rqts.erase(rqtn);
}

void query_rqt(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  RqTable* rqt = lookup_owned(call, call.function().eth.rqts, get(call.in(), kObjectId), kCheckRqt);
  if (rqt == nullptr || !call.need_output(kRqtList + uint32_t(rqt->rqns.size()) * 4) || !answer_context(call, rqt->context))
    return;
  for (size_t i = 0; i < rqt->rqns.size(); ++i) set(call.out(), Field{uint32_t(kRqtList + 4 * i), 23, 0}, rqt->rqns[i]);
}

// ---- TIR ----

// Validates the dispatch of a tirc and returns (inline_rqn, rqt); the referenced object is not
// yet counted.
bool check_tir_target(CommandCall& call, std::span<const uint8_t> tirc, TransportInterfaceReceive& tir) {
  FunctionContext& f = call.function();
  const uint32_t disp = get(tirc, kTirDispType);
  if (!check(call, disp <= uint32_t(TirDispatch::kIndirect), fw::kCheckParameter)) return false;
  tir.dispatch = TirDispatch(disp);
  if (tir.dispatch == TirDispatch::kDirect) {
    tir.inline_rqn = get(tirc, kTirInlineRqn);
    return lookup(call, f.eth.rqs, tir.inline_rqn, kCheckRq) != nullptr;
  }
  tir.rqt = get(tirc, kTirIndirectTable);
  return lookup(call, f.eth.rqts, tir.rqt, kCheckRqt) != nullptr;
}

void reference_tir_target(FunctionContext& f, const TransportInterfaceReceive& tir, int delta) {
  if (tir.dispatch == TirDispatch::kDirect) {
    if (EthReceiveQueue* rq = f.eth.rqs.find(tir.inline_rqn)) rq->refs += uint32_t(delta);
  } else if (RqTable* rqt = f.eth.rqts.find(tir.rqt)) {
    rqt->refs += uint32_t(delta);
  }
}

void create_tir(CommandCall& call) {
  if (!fw::start(call, kCtx + kTircSize)) return;
  FunctionContext& f = call.function();
  const auto tirc = context_in(call, kTircSize);
  TransportInterfaceReceive tir;
  tir.td = get(tirc, kTirTd);
  // Transport domain 0 is none: DevX users create TIRs without one (rdma-core's DR tests steer
  // into such a TIR), and no domain's self-loopback rule then applies to it.
  if ((tir.td != 0 && !check_td(call, tir.td)) || !check_tir_target(call, tirc, tir)) return;
  copy_context(tirc, tir.context);
  const TransportInterfaceReceive target = tir;
  const uint32_t tirn = fw::insert(call, f.eth.tirs, 16, std::move(tir));
  if (tirn == 0) return;
  reference_tir_target(f, target, +1);
  answer_object(call, tirn);
  // Where mlx5 DR's steering entries name this TIR (create_tir_out icm_address_39_32 and _31_0;
  // bits 63:40 are 0), only when the function offers software steering.
  if (f.identity.sw_icm) {
    const uint64_t icm = steering::tir_address(tirn);
    set(call.out(), Field{0x08, 31, 24}, uint32_t(icm >> 32));
    set(call.out(), Field{0x0c, 31, 0}, uint32_t(icm));
  }
}

void modify_tir(CommandCall& call) {
  if (!fw::start(call, kCtx + kTircSize)) return;
  TransportInterfaceReceive* tir = lookup_owned(call, call.function().eth.tirs, get(call.in(), kObjectId), fw::kCheckLookup);
  if (tir == nullptr) return;
  const auto tirc = context_in(call, kTircSize);
  const uint32_t mask = modify_bitmask(call);
  auto copy_bytes = [&](uint32_t from, uint32_t to) {
    std::copy(tirc.begin() + from, tirc.begin() + to, tir->context.begin() + from);
  };
  if (mask & kTirModifyLro) copy_bytes(0x10, 0x14);  // packet merge: lro timeout, mask, max payload
  if (mask & kTirModifyHash) {                       // symmetric, hash fn, Toeplitz key, field selectors
    set(tir->context, Field{0x20, 31, 31}, get(tirc, Field{0x20, 31, 31}));
    set(tir->context, Field{0x24, 31, 28}, get(tirc, Field{0x24, 31, 28}));
    copy_bytes(0x28, 0x58);
  }
  if (mask & kTirModifySelfLb) set(tir->context, kTirSelfLbBlock, get(tirc, kTirSelfLbBlock));
}

void destroy_tir(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  FunctionContext& f = call.function();
  const uint32_t tirn = get(call.in(), kObjectId);
  TransportInterfaceReceive* tir = lookup_owned(call, f.eth.tirs, tirn, fw::kCheckLookup);
  if (tir == nullptr || !fw::not_in_use(call, tir->refs)) return;
  reference_tir_target(f, *tir, -1);
  f.eth.tirs.erase(tirn);
}

void query_tir(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  TransportInterfaceReceive* tir = lookup_owned(call, call.function().eth.tirs, get(call.in(), kObjectId), fw::kCheckLookup);
  if (tir != nullptr) answer_context(call, tir->context);
}

}  // namespace

void register_eth_commands(CommandTable& table) {
  table.add(kCreateTir, "CREATE_TIR", create_tir, Senders::kUser);
  table.add(kModifyTir, "MODIFY_TIR", modify_tir, Senders::kUser);
  table.add(kDestroyTir, "DESTROY_TIR", destroy_tir, Senders::kUser);
  table.add(kQueryTir, "QUERY_TIR", query_tir, Senders::kUser);
  table.add(kCreateSq, "CREATE_SQ", create_sq, Senders::kUser);
  table.add(kModifySq, "MODIFY_SQ", modify_sq, Senders::kUser);
  table.add(kDestroySq, "DESTROY_SQ", destroy_sq, Senders::kUser);
  table.add(kQuerySq, "QUERY_SQ", query_sq, Senders::kUser);
  table.add(kCreateRq, "CREATE_RQ", create_rq, Senders::kUser);
  table.add(kModifyRq, "MODIFY_RQ", modify_rq, Senders::kUser);
  table.add(kDestroyRq, "DESTROY_RQ", destroy_rq, Senders::kUser);
  table.add(kQueryRq, "QUERY_RQ", query_rq, Senders::kUser);
  table.add(kCreateTis, "CREATE_TIS", create_tis, Senders::kUser);
  table.add(kModifyTis, "MODIFY_TIS", modify_tis, Senders::kUser);
  table.add(kDestroyTis, "DESTROY_TIS", destroy_tis, Senders::kUser);
  table.add(kQueryTis, "QUERY_TIS", query_tis, Senders::kUser);
  table.add(kCreateRqt, "CREATE_RQT", create_rqt, Senders::kUser);
  table.add(kModifyRqt, "MODIFY_RQT", modify_rqt, Senders::kUser);
  table.add(kDestroyRqt, "DESTROY_RQT", destroy_rqt, Senders::kUser);
  table.add(kQueryRqt, "QUERY_RQT", query_rqt, Senders::kUser);
  register_flow_commands(table);
}

}  // namespace hcaemu::model
