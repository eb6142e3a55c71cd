// Match definers (general object type MATCH_DEFINER, 0x18), as mlx5 DR creates them for a matcher
// whose mask one offered format covers (match_definer_format_supported; DR then builds every such
// matcher from them, and mlx5dv_dr_matcher_set_layout needs one): after the general object header,
// definer { modify_field_select (64 bits), format_id [15:0] at 0x10, ..., match_mask_dw_11_8 at
// 0x54, match_mask_dw_7_0 (32 bytes) at 0x60 }. Format 0 only (steering/ste_v1.h definer_tag), its
// 32-byte mask in the order of the tag; the extra dwords 8-11 stay zero. The ID, 0x40 to 0xfe,
// is what DR's entries put in their lookup type's low byte. Only with FunctionIdentity::sw_icm.
#include <algorithm>

#include "model/eth/objects.h"
#include "model/firmware/firmware.h"
#include "model/firmware/general_object_types.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint32_t kDefiner = 0x10, kDefinerBytes = 0x80;  // after the general object header
constexpr Field kObjId{0x08, 31, 0};
constexpr Field kFormatId{kDefiner + 0x10, 15, 0};
constexpr uint32_t kMaskDw11To8 = kDefiner + 0x54, kMaskDw7To0 = kDefiner + 0x60;
constexpr uint16_t kCheckDefinerFormat = 0x54;
constexpr uint32_t kLogMaxDefiners = 8;

steering::MatchDefinerView* named_definer(CommandCall& call, uint32_t out_bytes) {
  return named_steering_object(call, call.function().eth.match_definers, out_bytes);
}

}  // namespace

void create_match_definer(CommandCall& call) {
  if (!offers_software_steering(call) || !start(call, kDefiner + kDefinerBytes)) return;
  steering::MatchDefinerView definer;
  definer.format = uint16_t(get(call.in(), kFormatId));
  const auto extra = sub(call.in(), kMaskDw11To8, kMaskDw7To0 - kMaskDw11To8);
  const bool no_extra = std::all_of(extra.begin(), extra.end(), [](uint8_t b) { return b == 0; });
  if (!check(call, definer.format == 0 && no_extra, kCheckDefinerFormat)) return;
  const auto mask = sub(call.in(), kMaskDw7To0, steering::kDefinerTagBytes);
  std::copy(mask.begin(), mask.end(), definer.mask.begin());
  const uint32_t id = insert(call, call.function().eth.match_definers, kLogMaxDefiners, definer);
  if (id != 0) set(call.out(), kObjId, id);
}

void query_match_definer(CommandCall& call) {
  const steering::MatchDefinerView* definer = named_definer(call, kDefiner + kDefinerBytes);
  if (definer == nullptr) return;
  set(call.out(), kObjId, get(call.in(), kObjId));
  set(call.out(), kFormatId, definer->format);
  std::copy(definer->mask.begin(), definer->mask.end(), call.out().begin() + kMaskDw7To0);
}

void modify_match_definer(CommandCall& call) { refuse_steering_modify(call, call.function().eth.match_definers); }

void destroy_match_definer(CommandCall& call) {
  if (named_definer(call, mbox::kHeaderSize) != nullptr)
    call.function().eth.match_definers.erase(get(call.in(), kObjId));
}

}  // namespace hcaemu::model
