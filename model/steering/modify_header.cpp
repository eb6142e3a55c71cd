#include "model/steering/modify_header.h"

#include <optional>

#include "common/endian.h"

namespace hcaemu::model::steering {
namespace {

constexpr uint8_t kActionSet = 0x1, kActionAdd = 0x2, kActionCopy = 0x3;

// Where a PRM field (MLX5_ACTION_IN_FIELD_OUT_*) lives among PacketState's field dwords.
struct FieldPlace {
  uint8_t dword, start, width;
};

std::optional<FieldPlace> place_of(uint32_t prm_field) {
  switch (prm_field) {
    case 0x1: return FieldPlace{0x08, 0, 32};   // OUT_SMAC_47_16
    case 0x2: return FieldPlace{0x09, 16, 16};  // OUT_SMAC_15_0
    case 0x3: return FieldPlace{0x01, 0, 16};   // OUT_ETHERTYPE
    case 0x4: return FieldPlace{0x00, 0, 32};   // OUT_DMAC_47_16
    case 0x5: return FieldPlace{0x01, 16, 16};  // OUT_DMAC_15_0
    default: return std::nullopt;
  }
}

// A bit range inside a field: offset and length as the action gives them (length 0: the whole
// field from the offset on), checked against the field's width.
std::optional<uint32_t> bits_within(const FieldPlace& place, uint32_t offset, uint32_t length) {
  if (length == 0) length = offset < place.width ? place.width - offset : 0;
  if (length == 0 || offset + length > place.width) return std::nullopt;
  return length;
}

}  // namespace

const char* decode_modify_actions(std::span<const uint8_t> bytes, uint32_t count, std::vector<ModifyAction>& out) {
  out.clear();
  if (count == 0 || count > kMaxModifyHeaderActions) return "action count outside 1..max_modify_header_actions";
  if (bytes.size() < uint64_t(count) * kModifyActionSize) return "actions past the command's end";
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* a = &bytes[i * kModifyActionSize];
    const uint32_t word0 = load_be32(a), word1 = load_be32(a + 4);
    const uint8_t type = uint8_t(word0 >> 28);
    const auto place = place_of((word0 >> 16) & 0xfff);
    const uint32_t offset = (word0 >> 8) & 0x1f, length = word0 & 0x1f;
    if (type == kActionAdd) return "ADD actions are not offered";
    if (type != kActionSet && type != kActionCopy) return "unknown action type";
    if (!place) return "field not offered (outer MACs and ethertype only)";
    ModifyAction action;
    action.kind = type == kActionSet ? ModifyAction::Kind::kSet : ModifyAction::Kind::kCopy;
    action.field = place->dword;
    if (type == kActionSet) {
      const auto bits = bits_within(*place, offset, length);
      if (!bits) return "bits outside the field";
      action.shift = uint8_t(place->start + offset);
      action.length = uint8_t(*bits);
      action.value = word1;
    } else {
      // copy_action_in: the source in the first word, the destination field and offset in the second.
      const auto to = place_of((word1 >> 16) & 0xfff);
      const uint32_t to_offset = (word1 >> 8) & 0x1f;
      if (!to) return "field not offered (outer MACs and ethertype only)";
      const auto bits = bits_within(*place, offset, length);
      if (!bits || !bits_within(*to, to_offset, *bits)) return "bits outside the field";
      action.from_field = place->dword;
      action.from_shift = uint8_t(place->start + offset);
      action.field = to->dword;
      action.shift = uint8_t(to->start + to_offset);
      action.length = uint8_t(*bits);
    }
    out.push_back(action);
  }
  return nullptr;
}

const char* apply_modify_actions(PacketState& state, std::span<const ModifyAction> actions) {
  for (const ModifyAction& a : actions) {
    const char* why = a.kind == ModifyAction::Kind::kSet
                          ? state.set(a.field, a.shift, a.length, a.value)
                          : state.copy(a.field, a.shift, a.length, a.from_field, a.from_shift);
    if (why != nullptr) return why;
  }
  return nullptr;
}

}  // namespace hcaemu::model::steering
