#pragma once
// The objects a function creates through firmware/uar_pd_eq_cq.cpp / firmware/qp.cpp (mlx5-device-bringup.md
// section 6) and the per-function tables that hold them. Everything is plain data so it could be
// serialised; the engines (event_queue, completion_queue) and the handlers work on it through the
// FunctionContext that owns it. References between objects (a QP's CQs, an MKEY's PD...) are
// counted, so an object in use cannot be destroyed and no reference ever dangles.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/queues/completion_queue.h"
#include "model/queues/event_queue.h"
#include "model/objects/av_qp_mappings.h"
#include "model/objects/block_signature.h"
#include "model/objects/multicast_groups.h"
#include "model/objects/object_table.h"
#include "model/objects/page_faults.h"
#include "model/objects/rate_limits.h"
#include "model/objects/scheduling_elements.h"
#include "model/objects/sw_icm.h"
#include "model/objects/umem.h"
#include "model/queues/page_list.h"
#include "model/rdma/rc_state.h"

namespace hcaemu::model {

class CommandTable;

// Limits of the tables and sizes, as the general caps report them (log2). Defaults follow the
// cap table of mlx5-device-bringup.md section 4.3; whoever owns the caps may overwrite them.
struct ResourceLimits {
  uint32_t log_max_eq = 6;
  uint32_t log_max_eq_sz = 22;
  uint32_t log_max_cq = 16;
  uint32_t log_max_cq_sz = 22;
  uint32_t log_max_pd = 18;
  uint32_t log_max_transport_domain = 16;
  uint32_t log_max_xrcd = 16;
  uint32_t log_max_mkey = 16;
  uint32_t log_max_qp = 17;
  uint32_t log_max_qp_sz = 15;
  uint32_t log_max_srq = 16;
  uint32_t log_max_srq_sz = 15;
  uint32_t log_max_msg = 30;
  uint32_t roce_address_table_size = 256;
  uint32_t log_max_uctx = 10;  // DevX user contexts (CREATE_UCTX); 0: none
  // DCI streams (DCS, rdma/dc.cpp): stream channels per DCI, and streams that may be in error
  // before the DCI itself goes to ERR.
  uint32_t log_max_dci_stream_channels = 4;
  uint32_t log_max_dci_errored_streams = 3;
  uint32_t num_ports = 1;
  // Not a cap: hcaemu's own memory for the function's translation tables (8 bytes an entry): the
  // MKEYs' MTTs and the page lists of its queues (EQ, CQ, QP, SRQ/RMP, RQ, SQ) together. A command
  // that would go past it fails with the PRM's exceeded-limit status.
  uint64_t max_translation_entries = uint64_t(1) << 24;
};

inline constexpr uint32_t kUarPageSize = 4096;
inline constexpr uint32_t kFirstUarIndex = 3;    // pages 0-2 hold the 0x2010-byte init segment
inline constexpr uint32_t kMaxObjectId = 0xffffff;
inline constexpr uint32_t kMaxEqn = 0xff;         // create_eq_out.eq_number is 8 bits
// The null MKEY (QUERY_SPECIAL_CONTEXTS): a KSM entry naming it maps nothing (an implicit ODP MR's
// range with no child MR yet: a page fault). Index 0 is never a key's.
inline constexpr uint32_t kNullMkey = 0x000000ff;
inline constexpr uint32_t kFirstMkeyIndex = 2;    // index 1 with variant 0 would be 0x100 = MLX5_INVALID_LKEY
inline constexpr uint32_t kFirstQpn = 8;          // keep clear of the IB special QPNs 0 and 1
inline constexpr uint32_t kLastQpn = 0xbfffff;    // Ethernet SQs and RQs share the number space above (eth/objects.h)

struct Uar {};
struct TransportDomain {};

// A DevX user context (CREATE_UCTX): the uid that mlx5_ib stamps on the commands of one user
// process's objects, so the firmware can tell whose object a command names. uid 0 is the kernel
// driver's; kSharedResourceUid marks the kernel's objects every user context may point at (the
// completion EQs, the shared Q counter).
struct UserContext {
  uint32_t cap = 0;  // uctx.cap: what the context may do beyond its own objects (kUctxCapRawTx)
};
// uctx_cap / uctx.cap bits. The device offers RAW_TX (mlx5_ib asks for it for a process with
// CAP_NET_RAW): only such a context may create an Ethernet SQ. INTERNAL_DEV_RES is not offered.
inline constexpr uint32_t kUctxCapRawTx = 1u << 0;
inline constexpr uint32_t kUctxCapInternalDevRes = 1u << 1;
inline constexpr uint16_t kKernelUid = 0;
inline constexpr uint16_t kSharedResourceUid = 0xffff;

struct ProtectionDomain {
  uint32_t refs = 0;  // MKEYs, QPs, SRQs
};

struct XrcDomain {
  uint32_t refs = 0;  // XRC SRQs and XRC QPs
};

struct Mkey {
  std::array<uint8_t, 0x40> context{};  // mkc as created (QUERY_MKEY)
  uint8_t variant = 0;                  // mkey_7_0: key = (index << 8) | variant
  uint32_t pd = 0;
  uint8_t access_mode = 0;              // 0 PA, 1 MTT, 2 KLM (a window), 3 KSM (implicit ODP), 4 SW ICM, 5 MEMIC
  bool local_read = false, local_write = false, remote_read = false, remote_write = false, atomic = false;
  bool free = false;                    // created in the free state (to be enabled by UMR)
  bool umr_en = false;
  bool driver_loaded = false;           // its translation came by UMR on the driver's UMR QP: an
                                        // ibv_reg_mr region (the MKEY cache), never invalidated by a WR
  bool remote_invalidate = false;       // en_rinval: a SEND with Invalidate may free it
  bool length64 = false;                // the whole address space (PA mode)
  uint64_t start = 0;                   // iova (0 for MEMIC and SW ICM: device memory keys are zero-based)
  uint64_t device_offset = 0;           // MEMIC: where va 0 is in the device memory window; SW ICM: its ICM address
  uint64_t length = 0;
  uint32_t log_page_size = 12;          // absolute, MTT page size
  std::vector<uint64_t> mtt;            // BE64 entries as given, low bits carry access flags
  uint64_t mtt_capacity = 0;            // entries a UMR may load (umr_en: mkc.translations_octword_size x 2;
                                        // KSM: x 1)
  // KSM (an implicit ODP MR, loaded by UMR): entry k maps page k of 2^log_page_size bytes to `va` of
  // MKEY `key` (kNullMkey: not present).
  struct KsmEntry {
    uint32_t key = kNullMkey;
    uint64_t va = 0;
  };
  std::vector<KsmEntry> ksm;
  BudgetCharge mtt_charge;              // the entries against the function's translation budget
  // A memory window (KLM mode, created free with umr_en; objects/umr.h apply_bind_umr): the MR range
  // it is bound to (one KLM) and, for a type 2 window, the QP it is bound through.
  uint32_t parent_key = 0;
  uint64_t parent_address = 0;
  // An indirect key (KLM mode, laid out by a UMR WQE from user space: mlx5dv_wr_mkey_configure with
  // set_mkey_layout_list or _interleaved). Byte k of the key is in entry after entry, each `bytes`
  // long at `va` of MKEY `key`; with `repeat_count` > 0 the entries repeat that many times, entry e
  // starting `stride` bytes further on in its key each time. Empty: a window (parent_key).
  struct IndirectEntry {
    uint32_t key = 0;
    uint64_t va = 0;
    uint32_t bytes = 0;
    uint32_t stride = 0;
  };
  std::vector<IndirectEntry> indirect;
  uint32_t repeat_count = 0;
  uint32_t bound_qpn = kNoQpn;          // mkc.qpn: 0xffffff = any QP of the PD (MRs, type 1 windows)
  // A signature key (mlx5dv_create_mkey BLOCK_SIGNATURE: KLM, created with bsf_en and room for a
  // BSF; objects/block_signature.h). The UMR that configures it loads the BSF and enables it. A
  // check failure is reported while armed: sigerr_expected (the count parity the last UMR gave)
  // differs from sigerr_count, which flips at each report, so one report per configuration.
  bool bsf_capable = false;
  bool bsf_enabled = false;
  BlockSignature signature;
  uint8_t sigerr_expected = 0, sigerr_count = 0;

  static constexpr uint8_t kAccessPa = 0, kAccessMtt = 1, kAccessKlm = 2, kAccessKsm = 3, kAccessSwIcm = 4,
                           kAccessMemic = 5;
  static constexpr uint64_t kMttFlagBits = 0x7;  // MTT entries carry read/write flags in their low bits
  // An MTT entry (CREATE_MKEY's list or a UMR load) names the base of a 2^log_page_size page.
  static bool mtt_entry_aligned(uint64_t entry, uint32_t log_page_size) {
    return (entry & ((uint64_t(1) << log_page_size) - 1) & ~kMttFlagBits) == 0;
  }
  static constexpr uint32_t kNoQpn = 0xffffff;
  bool is_window() const { return access_mode == kAccessKlm; }
  // [va, last] inside the key's range (length64: the whole address space).
  bool covers(uint64_t va, uint64_t last) const {
    return length64 || (length != 0 && va >= start && last - start <= length - 1);
  }
};

// A PSV (protection signature value): the running signature state libmlx5 pairs with each domain
// of a signature key (CREATE_PSV, SET_PSV WQEs). The device computes each block's PI from the BSF;
// the transient signature a SET_PSV loads is kept and reported by nothing else.
struct Psv {
  uint32_t pd = 0;
  uint64_t transient_signature = 0;
};

enum class SrqKind : uint8_t { kSrq, kXrcSrq, kRmp };

// SRQ, XRC SRQ and RMP share one number space (the driver keeps them in one table).
struct SharedReceiveQueue {
  SrqKind kind = SrqKind::kSrq;
  std::vector<uint8_t> context;  // srqc / xrc_srqc / rmpc as created
  uint32_t pd = 0, cqn = 0, xrcd = 0;
  uint32_t log_size = 0;
  uint32_t log_stride = 0;       // WQE stride = 16 << log_stride
  uint64_t dbr_addr = 0;
  PageList buffer;
  uint32_t refs = 0;             // QPs with rq_type SRQ pointing here
  // Receive side (rdma/engine.cpp): WQEs form a list the driver links through each WQE's
  // next_wqe_index; the device takes them from `head` while `consumed` trails the doorbell counter.
  uint32_t head = 0;
  uint32_t consumed = 0;
  // ARM_RQ / ARM_XRC_SRQ / MODIFY_RMP: once fewer WQEs than this remain posted, one SRQ_RQ_LIMIT
  // event, and the limit disarms (0: not armed).
  uint32_t lwm = 0;

  // Where the limit sits in each kind's context: srqc.lwm and xrc_srqc.lwm, rmpc.wq.lwm (mlx5_ib
  // makes a basic SRQ an RMP).
  static constexpr Field lwm_field(SrqKind kind) {
    return kind == SrqKind::kRmp ? Field{0x34, 15, 0} : Field{0x1c, 31, 16};
  }
  // Arms (or, with 0, disarms) the limit, in the context too (QUERY_*: ibv_query_srq's limit).
  void set_limit(uint32_t value) {
    lwm = value;
    const Field field = lwm_field(kind);
    if (context.size() >= field.offset + 4) set(context, field, value);
  }
};

enum class QpState : uint8_t { kReset = 0, kInit = 1, kRtr = 2, kRts = 3, kSqError = 4, kSqDrained = 5, kError = 6 };
const char* qp_state_name(QpState state);

namespace qp_st {
inline constexpr uint8_t kRc = 0x0, kUc = 0x1, kUd = 0x2, kXrc = 0x3, kDci = 0x5, kQp1 = 0x8, kRegUmr = 0xc;
// Not a qpc.st: the DCTs (CREATE_DCT) live in the QP table under this type, their numbers drawn
// from the QPNs as a ConnectX draws them.
inline constexpr uint8_t kDct = 0x6;
}
namespace rq_type {
inline constexpr uint8_t kRegular = 0, kSrq = 1, kZeroLength = 3;
}

struct QueuePair {
  std::array<uint8_t, 0xe8> context{};  // the whole qpc, state included (QUERY_QP)
  QpState state = QpState::kReset;
  uint8_t st = 0;
  uint32_t pd = 0, cqn_snd = 0, cqn_rcv = 0, srqn = 0, xrcd = 0;
  uint8_t rq_type = 0;
  uint32_t log_rq_size = 0, log_rq_stride = 0, log_sq_size = 0;
  bool no_sq = false;
  uint32_t uar_page = 0;
  uint64_t dbr_addr = 0;        // dword0 RQ producer, dword1 SQ producer
  std::shared_ptr<const void> dbr_umem;  // the UMEM the record is in (DevX), held while the QP lives
  PageList buffer;              // RQ at offset 0, SQ at sq_offset
  uint64_t sq_offset = 0;
  uint32_t opt_param_mask = 0;  // of the last transition
  // Queue groups (objects/scheduling_elements.h) its sends and its responses go through; 0: none.
  uint32_t sched_group_requester = 0, sched_group_responder = 0;
  // Data path position (reset by 2RST).
  uint32_t sq_consumer = 0;
  uint32_t rq_consumer = 0;
  RcState rc;                   // RC transport (rdma/engine.cpp), reset with the QP

  uint64_t rq_bytes() const {
    return rq_type == rq_type::kRegular ? (uint64_t(1) << log_rq_size) << (4 + log_rq_stride) : 0;
  }
  uint64_t sq_bytes() const { return no_sq ? 0 : (uint64_t(1) << log_sq_size) * 64; }
};

struct ResourceCounters {
  uint64_t uar_writes_ignored = 0;  // kept by the doorbell unit; here for a single snapshot
  uint64_t cq_error_events = 0;
};

struct Resources {
  ResourceLimits limits;
  // Entries of every MTT and queue page list (limits.max_translation_entries); declared before the
  // tables, whose objects' charges give their entries back here when they go.
  uint64_t translation_entries = 0;
  ObjectTable<Uar> uars{kFirstUarIndex, kFirstUarIndex - 1, 0};  // range set from the BAR0 size
  ObjectTable<ProtectionDomain> pds{1, kMaxObjectId, 1u << 18};
  ObjectTable<TransportDomain> tds{1, kMaxObjectId, 1u << 16};
  ObjectTable<XrcDomain> xrcds{1, kMaxObjectId, 1u << 16};
  ObjectTable<EventQueue> eqs{1, kMaxEqn, 1u << 6};
  ObjectTable<CompletionQueue> cqs{1, kMaxObjectId, 1u << 16};
  ObjectTable<Mkey> mkeys{kFirstMkeyIndex, kMaxObjectId, 1u << 16};
  ObjectTable<Psv> psvs{1, kMaxObjectId, 1u << 16};
  ObjectTable<SharedReceiveQueue> srqs{1, kMaxObjectId, 1u << 16};
  ObjectTable<QueuePair> qps{kFirstQpn, kLastQpn, 1u << 17};
  ObjectTable<UserContext> user_contexts{1, kSharedResourceUid - 1, 0};  // limit: 1 << log_max_uctx
  MulticastGroups multicast;         // UD QPs attached to multicast GIDs
  PageFaultTable page_faults;        // ODP faults raised and not yet resumed
  RateLimitTable rate_limits;        // packet pacing (SET_PP_RATE_LIMIT)
  SchedulingElements scheduling;     // NIC scheduling elements (general objects)
  AvQpMappings av_qp_mappings{1, kMaxObjectId, 1u << kLogMaxAvQpMappings};  // address-to-QP hints (general objects)
  Umems umems{1, kMaxObjectId, 1u << kLogMaxUmems};  // DevX UMEMs (objects/umem.h)
  ObjectTable<SwIcmObject> sw_icm_objects{1, kMaxObjectId, 1u << kLogMaxSwIcmObjects};  // steering ICM ranges
  ResourceCounters counters;

  void clear() {
    uars.clear();
    pds.clear();
    tds.clear();
    xrcds.clear();
    eqs.clear();
    cqs.clear();
    mkeys.clear();
    psvs.clear();
    srqs.clear();
    qps.clear();
    user_contexts.clear();
    multicast.clear();
    page_faults.clear();
    rate_limits.clear();
    scheduling.clear();
    av_qp_mappings.clear();
    umems.clear();
    sw_icm_objects.clear();
  }
  // The MKEY `key` names ((index << 8) | variant) when it is enabled and maps memory itself, not
  // through other keys (a window or an indirect key): what a window's bind, an indirect key's
  // entries and their translations may point at. Null otherwise.
  const Mkey* direct_key(uint32_t key) const {
    const Mkey* m = mkeys.find(key >> 8);
    return m != nullptr && m->variant == (key & 0xff) && !m->free && !m->is_window() ? m : nullptr;
  }
  // Objects a user context created that are still alive (DESTROY_UCTX waits for none).
  size_t owned_by(uint16_t uid) const {
    return uars.owned_by(uid) + pds.owned_by(uid) + tds.owned_by(uid) + xrcds.owned_by(uid) + cqs.owned_by(uid) +
           mkeys.owned_by(uid) + psvs.owned_by(uid) + srqs.owned_by(uid) + qps.owned_by(uid) + scheduling.table().owned_by(uid) +
           av_qp_mappings.owned_by(uid) + umems.owned_by(uid) +
           sw_icm_objects.owned_by(uid);
  }
  // Room for `entries` more translation entries within the budget.
  bool translation_fits(uint64_t entries) const {
    return entries <= limits.max_translation_entries - std::min(translation_entries, limits.max_translation_entries);
  }
};

// Called by register_resource_commands (firmware/uar_pd_eq_cq.cpp).
void register_mkey_srq_commands(CommandTable& table);  // firmware/mkey_srq.cpp
void register_qp_commands(CommandTable& table);        // firmware/qp.cpp
void register_dct_commands(CommandTable& table);       // firmware/dct.cpp
void register_psv_commands(CommandTable& table);       // firmware/psv.cpp

}  // namespace hcaemu::model
