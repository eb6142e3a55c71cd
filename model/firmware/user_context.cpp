// DevX user contexts (CREATE_UCTX / DESTROY_UCTX). mlx5_ib makes one per user process that opens
// the device with DevX (libmlx5 always asks) and one of its own for the read-only queries it passes
// through; the uid it gets back is stamped on the commands of that process's objects. The
// firmware records the owner of each object (objects/object_table.h), lets a uid act only on its
// own (resource_helpers.h lookup_owned) and refuses a uid it does not know (Senders).
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kCreateUctx = 0xa04, kDestroyUctx = 0xa06;
constexpr uint32_t kUctxInBytes = 0x20;           // create_uctx_in: header, then uctx at 0x10
constexpr Field kUctxCap{0x10, 31, 0};            // uctx.cap
constexpr Field kCreateUctxOutUid{0x08, 15, 0};   // create_uctx_out.uid
constexpr Field kDestroyUctxInUid{0x08, 15, 0};   // destroy_uctx_in.uid
// The uctx_cap bits the device offers (hca_caps.cpp); a context asking for more is refused.
constexpr uint32_t kOfferedUctxCap = kUctxCapRawTx;

void create_uctx(CommandCall& call) {
  if (!start(call, kUctxInBytes, 0x10)) return;
  const uint32_t cap = get(call.in(), kUctxCap);
  if ((cap & ~kOfferedUctxCap) != 0) {
    call.fail(CommandStatus::kBadParameter, syndrome(kCreateUctx, kCheckParameter));
    return;
  }
  Resources& r = call.function().resources;
  if (r.limits.log_max_uctx == 0) {  // the caps offer no DevX: the command does not exist
    call.fail(CommandStatus::kBadOpcode, syndrome(kCreateUctx, kCheckFull));
    return;
  }
  if (uint32_t uid = insert(call, r.user_contexts, r.limits.log_max_uctx, UserContext{cap}))
    set(call.out(), kCreateUctxOutUid, uid);
}

void destroy_uctx(CommandCall& call) {
  if (!start(call, 0x10)) return;
  Resources& r = call.function().resources;
  const uint32_t uid = get(call.in(), kDestroyUctxInUid);
  if (lookup(call, r.user_contexts, uid, kCheckLookup) == nullptr) return;
  // mlx5_ib destroys a process's objects before its context; one left would keep a uid nobody
  // may name any more.
  if (r.owned_by(uint16_t(uid)) != 0 || call.function().eth.owned_by(uint16_t(uid)) != 0) {
    call.fail(CommandStatus::kBadResourceState, syndrome(kDestroyUctx, kCheckInUse));
    return;
  }
  r.user_contexts.erase(uid);
}

}  // namespace

void register_user_context_commands(CommandTable& table) {
  table.add(kCreateUctx, "CREATE_UCTX", create_uctx);
  table.add(kDestroyUctx, "DESTROY_UCTX", destroy_uctx);
}

}  // namespace hcaemu::model
