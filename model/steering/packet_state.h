#pragma once
// A frame on its way through software-owned steering (steering/ste_v1.h), as the entries' actions
// leave it: its bytes (VLAN push and pop, decapsulation, header fields set or copied) and the
// metadata registers reg_c_0..3 (zero on entry; an action sets them, a later lookup matches them).
// Each action names where it acts by a header anchor (dr_ste_v1's: the frame's start, its first
// VLAN tag, its outer IP header, the tunnelled frame's Ethernet and IP headers) and returns nullptr,
// or why it could not act (the walk then drops the frame).
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/ethernet.h"

namespace hcaemu::model::steering {

inline constexpr uint32_t kMaxRewrittenFrame = 16384;  // inserts stop there

namespace anchor {
inline constexpr uint8_t kStart = 0x00, kFirstVlan = 0x02, kOuterL3 = 0x07, kInnerL2 = 0x13, kInnerL3 = 0x19;
}

class PacketState {
 public:
  explicit PacketState(std::span<const uint8_t> frame);

  std::span<const uint8_t> frame() const { return frame_; }
  const transport::ethernet::Parsed& parsed() const { return parsed_; }
  bool rewritten() const { return rewritten_; }
  std::vector<uint8_t> take_rewritten() { return std::move(bytes_); }
  const std::array<uint32_t, 4>& registers() const { return registers_; }

  const char* remove(uint8_t anchor, uint32_t offset, uint32_t bytes);
  const char* insert(uint8_t anchor, uint32_t offset, std::span<const uint8_t> bytes);
  const char* remove_between(uint8_t start, uint8_t end);  // [start anchor, end anchor)
  // A tunnel's headers (a packet reformat context's data) before the frame, their IP and UDP
  // lengths set for the frame that results (frame::encapsulate).
  const char* encapsulate(std::span<const uint8_t> header);
  // Bits [shift + length - 1, shift] of modify-header field dword `field` (dr_ste_v1's MDFY_FLD
  // numbers: the outer MACs and ethertype, reg_c_0..3); length 0 means 32.
  const char* set(uint8_t field, uint32_t shift, uint32_t length, uint32_t value);
  const char* copy(uint8_t to, uint32_t to_shift, uint32_t length, uint8_t from, uint32_t from_shift);

 private:
  std::optional<uint32_t> anchor_offset(uint8_t anchor) const;
  std::optional<uint32_t> read_field(uint8_t field) const;
  bool write_field(uint8_t field, uint32_t value);
  std::vector<uint8_t>& bytes();
  void reparse();

  std::span<const uint8_t> frame_;
  std::vector<uint8_t> bytes_;
  bool rewritten_ = false;
  transport::ethernet::Parsed parsed_;
  std::array<uint32_t, 4> registers_{};
};

}  // namespace hcaemu::model::steering
