// Resource commands (mlx5-device-bringup.md sections 4.1 rows 19-23 and 6.1-6.3): UAR, PD,
// transport domain, XRCD, EQ and CQ. MKEY/SRQ/RMP live in firmware/mkey_srq.cpp, QPs in firmware/qp.cpp; this
// file registers all of them. Objects live in the issuing function's tables only, so a number
// from another function (or a stale one) finds nothing and gets BAD_RESOURCE.
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"
#include "model/firmware/umem.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kAllocPd = 0x800, kDeallocPd = 0x801, kAllocUar = 0x802, kDeallocUar = 0x803;
constexpr uint16_t kAllocXrcd = 0x80e, kDeallocXrcd = 0x80f;
constexpr uint16_t kAllocTransportDomain = 0x816, kDeallocTransportDomain = 0x817;
constexpr uint16_t kCreateEq = 0x301, kDestroyEq = 0x302, kQueryEq = 0x303, kGenEqe = 0x304;
constexpr uint16_t kCreateCq = 0x400, kDestroyCq = 0x401, kQueryCq = 0x402, kModifyCq = 0x403;

// The object number of ALLOC_*/DEALLOC_*/CREATE_CQ/DESTROY_* (in and out at 0x08 [23:0]).
constexpr Field kObjectNumber{0x08, 23, 0};
constexpr Field kEqNumber{0x08, 7, 0};

// eqc (create_eq_in at 0x10).
constexpr uint32_t kEqc = 0x10, kEqcSize = 0x40;
namespace eqc {
constexpr Field kPageOffset{0x08, 11, 6};
constexpr Field kLogEqSize{0x0c, 28, 24};
constexpr Field kUarPage{0x0c, 23, 0};
constexpr Field kIntr{0x14, 11, 0};
constexpr Field kLogPageSize{0x18, 28, 24};
constexpr Field kConsumerCounter{0x28, 23, 0};
constexpr Field kProducerCounter{0x2c, 23, 0};
}  // namespace eqc
constexpr uint32_t kEventBitmask = 0x58;
constexpr uint32_t kQueuePas = 0x110;  // pas[] of create_eq_in / create_cq_in / modify_cq_in
constexpr uint32_t kGenEqeEntry = 0x10;

// cqc (create_cq_in at 0x10).
constexpr uint32_t kCqc = 0x10, kCqcSize = 0x40;
namespace cqc {
constexpr Field kCqeSize{0x00, 23, 21};
constexpr Field kCqeCompEn{0x00, 14, 14};
constexpr Field kMiniCqeResFormat{0x00, 13, 12};
constexpr Field kCqeCompressionLayout{0x00, 1, 0};
constexpr Field kPageOffset{0x08, 11, 6};
constexpr Field kLogCqSize{0x0c, 28, 24};
constexpr Field kUarPage{0x0c, 23, 0};
constexpr Field kCqPeriod{0x10, 27, 16};
constexpr Field kCqMaxCount{0x10, 15, 0};
constexpr Field kCEqn{0x14, 31, 0};
constexpr Field kLogPageSize{0x18, 28, 24};
constexpr Field kConsumerCounter{0x28, 23, 0};
constexpr Field kProducerCounter{0x2c, 23, 0};
constexpr uint32_t kDbrAddr = 0x38;
constexpr Field kDbrUmemValid{0x00, 25, 25};  // the doorbell record is at dbr_addr in UMEM dbr_umem_id
constexpr Field kDbrUmemId{0x04, 31, 0};
}  // namespace cqc
// create_cq_in: the ring in a UMEM (DevX) instead of the PAS.
constexpr uint32_t kCqUmemOffset = 0x50;
constexpr Field kCqUmemId{0x58, 31, 0};
constexpr Field kCqUmemValid{0x5c, 31, 31};
constexpr Field kModifyCqSelect{0x0c, 31, 0};
constexpr uint32_t kModifyPeriod = 1u << 0, kModifyCount = 1u << 1;
constexpr uint32_t kResizeLogSize = 1u << 0, kResizePageOffset = 1u << 1, kResizePageSize = 1u << 2;
// cqc.cqe_sz. Padded 128-byte CQEs (cqe_128_always) are laid out as 128-byte ones here: the CQE
// in a slot's last 64 bytes, the first half never written (no CQE takes scattered data).
enum CqeSize : uint32_t { kCqe64 = 0, kCqe128 = 1, kCqe128Padded = 2 };
constexpr uint32_t log_cqe_stride(uint32_t cqe_size) { return cqe_size == kCqe64 ? 6 : 7; }
enum ModifyCqOpMod : uint16_t { kModifyCqModerate = 0, kModifyCqResize = 1 };

// CQE compression (cqe_comp_en): a device may write a burst of CQEs as one title CQE and arrays of
// mini-CQEs in the format the CQ names; it may as well write each CQE whole, and drivers take both
// (libmlx5 takes only whole ones: it relies on that). The model writes every CQE whole, so it
// checks the request only: a mini-CQE format it names (hash, checksum, checksum + stride index) and
// the basic layout (no enhanced_cqe_compression).
enum MiniCqeFormat : uint32_t { kMiniCqeHash = 0, kMiniCqeCsum = 1, kMiniCqeCsumStrideIndex = 3 };
bool valid_compression(std::span<const uint8_t> ctx) {
  if (get(ctx, cqc::kCqeCompEn) == 0) return true;
  const uint32_t format = get(ctx, cqc::kMiniCqeResFormat);
  const bool known = format == kMiniCqeHash || format == kMiniCqeCsum || format == kMiniCqeCsumStrideIndex;
  return known && get(ctx, cqc::kCqeCompressionLayout) == 0;
}

// --- UAR ---

void alloc_uar(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  FunctionContext& f = call.function();
  // UAR page n is BAR0 + n * 4 KiB; pages 0-2 are the init segment, the last page ends the BAR or
  // comes before the VARs or the device memory (FunctionIdentity::lay_out_bar0).
  const uint64_t uar_bytes = std::min(f.bar0_size, f.identity.uar_end(f.bar0_size));
  const uint64_t pages = std::min<uint64_t>(uar_bytes / kUarPageSize, uint64_t(kMaxObjectId) + 1);
  f.resources.uars.set_range(kFirstUarIndex, uint32_t(pages > kFirstUarIndex ? pages - 1 : kFirstUarIndex - 1));
  if (uint32_t index = insert(call, f.resources.uars, 32, Uar{})) set(call.out(), kObjectNumber, index);
}

void dealloc_uar(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  auto& uars = call.function().resources.uars;
  const uint32_t index = get(call.in(), kObjectNumber);
  if (lookup_owned(call, uars, index, kCheckLookup) != nullptr) uars.erase(index);
}

// --- PD, transport domain, XRCD ---

void alloc_pd(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  if (uint32_t pd = insert(call, r.pds, r.limits.log_max_pd, ProtectionDomain{})) set(call.out(), kObjectNumber, pd);
}

void dealloc_pd(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  const uint32_t pd = get(call.in(), kObjectNumber);
  ProtectionDomain* object = lookup_owned(call, r.pds, pd, kCheckLookup);
  if (object == nullptr || !not_in_use(call, object->refs)) return;
  r.pds.erase(pd);
}

void alloc_transport_domain(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  if (uint32_t td = insert(call, r.tds, r.limits.log_max_transport_domain, TransportDomain{}))
    set(call.out(), kObjectNumber, td);
}

void dealloc_transport_domain(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  const uint32_t td = get(call.in(), kObjectNumber);
  if (lookup_owned(call, r.tds, td, kCheckLookup) != nullptr) r.tds.erase(td);
}

void alloc_xrcd(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  if (uint32_t xrcd = insert(call, r.xrcds, r.limits.log_max_xrcd, XrcDomain{})) set(call.out(), kObjectNumber, xrcd);
}

void dealloc_xrcd(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  const uint32_t xrcd = get(call.in(), kObjectNumber);
  XrcDomain* object = lookup_owned(call, r.xrcds, xrcd, kCheckLookup);
  if (object == nullptr || !not_in_use(call, object->refs)) return;
  r.xrcds.erase(xrcd);
}

// --- EQ ---

void create_eq(CommandCall& call) {
  if (!start(call, kQueuePas)) return;
  FunctionContext& f = call.function();
  Resources& r = f.resources;
  const auto ctx = sub(call.in(), kEqc, kEqcSize);
  EventQueue eq;
  eq.log_size = get(ctx, eqc::kLogEqSize);
  eq.uar_page = get(ctx, eqc::kUarPage);
  eq.vector = get(ctx, eqc::kIntr);
  if (!check_log_size(call, eq.log_size, r.limits.log_max_eq_sz) || !check_uar(call, eq.uar_page)) return;
  if (f.identity.msix_vectors != 0 && eq.vector >= f.identity.msix_vectors) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateEq, kCheckVector));
    return;
  }
  auto ring = queue_buffer(call, kQueuePas, get(ctx, eqc::kLogPageSize), get(ctx, eqc::kPageOffset),
                           uint64_t(eqe::kSize) << eq.log_size);
  if (!ring) return;
  eq.ring = std::move(*ring);
  for (uint32_t i = 0; i < eq.event_mask.size(); ++i) eq.event_mask[i] = get64(call.in(), kEventBitmask + 8 * i);
  if (uint32_t eqn = insert(call, r.eqs, r.limits.log_max_eq, std::move(eq))) set(call.out(), kEqNumber, eqn);
}

void destroy_eq(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  const uint32_t eqn = get(call.in(), kEqNumber);
  EventQueue* eq = lookup(call, r.eqs, eqn, kCheckLookup);
  if (eq == nullptr || !not_in_use(call, eq->cq_refs)) return;
  r.eqs.erase(eqn);
}

void query_eq(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize, kEqc + kEqcSize)) return;
  EventQueue* eq = lookup(call, call.function().resources.eqs, get(call.in(), kEqNumber), kCheckLookup);
  if (eq == nullptr) return;
  auto ctx = sub(call.out(), kEqc, kEqcSize);
  set(ctx, eqc::kLogEqSize, eq->log_size);
  set(ctx, eqc::kUarPage, eq->uar_page);
  set(ctx, eqc::kIntr, eq->vector);
  set(ctx, eqc::kLogPageSize, eq->ring.log_page_size() - PageList::kMinLogPageSize);
  set(ctx, eqc::kPageOffset, uint32_t(eq->ring.offset() >> (eq->ring.log_page_size() - 6)));
  set(ctx, eqc::kConsumerCounter, eq->consumer);
  set(ctx, eqc::kProducerCounter, eq->producer);
  for (uint32_t i = 0; i < eq->event_mask.size(); ++i) set64(call.out(), kEventBitmask + 8 * i, eq->event_mask[i]);
}

// GEN_EQE: the driver asks for an EQE of its choosing (type, sub_type, data) on one of its EQs.
void gen_eqe(CommandCall& call) {
  if (!start(call, kGenEqeEntry + eqe::kSize)) return;
  const uint32_t eqn = get(call.in(), kEqNumber);
  if (lookup(call, call.function().resources.eqs, eqn, kCheckLookup) == nullptr) return;
  const auto entry = sub(call.in(), kGenEqeEntry, eqe::kSize);
  if (!eq_write(call.function(), eqn, uint8_t(get(entry, eqe::kType)), uint8_t(get(entry, eqe::kSubType)),
                entry.subspan(eqe::kData, eqe::kDataSize)))
    call.fail(CommandStatus::kResourceBusy, syndrome(kGenEqe, kCheckState));  // EQ full or DMA refused
}

// --- CQ ---

void create_cq(CommandCall& call) {
  if (!start(call, kQueuePas)) return;
  Resources& r = call.function().resources;
  const auto ctx = sub(call.in(), kCqc, kCqcSize);
  CompletionQueue cq;
  cq.log_size = get(ctx, cqc::kLogCqSize);
  cq.uar_page = get(ctx, cqc::kUarPage);
  cq.eqn = get(ctx, cqc::kCEqn);
  cq.dbr_addr = get64(ctx, cqc::kDbrAddr);
  if (get(ctx, cqc::kCqeSize) > kCqe128Padded || !valid_compression(ctx)) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateCq, kCheckParameter));
    return;
  }
  cq.log_stride = log_cqe_stride(get(ctx, cqc::kCqeSize));
  if (!check_log_size(call, cq.log_size, r.limits.log_max_cq_sz) || !check_uar(call, cq.uar_page) ||
      !check_dbr(call, cq.dbr_addr))
    return;
  EventQueue* eq = lookup(call, r.eqs, cq.eqn, kCheckEq);
  if (eq == nullptr) return;
  if (get(ctx, cqc::kDbrUmemValid) != 0 &&
      !place_doorbell_record(call, get(ctx, cqc::kDbrUmemId), cq.dbr_addr, cq.dbr_umem))
    return;
  auto ring = get(call.in(), kCqUmemValid) != 0
                  ? umem_buffer(call, get(call.in(), kCqUmemId), get64(call.in(), kCqUmemOffset), cq.ring_bytes(), true)
                  : queue_buffer(call, kQueuePas, get(ctx, cqc::kLogPageSize), get(ctx, cqc::kPageOffset), cq.ring_bytes());
  if (!ring) return;
  cq.ring = std::move(*ring);
  std::copy(ctx.begin(), ctx.end(), cq.context.begin());
  if (uint32_t cqn = insert(call, r.cqs, r.limits.log_max_cq, std::move(cq))) {
    ++eq->cq_refs;
    set(call.out(), kObjectNumber, cqn);
  }
}

void destroy_cq(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  const uint32_t cqn = get(call.in(), kObjectNumber);
  CompletionQueue* cq = lookup_owned(call, r.cqs, cqn, kCheckLookup);
  if (cq == nullptr || !not_in_use(call, cq->refs)) return;
  if (EventQueue* eq = r.eqs.find(cq->eqn)) --eq->cq_refs;
  r.cqs.erase(cqn);
}

void query_cq(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize, kCqc + kCqcSize)) return;
  FunctionContext& f = call.function();
  CompletionQueue* cq = lookup_owned(call, f.resources.cqs, get(call.in(), kObjectNumber), kCheckLookup);
  if (cq == nullptr) return;
  auto ctx = sub(call.out(), kCqc, kCqcSize);
  std::copy(cq->context.begin(), cq->context.end(), ctx.begin());
  set(ctx, cqc::kProducerCounter, cq->producer);
  set(ctx, cqc::kConsumerCounter, cq->arm_ci);
  if (cq->in_error) set(ctx, Field{0x00, 31, 28}, 0x9);  // status: CQ overflow
}

// MODIFY_CQ with the resize op_mod (ibv_resize_cq): the new size, CQE size and buffer (its PAS
// after the cqc), as CREATE_CQ takes them; completion_queue.h's resize_cq switches the rings.
void resize_cq_command(CommandCall& call, CompletionQueue& cq) {
  const auto ctx = sub(call.in(), kCqc, kCqcSize);
  const uint32_t select = get(call.in(), kModifyCqSelect);
  const uint32_t log_size = get(ctx, cqc::kLogCqSize), cqe_size = get(ctx, cqc::kCqeSize);
  FunctionContext& f = call.function();
  if ((select & kResizeLogSize) == 0 || cqe_size > kCqe128Padded) {
    call.fail(CommandStatus::kBadParameter, syndrome(kModifyCq, kCheckParameter));
    return;
  }
  if (!check_log_size(call, log_size, f.resources.limits.log_max_cq_sz)) return;
  const uint32_t log_stride = log_cqe_stride(cqe_size);
  const uint32_t cqc_log_page_size = (select & kResizePageSize) != 0 ? get(ctx, cqc::kLogPageSize) : 0;
  const uint32_t offset = (select & kResizePageOffset) != 0 ? get(ctx, cqc::kPageOffset) : 0;
  auto ring = queue_buffer(call, kQueuePas, cqc_log_page_size, offset, uint64_t(1) << (log_size + log_stride));
  if (!ring) return;
  switch (resize_cq(f, cq, std::move(*ring), log_size, log_stride)) {
    case CqResizeResult::kDone:
      set(cq.context, cqc::kLogCqSize, log_size);
      set(cq.context, cqc::kCqeSize, cqe_size);
      set(cq.context, cqc::kLogPageSize, cqc_log_page_size);
      set(cq.context, cqc::kPageOffset, offset);
      return;
    case CqResizeResult::kNoRoom:  // the old ring is full: no room for the RESIZE CQE
      call.fail(CommandStatus::kBadResourceState, syndrome(kModifyCq, kCheckState));
      return;
    case CqResizeResult::kTooSmall:  // fewer slots than CQEs the driver has still to poll
      call.fail(CommandStatus::kBadParameter, syndrome(kModifyCq, kCheckParameter));
      return;
    case CqResizeResult::kDmaFault:
      call.fail(CommandStatus::kInternalError, syndrome(kModifyCq, kCheckState));
      return;
  }
}

// MODIFY_CQ: moderation is accepted (the model completes at once), resize switches the rings.
void modify_cq(CommandCall& call) {
  if (!start(call, kCqc + kCqcSize)) return;
  CompletionQueue* cq = lookup_owned(call, call.function().resources.cqs, get(call.in(), kObjectNumber), kCheckLookup);
  if (cq == nullptr) return;
  if (call.op_mod() == kModifyCqResize) return resize_cq_command(call, *cq);
  if (call.op_mod() != kModifyCqModerate) {
    call.fail(CommandStatus::kBadParameter, syndrome(kModifyCq, kCheckParameter));
    return;
  }
  const auto ctx = sub(call.in(), kCqc, kCqcSize);
  const uint32_t select = get(call.in(), kModifyCqSelect);
  if (select & kModifyPeriod) set(cq->context, cqc::kCqPeriod, get(ctx, cqc::kCqPeriod));
  if (select & kModifyCount) set(cq->context, cqc::kCqMaxCount, get(ctx, cqc::kCqMaxCount));
}

}  // namespace

void register_resource_commands(CommandTable& table) {
  table.add(kAllocUar, "ALLOC_UAR", alloc_uar, Senders::kUser);
  table.add(kDeallocUar, "DEALLOC_UAR", dealloc_uar, Senders::kUser);
  table.add(kAllocPd, "ALLOC_PD", alloc_pd, Senders::kUser);
  table.add(kDeallocPd, "DEALLOC_PD", dealloc_pd, Senders::kUser);
  table.add(kAllocTransportDomain, "ALLOC_TRANSPORT_DOMAIN", alloc_transport_domain, Senders::kUser);
  table.add(kDeallocTransportDomain, "DEALLOC_TRANSPORT_DOMAIN", dealloc_transport_domain, Senders::kUser);
  table.add(kAllocXrcd, "ALLOC_XRCD", alloc_xrcd, Senders::kUser);
  table.add(kDeallocXrcd, "DEALLOC_XRCD", dealloc_xrcd, Senders::kUser);
  table.add(kCreateEq, "CREATE_EQ", create_eq, Senders::kKernelShared);
  table.add(kDestroyEq, "DESTROY_EQ", destroy_eq);
  table.add(kQueryEq, "QUERY_EQ", query_eq);
  table.add(kGenEqe, "GEN_EQE", gen_eqe);
  table.add(kCreateCq, "CREATE_CQ", create_cq, Senders::kUser);
  table.add(kDestroyCq, "DESTROY_CQ", destroy_cq, Senders::kUser);
  table.add(kQueryCq, "QUERY_CQ", query_cq, Senders::kUser);
  table.add(kModifyCq, "MODIFY_CQ", modify_cq, Senders::kUser);
  register_mkey_srq_commands(table);
  register_qp_commands(table);
}

}  // namespace hcaemu::model
