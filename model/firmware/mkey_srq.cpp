// Memory keys and shared receive queues (mlx5-device-bringup.md sections 6.5 and 6.6):
// CREATE/QUERY/DESTROY_MKEY (PA and MTT access modes; the MTT list is kept for the data path),
// SRQ (ISSI 0), XRC SRQ and RMP (ISSI 1) with their DESTROY/QUERY/ARM/MODIFY. The SRQ kinds share
// one number space, as the driver keeps them in one table.
#include <algorithm>

#include "common/log.h"
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"
#include "model/prm/mkc_fields.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kCreateMkey = 0x200, kQueryMkey = 0x201, kDestroyMkey = 0x202, kQuerySpecialContexts = 0x203;
constexpr uint16_t kCreateSrq = 0x700, kDestroySrq = 0x701, kQuerySrq = 0x702, kArmRq = 0x703;
constexpr uint16_t kCreateXrcSrq = 0x705, kDestroyXrcSrq = 0x706, kQueryXrcSrq = 0x707, kArmXrcSrq = 0x708;
constexpr uint16_t kCreateRmp = 0x90c, kModifyRmp = 0x90d, kDestroyRmp = 0x90e, kQueryRmp = 0x90f;

constexpr Field kObjectNumber{0x08, 23, 0};  // mkey_index / srqn / xrc_srqn / rmpn, in and out
constexpr uint32_t kPas = 0x110;             // klm_pas_mtt[] / pas[] of every create here

// create_mkey_in / mkc.
constexpr uint32_t kMkc = 0x10, kMkcSize = 0x40;
constexpr Field kTranslationsActualSize{0x60, 31, 0};
constexpr uint16_t kCheckMemicRange = 0x30;  // a MEMIC key outside the device memory window
constexpr uint16_t kCheckSwIcmRange = 0x31;  // a SW ICM key outside a placed steering ICM range

// srqc (create_srq_in at 0x10) and xrc_srqc (create_xrc_srq_in at 0x10).
constexpr uint32_t kSrqc = 0x10, kSrqcSize = 0x40;
namespace srqc {
constexpr Field kLogSize{0x00, 27, 24};
constexpr Field kLogStride{0x04, 26, 24};
constexpr Field kXrcd{0x04, 23, 0};
constexpr Field kPageOffset{0x08, 31, 26};
constexpr Field kCqn{0x08, 23, 0};
constexpr Field kLogPageSize{0x10, 29, 24};
constexpr Field kPd{0x18, 23, 0};
constexpr uint32_t kDbrAddr = 0x28;          // srqc: BE64
constexpr Field kDbrHigh{0x28, 31, 0};       // xrc_srqc: split address
constexpr Field kDbrLow{0x2c, 31, 2};
}  // namespace srqc

// create_rmp_in: rmpc at 0x20, its wq at 0x50.
constexpr uint32_t kRmpc = 0x20, kRmpcSize = 0xf0, kRmpWq = 0x50;
namespace wq {
constexpr Field kPageOffset{0x04, 20, 16};
constexpr Field kPd{0x08, 23, 0};
constexpr uint32_t kDbrAddr = 0x10;
constexpr Field kLogStride{0x20, 19, 16};  // absolute: stride = 1 << n
constexpr Field kLogPageSize{0x20, 12, 8};  // 4 KiB << n
constexpr Field kLogSize{0x20, 4, 0};
}  // namespace wq

// --- MKEY ---

// A device memory MR (ibv_reg_dm_mr): start_addr is a BAR0 offset inside the window; the key is
// zero-based (SGEs and RETHs name offsets into the MR). Length 0 is a key that grants no byte (the
// suite registers one), as for any MR.
bool place_memic_key(CommandCall& call, Mkey& mkey) {
  const DeviceMemory& dm = call.function().device_memory;
  if (mkey.free || mkey.length64 || !dm.contains(mkey.start, mkey.length)) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckMemicRange));
    return false;
  }
  mkey.device_offset = mkey.start - dm.window().bar_offset;
  mkey.start = 0;
  return true;
}

// A steering ICM MR (ibv_reg_dm_mr over a DM of steering or header-modify type): start_addr is an
// ICM address inside a placed SW_ICM range; the key is zero-based as a MEMIC one (DR's RDMA WRITEs
// name offsets into the MR). Only with FunctionIdentity::sw_icm.
bool place_sw_icm_key(CommandCall& call, Mkey& mkey) {
  const FunctionContext& f = call.function();
  const bool ok = f.identity.sw_icm && !mkey.free && !mkey.length64 && f.sw_icm.placed(mkey.start, mkey.length);
  if (!ok) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckSwIcmRange));
    return false;
  }
  mkey.device_offset = mkey.start;
  mkey.start = 0;
  return true;
}

// An MTT-mode key's list (the command's PAS, charged to the translation budget) and the room a UMR
// may load later; false when the command failed.
bool take_mtt(CommandCall& call, std::span<const uint8_t> ctx, Mkey& mkey) {
  if (mkey.length64 || mkey.log_page_size < PageList::kMinLogPageSize) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckPas + uint16_t(PageListError::kPageSize)));
    return false;
  }
  const uint64_t declared = uint64_t(get(call.in(), kTranslationsActualSize)) * 2;  // octwords of 2 entries
  if (declared > pas_of(call, kPas).size() / 8) {
    call.fail(CommandStatus::kBadInputLength, syndrome(kCreateMkey, kCheckPas));
    return false;
  }
  const uint64_t needed = mkey.length == 0 ? 0
                                           : ((mkey.start + mkey.length - 1) >> mkey.log_page_size) -
                                                 (mkey.start >> mkey.log_page_size) + 1;
  if (!mkey.free && declared < needed) {  // a usable key must translate its whole range
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckPas + uint16_t(PageListError::kTooShort)));
    return false;
  }
  auto charge = take_translation(call, declared);  // taken before reading a single entry
  if (!charge) return false;
  mkey.mtt_charge = std::move(*charge);
  // A key the driver loads by UMR (the MKEY cache, mlx5r_umr_update_mr_pas) declares its room in
  // the mkc and is created with none or part of it; loaded entries are charged as they come. The
  // room is kept in 64-byte units (8 entries), as UMR loads are (MLX5_IB_UMR_XLT_ALIGNMENT): the
  // driver pads a list's tail with zeroes to the unit.
  constexpr uint64_t kUmrUnit = 8;
  const uint64_t room = uint64_t(get(ctx, mkc::kTranslationsOctwordSize)) * 2;
  mkey.mtt_capacity = mkey.umr_en ? std::max<uint64_t>(declared, (room + kUmrUnit - 1) / kUmrUnit * kUmrUnit)
                                  : declared;
  mkey.mtt.reserve(declared);
  for (uint64_t i = 0; i < declared; ++i) {
    const uint64_t entry = get64(call.in(), uint32_t(kPas + 8 * i));
    if (!Mkey::mtt_entry_aligned(entry, mkey.log_page_size)) {
      call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckPas + uint16_t(PageListError::kMisaligned)));
      return false;
    }
    mkey.mtt.push_back(entry);
  }
  return true;
}

void create_mkey(CommandCall& call) {
  if (!start(call, kPas)) return;
  Resources& r = call.function().resources;
  const auto ctx = sub(call.in(), kMkc, kMkcSize);
  Mkey mkey;
  mkey.access_mode = uint8_t((get(ctx, mkc::kAccessMode42) << 2) | get(ctx, mkc::kAccessMode10));
  mkey.pd = get(ctx, mkc::kPd);
  mkey.variant = uint8_t(get(ctx, mkc::kVariant));
  mkey.free = get(ctx, mkc::kFree);
  mkey.umr_en = get(ctx, mkc::kUmrEn);
  mkey.remote_invalidate = get(ctx, mkc::kEnRinval);
  mkey.atomic = get(ctx, mkc::kAtomic);
  mkey.remote_write = get(ctx, mkc::kRemoteWrite);
  mkey.remote_read = get(ctx, mkc::kRemoteRead);
  mkey.local_write = get(ctx, mkc::kLocalWrite);
  mkey.local_read = get(ctx, mkc::kLocalRead);
  mkey.length64 = get(ctx, mkc::kLength64);
  mkey.start = get64(ctx, mkc::kStartAddr);
  mkey.length = get64(ctx, mkc::kLen);
  mkey.log_page_size = get(ctx, mkc::kLogPageSize);
  // A signature key is a KLM key with room for the 64-byte BSF its configuring UMR loads.
  mkey.bsf_capable = get(ctx, mkc::kBsfEn) != 0;
  mkey.sigerr_expected = uint8_t(get(ctx, mkc::kExpectedSigerrCount));
  // KLM only for a memory window (ibv_alloc_mw: free, umr_en, bound later by a UMR WQE); KSM only
  // for an implicit ODP MR (the driver's MKEY cache: free, umr_en, its entries loaded by UMR, one per
  // octoword of room).
  const bool window = mkey.access_mode == Mkey::kAccessKlm && mkey.free && mkey.umr_en;
  const bool ksm = mkey.access_mode == Mkey::kAccessKsm && mkey.free && mkey.umr_en;
  if (ksm) mkey.mtt_capacity = get(ctx, mkc::kTranslationsOctwordSize);
  if (window) {  // nothing to translate until bound
    mkey.length = 0;
    mkey.length64 = false;
  }
  const bool memic = mkey.access_mode == Mkey::kAccessMemic, icm = mkey.access_mode == Mkey::kAccessSwIcm;
  if (mkey.bsf_capable && (!window || get(ctx, mkc::kBsfOctwordSize) < kBsfBytes / 16)) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckParameter));
    return;
  }
  if (mkey.access_mode != Mkey::kAccessPa && mkey.access_mode != Mkey::kAccessMtt && !window && !ksm && !memic &&
      !icm) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckParameter));
    return;
  }
  if ((memic && !place_memic_key(call, mkey)) || (icm && !place_sw_icm_key(call, mkey))) return;
  if (!mkey.length64 && mkey.length > ~mkey.start) {  // the region wraps the address space
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateMkey, kCheckSize));
    return;
  }
  ProtectionDomain* pd = lookup(call, r.pds, mkey.pd, kCheckPd);
  if (pd == nullptr) return;
  if (mkey.access_mode == Mkey::kAccessMtt && !take_mtt(call, ctx, mkey)) return;
  std::copy(ctx.begin(), ctx.end(), mkey.context.begin());
  if (uint32_t index = insert(call, r.mkeys, r.limits.log_max_mkey, std::move(mkey))) {
    ++pd->refs;
    set(call.out(), kObjectNumber, index);
  }
}

void query_mkey(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize, kMkc + kMkcSize)) return;
  Mkey* mkey = lookup_owned(call, call.function().resources.mkeys, get(call.in(), kObjectNumber), kCheckLookup);
  if (mkey == nullptr) return;
  auto out = sub(call.out(), kMkc, kMkcSize);
  std::copy(mkey->context.begin(), mkey->context.end(), out.begin());
}

// query_special_contexts_out: the null MKEY (mlx5_ib's for implicit ODP MRs, kNullMkey). No dump
// fill or reserved lkey is offered (caps dump_fill_mkey = 0): they stay 0.
constexpr Field kSpecialNullMkey{0x10, 31, 0};
constexpr uint32_t kSpecialContextsOutBytes = 0x20;

void query_special_contexts(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize, kSpecialContextsOutBytes)) return;
  set(call.out(), kSpecialNullMkey, kNullMkey);
}

void destroy_mkey(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  const uint32_t index = get(call.in(), kObjectNumber);
  Mkey* mkey = lookup_owned(call, r.mkeys, index, kCheckLookup);
  if (mkey == nullptr) return;
  if (ProtectionDomain* pd = r.pds.find(mkey->pd)) --pd->refs;
  r.mkeys.erase(index);  // its MTT charge gives the entries back
}

// --- SRQ / XRC SRQ / RMP ---

struct SrqRequest {
  SrqKind kind;
  std::span<const uint8_t> context;
  uint32_t log_size, log_stride, pd, cqn, xrcd, log_page_size, page_offset;
  uint64_t dbr_addr;
};

void create_srq_common(CommandCall& call, const SrqRequest& req) {
  Resources& r = call.function().resources;
  if (!check_log_size(call, req.log_size, r.limits.log_max_srq_sz) || !check_dbr(call, req.dbr_addr)) return;
  ProtectionDomain* pd = lookup(call, r.pds, req.pd, kCheckPd);
  if (pd == nullptr) return;
  CompletionQueue* cq = nullptr;
  if (req.cqn != 0 && (cq = lookup(call, r.cqs, req.cqn, kCheckCq)) == nullptr) return;
  XrcDomain* xrcd = nullptr;
  if ((req.xrcd != 0 || req.kind == SrqKind::kXrcSrq) && (xrcd = lookup(call, r.xrcds, req.xrcd, kCheckXrcd)) == nullptr)
    return;
  auto buffer = queue_buffer(call, kPas, req.log_page_size, req.page_offset,
                             (uint64_t(1) << req.log_size) << (4 + req.log_stride));
  if (!buffer) return;
  SharedReceiveQueue srq;
  srq.kind = req.kind;
  srq.context.assign(req.context.begin(), req.context.end());
  srq.pd = req.pd;
  srq.cqn = cq != nullptr ? req.cqn : 0;
  srq.xrcd = xrcd != nullptr ? req.xrcd : 0;
  srq.log_size = req.log_size;
  srq.log_stride = req.log_stride;
  srq.dbr_addr = req.dbr_addr;
  srq.buffer = std::move(*buffer);
  if (uint32_t srqn = insert(call, r.srqs, r.limits.log_max_srq, std::move(srq))) {
    ++pd->refs;
    if (cq != nullptr) ++cq->refs;
    if (xrcd != nullptr) ++xrcd->refs;
    set(call.out(), kObjectNumber, srqn);
  }
}

SharedReceiveQueue* find_srq(CommandCall& call, SrqKind kind) {
  SharedReceiveQueue* srq = lookup_owned(call, call.function().resources.srqs, get(call.in(), kObjectNumber), kCheckLookup);
  if (srq != nullptr && srq->kind != kind) {  // a number of another kind of SRQ
    call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), kCheckLookup));
    return nullptr;
  }
  return srq;
}

void destroy_srq_common(CommandCall& call, SrqKind kind) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  SharedReceiveQueue* srq = find_srq(call, kind);
  if (srq == nullptr || !not_in_use(call, srq->refs)) return;
  if (ProtectionDomain* pd = r.pds.find(srq->pd)) --pd->refs;
  if (CompletionQueue* cq = srq->cqn != 0 ? r.cqs.find(srq->cqn) : nullptr) --cq->refs;
  if (XrcDomain* xrcd = srq->xrcd != 0 ? r.xrcds.find(srq->xrcd) : nullptr) --xrcd->refs;
  r.srqs.erase(get(call.in(), kObjectNumber));
}

void query_srq_common(CommandCall& call, SrqKind kind, uint32_t context_offset) {
  if (!start(call, mbox::kHeaderSize, context_offset)) return;
  SharedReceiveQueue* srq = find_srq(call, kind);
  if (srq == nullptr) return;
  auto out = call.out();
  for (size_t i = 0; i < srq->context.size() && context_offset + i < out.size(); ++i)
    out[context_offset + i] = srq->context[i];
}

// A limit beyond what the queue holds could never be reached from above: refused.
void arm_limit(CommandCall& call, SharedReceiveQueue& srq, uint32_t lwm) {
  if (lwm > (1u << srq.log_size)) return call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckParameter));
  srq.set_limit(lwm);
}

// ARM_RQ / ARM_XRC_SRQ (arm_rq_in: the number at 0x08, lwm at 0x0c): arms the SRQ limit event
// (rdma/responder.cpp raises it). ARM_RQ's op_mod names the queue kind: 1 = SRQ.
constexpr Field kArmLwm{0x0c, 15, 0};
void arm_srq_common(CommandCall& call, SrqKind kind) {
  if (!start(call, 0x10)) return;
  SharedReceiveQueue* srq = find_srq(call, kind);
  if (srq == nullptr) return;
  arm_limit(call, *srq, get(call.in(), kArmLwm));
}

// MODIFY_RMP (modify_rmp_in: the RMP at 0x08, rmp_bitmask at 0x10, rmpc at 0x20): with the bitmask's
// lwm bit, the limit in rmpc.wq.lwm is armed, as ARM_RQ does for an SRQ (mlx5_ib arms a basic SRQ so).
constexpr Field kRmpBitmaskLwm{0x14, 0, 0};
void modify_rmp(CommandCall& call) {
  if (!start(call, kRmpc + kRmpcSize)) return;
  SharedReceiveQueue* rmp = find_srq(call, SrqKind::kRmp);
  if (rmp == nullptr || get(call.in(), kRmpBitmaskLwm) == 0) return;
  arm_limit(call, *rmp, get(sub(call.in(), kRmpc, kRmpcSize), SharedReceiveQueue::lwm_field(SrqKind::kRmp)));
}

void create_srq(CommandCall& call) {
  if (!start(call, kPas)) return;
  const auto ctx = sub(call.in(), kSrqc, kSrqcSize);
  create_srq_common(call, SrqRequest{SrqKind::kSrq, ctx, get(ctx, srqc::kLogSize), get(ctx, srqc::kLogStride),
                                     get(ctx, srqc::kPd), get(ctx, srqc::kCqn), get(ctx, srqc::kXrcd),
                                     get(ctx, srqc::kLogPageSize), get(ctx, srqc::kPageOffset),
                                     get64(ctx, srqc::kDbrAddr)});
}

void create_xrc_srq(CommandCall& call) {
  if (!start(call, kPas)) return;
  const auto ctx = sub(call.in(), kSrqc, kSrqcSize);
  const uint64_t dbr = (uint64_t(get(ctx, srqc::kDbrHigh)) << 32) | (uint64_t(get(ctx, srqc::kDbrLow)) << 2);
  create_srq_common(call, SrqRequest{SrqKind::kXrcSrq, ctx, get(ctx, srqc::kLogSize), get(ctx, srqc::kLogStride),
                                     get(ctx, srqc::kPd), get(ctx, srqc::kCqn), get(ctx, srqc::kXrcd),
                                     get(ctx, srqc::kLogPageSize), get(ctx, srqc::kPageOffset), dbr});
}

void create_rmp(CommandCall& call) {
  if (!start(call, kPas)) return;
  const auto ctx = sub(call.in(), kRmpc, kRmpcSize);
  const auto w = sub(call.in(), kRmpWq, kPas - kRmpWq);
  const uint32_t log_stride = get(w, wq::kLogStride);
  if (log_stride < 4) {  // receive WQEs are at least one 16-byte data segment
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateRmp, kCheckParameter));
    return;
  }
  create_srq_common(call, SrqRequest{SrqKind::kRmp, ctx, get(w, wq::kLogSize), log_stride - 4, get(w, wq::kPd), 0, 0,
                                     get(w, wq::kLogPageSize), get(w, wq::kPageOffset), get64(w, wq::kDbrAddr)});
}

}  // namespace

// Basic and XRC SRQs are the kernel's only (mlx5_ib makes a process's SRQ an RMP, and its XRC SRQs
// with uid 0): a user context's CREATE_SRQ would bring a PAS the user wrote.
void register_mkey_srq_commands(CommandTable& table) {
  table.add(kCreateMkey, "CREATE_MKEY", create_mkey, Senders::kUser);
  table.add(kQueryMkey, "QUERY_MKEY", query_mkey, Senders::kUser);
  table.add(kDestroyMkey, "DESTROY_MKEY", destroy_mkey, Senders::kUser);
  register_psv_commands(table);
  table.add(kQuerySpecialContexts, "QUERY_SPECIAL_CONTEXTS", query_special_contexts);
  table.add(kCreateSrq, "CREATE_SRQ", create_srq);
  table.add(kDestroySrq, "DESTROY_SRQ", [](CommandCall& c) { destroy_srq_common(c, SrqKind::kSrq); });
  table.add(kQuerySrq, "QUERY_SRQ", [](CommandCall& c) { query_srq_common(c, SrqKind::kSrq, kSrqc); });
  table.add(kArmRq, "ARM_RQ", [](CommandCall& c) { arm_srq_common(c, SrqKind::kSrq); });
  table.add(kCreateXrcSrq, "CREATE_XRC_SRQ", create_xrc_srq);
  table.add(kDestroyXrcSrq, "DESTROY_XRC_SRQ", [](CommandCall& c) { destroy_srq_common(c, SrqKind::kXrcSrq); });
  table.add(kQueryXrcSrq, "QUERY_XRC_SRQ", [](CommandCall& c) { query_srq_common(c, SrqKind::kXrcSrq, kSrqc); });
  table.add(kArmXrcSrq, "ARM_XRC_SRQ", [](CommandCall& c) { arm_srq_common(c, SrqKind::kXrcSrq); });
  table.add(kCreateRmp, "CREATE_RMP", create_rmp, Senders::kUser);
  table.add(kModifyRmp, "MODIFY_RMP", modify_rmp, Senders::kUser);
  table.add(kDestroyRmp, "DESTROY_RMP", [](CommandCall& c) { destroy_srq_common(c, SrqKind::kRmp); }, Senders::kUser);
  table.add(kQueryRmp, "QUERY_RMP", [](CommandCall& c) { query_srq_common(c, SrqKind::kRmp, kRmpc); }, Senders::kUser);
}

}  // namespace hcaemu::model
