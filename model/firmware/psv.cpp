// PSVs (objects/resources.h Psv): CREATE_PSV (0x600) makes up to four in one PD and answers their
// indices, DESTROY_PSV (0x601) frees one. libmlx5 creates one per domain of a signature key
// through DevX (mlx5dv_create_mkey BLOCK_SIGNATURE) and destroys them before the key, so a PSV a
// key's BSF names may go while the key lives: the key's checks come from its BSF, not the PSV.
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kCreatePsv = 0x600, kDestroyPsv = 0x601;
constexpr Field kNumPsv{0x08, 31, 28};
constexpr Field kPd{0x08, 23, 0};
constexpr Field kPsvn{0x08, 23, 0};  // DESTROY_PSV
constexpr uint32_t kCreateOutBytes = 0x20, kFirstIndexOut = 0x10;  // psv0_index .. psv3_index, one a dword
constexpr uint32_t kMaxPerCommand = 4, kLogMaxPsvs = 16;

void create_psv(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize, kCreateOutBytes)) return;
  Resources& r = call.function().resources;
  const uint32_t count = get(call.in(), kNumPsv);
  if (!check(call, count >= 1 && count <= kMaxPerCommand, kCheckParameter)) return;
  ProtectionDomain* pd = lookup(call, r.pds, get(call.in(), kPd), kCheckPd);
  if (pd == nullptr) return;
  uint32_t made[kMaxPerCommand] = {};
  for (uint32_t i = 0; i < count; ++i) {
    made[i] = insert(call, r.psvs, kLogMaxPsvs, Psv{.pd = get(call.in(), kPd)});
    if (made[i] == 0) {  // all or none
      for (uint32_t j = 0; j < i; ++j) r.psvs.erase(made[j]);
      return;
    }
  }
  for (uint32_t i = 0; i < count; ++i) set(call.out(), Field{kFirstIndexOut + 4 * i, 23, 0}, made[i]);
}

void destroy_psv(CommandCall& call) {
  if (!start(call, mbox::kHeaderSize)) return;
  Resources& r = call.function().resources;
  if (lookup_owned(call, r.psvs, get(call.in(), kPsvn), kCheckLookup) != nullptr) r.psvs.erase(get(call.in(), kPsvn));
}

}  // namespace

void register_psv_commands(CommandTable& table) {
  table.add(kCreatePsv, "CREATE_PSV", create_psv, Senders::kUser);
  table.add(kDestroyPsv, "DESTROY_PSV", destroy_psv, Senders::kUser);
}

}  // namespace hcaemu::model
