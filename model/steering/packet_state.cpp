#include "model/steering/packet_state.h"

#include <optional>

#include "common/endian.h"
#include "model/eth/frame.h"

namespace hcaemu::model::steering {
namespace {

namespace ethernet = transport::ethernet;

// Modify-header field dwords (dr_ste_v1 MDFY_FLD numbers) the model reads and writes.
constexpr uint8_t kFieldDmacHigh = 0x00, kFieldDmacLowEthertype = 0x01, kFieldSmacHigh = 0x08, kFieldSmacLow = 0x09;
constexpr uint8_t kFieldRegister[] = {0x90, 0x91, 0x8e, 0x8f};  // reg_c_0..3 (REGISTER_0_0 ..)

uint32_t mask_of(uint32_t length) { return length >= 32 ? ~0u : (1u << length) - 1; }

}  // namespace

PacketState::PacketState(std::span<const uint8_t> frame) : frame_(frame), parsed_(ethernet::parse(frame)) {}

std::vector<uint8_t>& PacketState::bytes() {
  if (!rewritten_) {
    bytes_.assign(frame_.begin(), frame_.end());
    rewritten_ = true;
  }
  return bytes_;
}

void PacketState::reparse() {
  frame_ = bytes_;
  parsed_ = ethernet::parse(frame_);
}

std::optional<uint32_t> PacketState::anchor_offset(uint8_t at) const {
  switch (at) {
    case anchor::kStart: return 0;
    case anchor::kFirstVlan: return 2 * ethernet::kMacSize;
    case anchor::kOuterL3:
      if (parsed_.l3_offset == 0) return std::nullopt;
      return parsed_.l3_offset;
    case anchor::kInnerL2:
    case anchor::kInnerL3: {
      const auto payload = frame::tunnel_payload(frame_, parsed_);
      if (!payload) return std::nullopt;
      if (at == anchor::kInnerL2) return payload->ethernet ? std::optional<uint32_t>(payload->offset) : std::nullopt;
      if (!payload->ethernet) return payload->offset;
      const auto inner = ethernet::parse(frame_.subspan(payload->offset));
      if (inner.l3_offset == 0) return std::nullopt;
      return payload->offset + inner.l3_offset;
    }
    default: return std::nullopt;
  }
}

const char* PacketState::remove(uint8_t at, uint32_t offset, uint32_t count) {
  const auto start = anchor_offset(at);
  if (!start) return "header anchor not found in the frame";
  if (uint64_t(*start) + offset + count > frame_.size()) return "header removal past the frame's end";
  auto& b = bytes();
  b.erase(b.begin() + *start + offset, b.begin() + *start + offset + count);
  reparse();
  return nullptr;
}

const char* PacketState::insert(uint8_t at, uint32_t offset, std::span<const uint8_t> data) {
  const auto start = anchor_offset(at);
  if (!start) return "header anchor not found in the frame";
  if (uint64_t(*start) + offset > frame_.size() || frame_.size() + data.size() > kMaxRewrittenFrame)
    return "header insertion past the frame's end";
  auto& b = bytes();
  b.insert(b.begin() + *start + offset, data.begin(), data.end());
  reparse();
  return nullptr;
}

const char* PacketState::remove_between(uint8_t start_anchor, uint8_t end_anchor) {
  const auto start = anchor_offset(start_anchor), end = anchor_offset(end_anchor);
  if (!start || !end || *end < *start) return "header anchor not found in the frame";
  return remove(start_anchor, 0, *end - *start);
}

const char* PacketState::encapsulate(std::span<const uint8_t> header) {
  if (frame_.size() + header.size() > kMaxRewrittenFrame) return "header insertion past the frame's end";
  std::vector<uint8_t> out;
  frame::encapsulate(header, frame_, out);
  bytes_ = std::move(out);
  rewritten_ = true;
  reparse();
  return nullptr;
}

std::optional<uint32_t> PacketState::read_field(uint8_t field) const {
  for (uint32_t i = 0; i < registers_.size(); ++i)
    if (field == kFieldRegister[i]) return registers_[i];
  if (frame_.size() < ethernet::kEthHeaderSize) return std::nullopt;
  switch (field) {
    case kFieldDmacHigh: return load_be32(&frame_[0]);
    case kFieldDmacLowEthertype: return uint32_t(load_be16(&frame_[4])) << 16 | parsed_.ethertype;
    case kFieldSmacHigh: return load_be32(&frame_[6]);
    case kFieldSmacLow: return uint32_t(load_be16(&frame_[10])) << 16;
    default: return std::nullopt;
  }
}

bool PacketState::write_field(uint8_t field, uint32_t value) {
  for (uint32_t i = 0; i < registers_.size(); ++i)
    if (field == kFieldRegister[i]) {
      registers_[i] = value;
      return true;
    }
  if (frame_.size() < ethernet::kEthHeaderSize) return false;
  switch (field) {
    case kFieldDmacHigh: store_be32(&bytes()[0], value); break;
    case kFieldDmacLowEthertype: {
      auto& b = bytes();
      store_be16(&b[4], uint16_t(value >> 16));
      store_be16(&b[parsed_.vlan ? 16 : 12], uint16_t(value));
      break;
    }
    case kFieldSmacHigh: store_be32(&bytes()[6], value); break;
    case kFieldSmacLow: store_be16(&bytes()[10], uint16_t(value >> 16)); break;
    default: return false;
  }
  reparse();
  return true;
}

const char* PacketState::set(uint8_t field, uint32_t shift, uint32_t length, uint32_t value) {
  if (length == 0) length = 32;
  const auto old = read_field(field);
  if (!old || shift >= 32 || length > 32 - shift) return "modify-header field not offered";
  const uint32_t mask = mask_of(length) << shift;
  write_field(field, (*old & ~mask) | ((value << shift) & mask));
  return nullptr;
}

const char* PacketState::copy(uint8_t to, uint32_t to_shift, uint32_t length, uint8_t from, uint32_t from_shift) {
  if (length == 0) length = 32;
  const auto source = read_field(from);
  if (!source || from_shift >= 32 || length > 32 - from_shift) return "modify-header field not offered";
  return set(to, to_shift, length, (*source >> from_shift) & mask_of(length));
}

}  // namespace hcaemu::model::steering
