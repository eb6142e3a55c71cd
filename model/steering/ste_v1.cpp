#include "model/steering/ste_v1.h"

#include <algorithm>

#include "model/steering/terminals.h"

namespace hcaemu::model::steering {
namespace {

using transport::ethernet::Parsed;

uint32_t be32(std::span<const uint8_t> b, uint32_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
}
void put32(std::span<uint8_t> b, uint32_t at, uint32_t v) {
  for (uint32_t i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (24 - 8 * i));
}

// Entry formats (the lookup type's high byte) and action IDs (an action slot's top byte).
constexpr uint8_t kFormatBwcByte = 0x0, kFormatBwcDword = 0x1, kFormatMatch = 0x4;
constexpr uint8_t kActionNop = 0x00, kActionRemoveBySize = 0x08, kActionInsertInline = 0x0a, kActionFlowTag = 0x0c;
// Header anchors the rewriting actions count from (dr_ste_v1 header anchors): the frame's start,
// its first VLAN tag (where one is or would be: after the MACs), its outer IP header.
constexpr uint8_t kAnchorStart = 0x00, kAnchorFirstVlan = 0x02, kAnchorOuterL3 = 0x07;

// The header fields every L2 lookup type shares: l3/l4 type, first VLAN, fragment.
struct L2Common {
  uint32_t l3_type = 0, l4_type = 0, vlan_qualifier = 0, tci = 0, fragmented = 0;
};
L2Common l2_common(const Parsed& p) {
  L2Common c;
  c.l3_type = p.ip_version == 4 ? 1 : p.ip_version == 6 ? 2 : 0;
  c.l4_type = p.l4_offset == 0 ? 0 : p.l4_protocol == transport::ethernet::kProtoTcp ? 1
                                   : p.l4_protocol == transport::ethernet::kProtoUdp ? 2 : 0;
  c.vlan_qualifier = p.vlan ? 1 : 0;  // a customer VLAN (0x8100): the parser knows no other tag
  c.tci = p.vlan ? p.vlan_tci : 0;
  c.fragmented = p.fragment ? 1 : 0;
  return c;
}

// ste_eth_l2_src_v1 / ste_eth_l2_dst_v1: flags and first VLAN, a MAC, its last 16 bits + ethertype.
DefinerFields l2_one_address(std::span<const uint8_t> frame, const Parsed& p, uint32_t mac_at) {
  DefinerFields f{};
  const L2Common c = l2_common(p);
  put32(f, 0x00, c.fragmented << 28 | c.l3_type << 20 | c.l4_type << 18 | c.vlan_qualifier << 16 | c.tci);
  std::copy_n(frame.begin() + mac_at, 6, f.begin() + 4);
  f[10] = uint8_t(p.ethertype >> 8);
  f[11] = uint8_t(p.ethertype);
  return f;
}

// ste_eth_l2_src_dst_v1.
DefinerFields l2_both_addresses(std::span<const uint8_t> frame, const Parsed& p) {
  DefinerFields f{};
  const L2Common c = l2_common(p);
  std::copy_n(frame.begin(), 4, f.begin());          // dmac_47_16
  std::copy_n(frame.begin() + 6, 4, f.begin() + 4);  // smac_47_16
  f[8] = frame[4];
  f[9] = frame[5];
  f[11] = uint8_t(c.l3_type << 2 | c.vlan_qualifier);
  f[12] = uint8_t(c.tci >> 8);
  f[13] = uint8_t(c.tci);
  f[14] = frame[10];
  f[15] = frame[11];
  return f;
}

}  // namespace

std::optional<DefinerFields> definer_fields(uint16_t type, std::span<const uint8_t> frame, const Parsed& parsed) {
  if (frame.size() < transport::ethernet::kEthHeaderSize) return std::nullopt;
  switch (type) {
    case lookup_type::kEthL2Dst: return l2_one_address(frame, parsed, 0);
    case lookup_type::kEthL2Src: return l2_one_address(frame, parsed, 6);
    case lookup_type::kEthL2SrcDst: return l2_both_addresses(frame, parsed);
    case lookup_type::kSteeringRegisters0: return DefinerFields{};  // metadata registers: zero on entry
    default: return std::nullopt;
  }
}

uint32_t ste_hash(std::span<const uint8_t, 16> bytes) {
  uint32_t crc = 0;
  for (uint8_t byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? 0xedb88320u : 0);
  }
  return __builtin_bswap32(crc);
}

namespace {

// One walk: the state between entries.
class Walk {
 public:
  Walk(const SwIcm& icm, std::span<const uint8_t> frame)
      : icm_(icm), frame_(frame), parsed_(transport::ethernet::parse(frame)) {}

  SteVerdict run(uint64_t root) {
    uint64_t address = root, entries = 1;
    for (verdict_.hops = 0; verdict_.hops < kMaxSteHops; ++verdict_.hops) {
      if (const auto terminal = terminal_at(address)) return finish(*terminal);
      verdict_.fault_address = address;
      if (!entry_address(address, entries)) return fault("hash over a lookup type the model does not parse");
      verdict_.fault_address = address;
      if (!icm_.read(address, ste_)) return fault("entry outside steering ICM");
      const auto hit = matches();
      if (!hit) return verdict_;
      if (!*hit) {
        address = miss_address();
        entries = 1;
        continue;
      }
      if (!take_hit()) return verdict_;
      hit_address(address, entries);
    }
    return fault("steering walk too long (a loop)");
  }

 private:
  uint8_t format() const { return ste_[0]; }
  uint16_t own_type() const { return uint16_t(ste_[0] << 8 | ste_[6]); }

  bool fail(const char* why) {
    fault(why);
    return false;
  }
  SteVerdict fault(const char* why) {
    verdict_.outcome = SteVerdict::Outcome::kFault;
    verdict_.fault = why;
    verdict_.fault_entry = ste_;
    return verdict_;
  }
  SteVerdict finish(const Terminal& t) {
    using Outcome = SteVerdict::Outcome;
    static constexpr Outcome kOutcome[] = {Outcome::kDrop, Outcome::kAllow, Outcome::kTir, Outcome::kFlowTable};
    verdict_.outcome = kOutcome[size_t(t.kind)];
    verdict_.id = t.id;
    return verdict_;
  }

  // The entry of a table of `entries` the frame hashes to (the previous hit chose the lookup type
  // and byte mask). False when the lookup type is one the model does not parse.
  bool entry_address(uint64_t& address, uint64_t entries) {
    if (entries <= 1 || next_byte_mask_ == 0) return true;
    const auto fields = definer_fields(next_type_, frame_, parsed_);
    verdict_.fault_lookup_type = next_type_;
    if (!fields) return false;
    DefinerFields masked{};
    for (uint32_t i = 0; i < 16; ++i)
      if (next_byte_mask_ & (0x8000u >> i)) masked[i] = (*fields)[i];
    address += uint64_t(ste_hash(masked) % entries) * kSteBytes;
    return true;
  }

  // Whether the frame hits the entry; nullopt (a fault) for an entry the model cannot evaluate.
  std::optional<bool> matches() {
    const std::span<const uint8_t> ste(ste_);
    if (format() == kFormatMatch) {
      // A match entry compares 32 bytes; DR writes them only as continuation and always-hit entries,
      // whose lookup type sees no field of the frame.
      verdict_.fault_lookup_type = own_type();
      if (ste_[6] != 0x0f && ste_[6] != 0x00) {
        fault("match entry of a lookup type the model does not parse");
        return std::nullopt;
      }
      return std::all_of(ste.begin() + 0x20, ste.end(), [](uint8_t b) { return b == 0; });
    }
    if (format() != kFormatBwcByte && format() != kFormatBwcDword) {
      fault("entry format not offered (match-and-mask)");
      return std::nullopt;
    }
    const auto mask = ste.subspan(0x20, 16), tag = ste.subspan(0x30, 16);
    if (std::all_of(mask.begin(), mask.end(), [](uint8_t b) { return b == 0; }))
      return std::all_of(tag.begin(), tag.end(), [](uint8_t b) { return b == 0; });
    const auto fields = definer_fields(own_type(), frame_, parsed_);
    verdict_.fault_lookup_type = own_type();
    if (!fields) {
      fault("entry of a lookup type the model does not parse");
      return std::nullopt;
    }
    for (uint32_t i = 0; i < 16; ++i)
      if (((*fields)[i] & mask[i]) != tag[i]) return false;
    return true;
  }

  uint64_t miss_address() const {
    return (uint64_t(ste_[7]) << 26 | be32(ste_, 0x08) >> 6) << 6;
  }

  // Counts and acts. False (a fault) on an action the model does not perform.
  bool take_hit() {
    if (const uint32_t counter = be32(ste_, 0x00) & 0xffffff) verdict_.counters.push_back(counter);
    const uint32_t first = format() == kFormatMatch ? 0x14 : 0x18;
    for (uint32_t at = first; at < 0x20; at += 4) {
      const uint32_t action = be32(ste_, at);
      switch (action >> 24) {
        case kActionNop: break;
        case kActionFlowTag: verdict_.flow_tag = action & 0xffffff; break;
        case kActionRemoveBySize:  // [21:16] anchor, [13:7] offset, [5:0] size, both in 2-byte words
          if (!remove(uint8_t(action >> 16 & 0x3f), (action >> 7 & 0x7f) * 2, (action & 0x3f) * 2)) return false;
          break;
        case kActionInsertInline:  // [21:16] anchor, [15:9] offset in words; the next slot: 4 bytes to insert
          if (at + 8 > 0x20) return fail("STE action cut at the entry's end");
          if (!insert(uint8_t(action >> 16 & 0x3f), (action >> 9 & 0x7f) * 2, std::span(ste_).subspan(at + 4, 4)))
            return false;
          at += 4;
          break;
        default:
          return fail("STE action not offered");
      }
    }
    return true;
  }

  // Where an anchor is in the frame as it now is; nullopt for one the model does not place.
  std::optional<uint32_t> anchor_offset(uint8_t anchor) const {
    switch (anchor) {
      case kAnchorStart: return 0;
      case kAnchorFirstVlan: return 2 * transport::ethernet::kMacSize;
      case kAnchorOuterL3:
        if (parsed_.l3_offset == 0) return std::nullopt;
        return parsed_.l3_offset;
      default: return std::nullopt;
    }
  }

  // The frame the rest of the walk sees (and delivery gets), rewritten; parsed again (reparse).
  std::vector<uint8_t>& rewritable() {
    if (!verdict_.rewritten) {
      verdict_.frame.assign(frame_.begin(), frame_.end());
      verdict_.rewritten = true;
    }
    return verdict_.frame;
  }
  void reparse() {
    frame_ = verdict_.frame;
    parsed_ = transport::ethernet::parse(frame_);
  }

  bool remove(uint8_t anchor, uint32_t offset, uint32_t bytes) {
    const auto at = anchor_offset(anchor);
    if (!at) return fail("header anchor not offered");
    if (uint64_t(*at) + offset + bytes > frame_.size()) return fail("header removal past the frame's end");
    auto& f = rewritable();
    f.erase(f.begin() + *at + offset, f.begin() + *at + offset + bytes);
    reparse();
    return true;
  }

  bool insert(uint8_t anchor, uint32_t offset, std::span<const uint8_t> bytes) {
    const auto at = anchor_offset(anchor);
    if (!at) return fail("header anchor not offered");
    if (uint64_t(*at) + offset > frame_.size() || frame_.size() + bytes.size() > kMaxRewrittenFrame)
      return fail("header insertion past the frame's end");
    auto& f = rewritable();
    f.insert(f.begin() + *at + offset, bytes.begin(), bytes.end());
    reparse();
    return true;
  }

  // The hit address holds (table address >> 5) | entries, the table aligned to its size.
  void hit_address(uint64_t& address, uint64_t& entries) {
    const uint64_t v = uint64_t(ste_[0x0f]) << 27 | be32(ste_, 0x10) >> 5;
    entries = v & (~v + 1);
    address = (v & ~entries) << 5;
    if (format() == kFormatMatch) {
      next_type_ = ste_[0x0e];
      next_byte_mask_ = 0;
    } else {
      next_type_ = uint16_t((ste_[0x16] >> 7) << 8 | ste_[0x0e]);
      next_byte_mask_ = uint16_t(ste_[0x14] << 8 | ste_[0x15]);
    }
  }

  const SwIcm& icm_;
  std::span<const uint8_t> frame_;
  Parsed parsed_;
  std::array<uint8_t, kSteBytes> ste_{};
  uint16_t next_type_ = 0, next_byte_mask_ = 0;
  SteVerdict verdict_;
};

}  // namespace

SteVerdict walk_ste_v1(const SwIcm& icm, uint64_t root, std::span<const uint8_t> frame) {
  return Walk(icm, frame).run(root);
}

}  // namespace hcaemu::model::steering
