// DC target commands: CREATE/DESTROY/DRAIN/QUERY_DCT and ARM_DCT_FOR_KEY_VIOLATION (mlx5_ifc
// create_dct_in and dctc). A DCT lives in the QP table (st kDct, its number a QPN) so that DC
// requests find it as RC requests find their QP; its dctc is kept whole for QUERY_DCT and the
// fields the responder reads are copied into the qpc places the RDMA engine reads (rdma/dc.cpp).
// mlx5_core destroys a DCT by DRAIN_DCT, waits for the DCT_DRAINED event, then DESTROY_DCT: the
// event is posted at once (nothing is held between packets), so the driver never waits.
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"
#include "model/prm/qpc_fields.h"

namespace hcaemu::model {

namespace {

using namespace fw;

constexpr uint16_t kCreateDct = 0x710, kDestroyDct = 0x711, kDrainDct = 0x712, kQueryDct = 0x713,
                   kArmDctForKeyViolation = 0x714;
constexpr uint8_t kDctDrainedEvent = 0x1c;  // mlx5_eqe_dct: the DCT number at data + 0x18

constexpr Field kDctn{0x08, 23, 0};           // create_dct_out, and every other command's input
constexpr uint32_t kDctc = 0x10;              // create_dct_in / query_dct_out: the dctc
constexpr uint32_t kDctcSize = 0x40;
constexpr uint32_t kCreateInSize = kDctc + kDctcSize;

// dctc fields (byte offsets in the dctc).
namespace dctc {
constexpr Field kState{0x00, 27, 24};  // 0 active, 1 draining, 2 drained
constexpr Field kUserIndex{0x04, 23, 0};
constexpr Field kCqn{0x08, 23, 0};
constexpr Field kCounterSetId{0x0c, 31, 24};
constexpr Field kAtomicMode{0x0c, 23, 20};
constexpr Field kRre{0x0c, 19, 19};
constexpr Field kRwe{0x0c, 18, 18};
constexpr Field kRae{0x0c, 17, 17};
constexpr Field kMinRnrNak{0x10, 12, 8};
constexpr Field kSrqn{0x14, 23, 0};
constexpr Field kPd{0x18, 23, 0};
constexpr Field kTclass{0x1c, 31, 24};
constexpr Field kFlowLabel{0x1c, 19, 0};
constexpr uint32_t kAccessKey = 0x20;  // 8 bytes
constexpr Field kMtu{0x28, 26, 24};
constexpr Field kPort{0x28, 23, 16};
constexpr Field kPkeyIndex{0x28, 15, 0};
constexpr Field kMyAddrIndex{0x2c, 23, 16};
constexpr Field kHopLimit{0x2c, 7, 0};
constexpr uint32_t kStateActive = 0, kStateDrained = 2;
}  // namespace dctc

constexpr uint32_t kMaxMtu = 5;
constexpr uint32_t kPkeyTableSize = 128;

// The qpc fields the engine reads, from the dctc.
void copy_to_qpc(std::span<const uint8_t> d, QueuePair& qp) {
  auto& q = qp.context;
  set(q, qpc::kSt, qp_st::kDct);
  set(q, qpc::kState, uint32_t(QpState::kRtr));
  set(q, qpc::kPd, get(d, dctc::kPd));
  set(q, qpc::kUserIndex, get(d, dctc::kUserIndex));
  set(q, qpc::kCounterSetId, get(d, dctc::kCounterSetId));
  set(q, qpc::kAtomicMode, get(d, dctc::kAtomicMode));
  set(q, qpc::kRre, get(d, dctc::kRre));
  set(q, qpc::kRwe, get(d, dctc::kRwe));
  set(q, qpc::kRae, get(d, dctc::kRae));
  set(q, qpc::kMinRnrNak, get(d, dctc::kMinRnrNak));
  set(q, qpc::kMtu, get(d, dctc::kMtu));
  set(q, qpc::kPkeyIndex, get(d, dctc::kPkeyIndex));
  set(q, qpc::kSrcAddrIndex, get(d, dctc::kMyAddrIndex));
  set(q, qpc::kHopLimit, get(d, dctc::kHopLimit));
  set(q, qpc::kTclass, get(d, dctc::kTclass));
  set(q, qpc::kFlowLabel, get(d, dctc::kFlowLabel));
  set(q, qpc::kCqnRcv, get(d, dctc::kCqn));
  set(q, qpc::kRqType, rq_type::kSrq);
  set(q, qpc::kSrqn, get(d, dctc::kSrqn));
}

void create_dct(CommandCall& call) {
  if (!start(call, kCreateInSize, kDctn.offset + 4)) return;
  FunctionContext& f = call.function();
  Resources& r = f.resources;
  const auto d = sub(call.in(), kDctc, kDctcSize);
  const uint32_t mtu = get(d, dctc::kMtu);
  if (!check(call, mtu >= 1 && mtu <= kMaxMtu && get(d, dctc::kPkeyIndex) < kPkeyTableSize &&
                       get(d, dctc::kMyAddrIndex) < r.limits.roce_address_table_size &&
                       get(d, dctc::kPort) <= r.limits.num_ports &&
                       counter_set_known(f.q_counters, get(d, dctc::kCounterSetId)),
             kCheckParameter))
    return;
  ProtectionDomain* pd = lookup(call, r.pds, get(d, dctc::kPd), kCheckPd);
  if (pd == nullptr) return;
  CompletionQueue* cq = lookup(call, r.cqs, get(d, dctc::kCqn), kCheckCq);
  if (cq == nullptr) return;
  // A DCT receives through a basic SRQ (mlx5_ib's RMP); an XRC SRQ serves XRC only.
  SharedReceiveQueue* srq = lookup(call, r.srqs, get(d, dctc::kSrqn), kCheckSrq);
  if (srq == nullptr || !check(call, srq->kind != SrqKind::kXrcSrq, kCheckSrq)) return;

  QueuePair qp;
  qp.st = qp_st::kDct;
  qp.state = QpState::kRtr;  // ACTIVE: it answers requests at once
  qp.pd = get(d, dctc::kPd);
  qp.cqn_rcv = get(d, dctc::kCqn);
  qp.srqn = get(d, dctc::kSrqn);
  qp.rq_type = rq_type::kSrq;
  qp.no_sq = true;
  copy_to_qpc(d, qp);
  qp.rc.dct.access_key = get64(d, dctc::kAccessKey);
  std::copy(d.begin(), d.end(), qp.rc.dct.context.begin());
  set(qp.rc.dct.context, dctc::kState, dctc::kStateActive);
  if (uint32_t dctn = insert(call, r.qps, r.limits.log_max_qp, std::move(qp))) {
    ++pd->refs;
    ++cq->refs;
    ++srq->refs;
    set(call.out(), kDctn, dctn);
  }
}

// The DCT a command names: a DCT of the sender's (a QP number is no DCT).
QueuePair* named_dct(CommandCall& call, uint32_t in_bytes, uint32_t out_bytes = mbox::kHeaderSize) {
  if (!start(call, in_bytes, out_bytes)) return nullptr;
  QueuePair* qp = lookup_owned(call, call.function().resources.qps, get(call.in(), kDctn), kCheckLookup);
  if (qp != nullptr && qp->st != qp_st::kDct) {
    call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), kCheckLookup));
    return nullptr;
  }
  return qp;
}

void destroy_dct(CommandCall& call) {
  QueuePair* dct = named_dct(call, kDctn.offset + 4);
  if (dct == nullptr) return;
  Resources& r = call.function().resources;
  if (ProtectionDomain* pd = r.pds.find(dct->pd)) --pd->refs;
  if (CompletionQueue* cq = r.cqs.find(dct->cqn_rcv)) --cq->refs;
  if (SharedReceiveQueue* srq = r.srqs.find(dct->srqn)) --srq->refs;
  r.qps.erase(get(call.in(), kDctn));
}

void drain_dct(CommandCall& call) {
  QueuePair* dct = named_dct(call, kDctn.offset + 4);
  if (dct == nullptr) return;
  // Nothing is held between packets: the DCT is drained as it stops taking requests.
  dct->state = QpState::kSqDrained;
  dct->rc.dct.connections.clear();
  set(dct->rc.dct.context, dctc::kState, dctc::kStateDrained);
  std::array<uint8_t, eqe::kDataSize> data{};
  store_be32(&data[0x18], get(call.in(), kDctn));
  eq_post(call.function(), kDctDrainedEvent, 0, data);
}

void query_dct(CommandCall& call) {
  QueuePair* dct = named_dct(call, kDctn.offset + 4, kDctc + kDctcSize);
  if (dct == nullptr) return;
  auto out = sub(call.out(), kDctc, kDctcSize);
  std::copy(dct->rc.dct.context.begin(), dct->rc.dct.context.end(), out.begin());
}

// Key violations are counted (rdma/dc.cpp), never reported as events: arming is accepted and
// changes nothing.
void arm_dct_for_key_violation(CommandCall& call) { named_dct(call, kDctn.offset + 4); }

}  // namespace

void register_dct_commands(CommandTable& table) {
  table.add(kCreateDct, "CREATE_DCT", create_dct, Senders::kUser);
  table.add(kDestroyDct, "DESTROY_DCT", destroy_dct, Senders::kUser);
  table.add(kDrainDct, "DRAIN_DCT", drain_dct, Senders::kUser);
  table.add(kQueryDct, "QUERY_DCT", query_dct, Senders::kUser);
  table.add(kArmDctForKeyViolation, "ARM_DCT_FOR_KEY_VIOLATION", arm_dct_for_key_violation, Senders::kUser);
}

}  // namespace hcaemu::model
