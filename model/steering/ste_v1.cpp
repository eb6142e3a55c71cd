#include "model/steering/ste_v1.h"

#include <algorithm>

#include "model/eth/frame.h"
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
namespace action {
constexpr uint8_t kNop = 0x00, kCopy = 0x05, kSet = 0x06, kRemoveBySize = 0x08, kRemoveHeaderToHeader = 0x09,
                  kInsertInline = 0x0a, kInsertPointer = 0x0b, kFlowTag = 0x0c, kModifyList = 0x0f;
constexpr uint32_t kInsertEncap = 1;  // INSERT_POINTER attributes: the pointer is a tunnel's headers
// Those that take two 4-byte slots.
constexpr bool is_double(uint8_t id) { return id == kCopy || id == kSet || id == kInsertInline || id == 0x07 || id == 0x0b; }
}  // namespace action
constexpr uint32_t kMaxModifyActions = 255;  // num_of_modify_actions is 8 bits

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

std::optional<DefinerFields> definer_fields(uint16_t type, const PacketState& packet) {
  const auto frame = packet.frame();
  if (frame.size() < transport::ethernet::kEthHeaderSize) return std::nullopt;
  switch (type) {
    case lookup_type::kEthL2Dst: return l2_one_address(frame, packet.parsed(), 0);
    case lookup_type::kEthL2Src: return l2_one_address(frame, packet.parsed(), 6);
    case lookup_type::kEthL2SrcDst: return l2_both_addresses(frame, packet.parsed());
    case lookup_type::kTunnelHeader: {  // ste_flex_parser_tnl_geneve: a Geneve header's fields, else zeros
      const auto key = frame::match_key(frame, packet.parsed());
      DefinerFields f{};
      f[0] = key[0x40 + 0x25] & 0x3f;                                     // geneve_opt_len
      f[1] = uint8_t(key[0x40 + 0x1b] << 7);                              // geneve_oam
      std::copy_n(key.begin() + 0x40 + 0x26, 2, f.begin() + 2);           // geneve_protocol_type
      std::copy_n(key.begin() + 0x40 + 0x18, 3, f.begin() + 4);           // geneve_vni
      return f;
    }
    case lookup_type::kSteeringRegisters0: {  // reg_c_0..3
      DefinerFields f{};
      for (uint32_t i = 0; i < 4; ++i) put32(f, 4 * i, packet.registers()[i]);
      return f;
    }
    default: return std::nullopt;
  }
}

std::optional<DefinerTag> definer_tag(const MatchDefinerView& definer, const PacketState& packet) {
  const auto frame = packet.frame();
  if (definer.format != 0 || frame.size() < transport::ethernet::kEthHeaderSize) return std::nullopt;
  // def0's bits the model has no value for: sx_sniffer, functional_loopback, qp_type,
  // encapsulation_type, port (dword 4 [30:29], [27:22]); force_loopback (dword 5 [21]); the
  // checksum and l3/l4 ok bits (dword 7 [15:8]; DR leaves them out without definer_supp_checksum).
  const auto masked = [&](uint32_t at, uint32_t bits) {
    return (uint32_t(definer.mask[at]) << 24 | uint32_t(definer.mask[at + 1]) << 16 |
            uint32_t(definer.mask[at + 2]) << 8 | definer.mask[at + 3]) & bits;
  };
  if (masked(16, 0x6fc00000u) || masked(20, 0x00200000u) || masked(28, 0x0000ff00u)) return std::nullopt;
  const Parsed& p = packet.parsed();
  const L2Common c = l2_common(p);
  DefinerTag t{};
  put32(t, 0, packet.registers()[0]);
  put32(t, 4, packet.registers()[1]);
  std::copy_n(frame.begin(), 6, t.begin() + 8);  // dmac
  t[14] = uint8_t(p.ethertype >> 8);
  t[15] = uint8_t(p.ethertype);
  put32(t, 16, c.fragmented << 28 | c.l3_type << 20 | c.l4_type << 18 | c.vlan_qualifier << 16 | c.tci);
  std::copy_n(frame.begin() + 6, 6, t.begin() + 24);  // smac
  if (c.l4_type == 1 && p.l4_offset + 14 <= frame.size()) t[31] = frame[p.l4_offset + 13];  // TCP flags
  return t;
}

uint32_t ste_hash(std::span<const uint8_t> bytes) {
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
  Walk(const SwIcm& icm, std::span<const uint8_t> frame, const ReformatData& reformats, const Definers& definers)
      : icm_(icm), packet_(frame), reformats_(reformats), definers_(definers) {}

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
    if (packet_.rewritten()) {
      verdict_.rewritten = true;
      verdict_.frame = packet_.take_rewritten();
    }
    using Outcome = SteVerdict::Outcome;
    static constexpr Outcome kOutcome[] = {Outcome::kDrop, Outcome::kAllow, Outcome::kTir, Outcome::kFlowTable,
                                           Outcome::kSampler};
    verdict_.outcome = kOutcome[size_t(t.kind)];
    verdict_.id = t.id;
    return verdict_;
  }

  // The entry of a table of `entries` the frame hashes to (the previous hit chose the lookup type
  // and byte mask). False when the lookup type is one the model does not parse.
  bool entry_address(uint64_t& address, uint64_t entries) {
    if (entries <= 1) return true;
    if ((next_type_ & 0xff) >= kFirstDefinerIndex) {  // a definer's table: all 32 bytes, no byte mask
      verdict_.fault_lookup_type = next_type_;
      const auto tag = masked_tag(uint8_t(next_type_));
      if (!tag) return false;
      address += uint64_t(ste_hash(*tag) % entries) * kSteBytes;
      return true;
    }
    if (next_byte_mask_ == 0) return true;
    const auto fields = definer_fields(next_type_, packet_);
    verdict_.fault_lookup_type = next_type_;
    if (!fields) return false;
    DefinerFields masked{};
    for (uint32_t i = 0; i < 16; ++i)
      if (next_byte_mask_ & (0x8000u >> i)) masked[i] = (*fields)[i];
    address += uint64_t(ste_hash(masked) % entries) * kSteBytes;
    return true;
  }

  // The frame's tag under definer `index`'s mask; nullopt when there is no such definer or the model
  // cannot build its tag.
  std::optional<DefinerTag> masked_tag(uint8_t index) {
    const MatchDefinerView* definer = definers_ ? definers_(index) : nullptr;
    if (definer == nullptr) return std::nullopt;
    auto tag = definer_tag(*definer, packet_);
    if (tag)
      for (uint32_t i = 0; i < kDefinerTagBytes; ++i) (*tag)[i] &= definer->mask[i];
    return tag;
  }

  // Whether the frame hits the entry; nullopt (a fault) for an entry the model cannot evaluate.
  std::optional<bool> matches() {
    const std::span<const uint8_t> ste(ste_);
    if (format() == kFormatMatch && ste_[6] >= kFirstDefinerIndex) {
      verdict_.fault_lookup_type = own_type();
      const auto tag = masked_tag(ste_[6]);
      if (!tag) {
        fault("match entry of a definer the model has not, or cannot build");
        return std::nullopt;
      }
      return std::equal(tag->begin(), tag->end(), ste.begin() + 0x20);
    }
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
    const auto fields = definer_fields(own_type(), packet_);
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
    return act(std::span<const uint8_t>(ste_).subspan(first, 0x20 - first), false);
  }

  // The actions in `slots` (4 bytes each, a double action in two). A modify list runs the actions
  // in header-modify ICM (8 bytes each), which hold no further list.
  bool act(std::span<const uint8_t> slots, bool in_list) {
    for (uint32_t at = 0; at + 4 <= slots.size(); at += 4) {
      const uint32_t a = be32(slots, at);
      const uint8_t id = uint8_t(a >> 24);
      uint32_t data = 0;
      if (action::is_double(id)) {
        if (at + 8 > slots.size()) return fail("STE action cut at the entry's end");
        data = be32(slots, at + 4);
      }
      if (const char* why = act_one(id, a, data, slots.subspan(at + 4, action::is_double(id) ? 4 : 0), in_list))
        return fail(why);
      if (action::is_double(id)) at += 4;
      else if (in_list) at += 4;  // a single action takes the first half of its 8-byte list entry
    }
    return true;
  }

  const char* act_one(uint8_t id, uint32_t a, uint32_t data, std::span<const uint8_t> inline_data, bool in_list) {
    const uint8_t start = uint8_t(a >> 16 & 0x3f);
    switch (id) {
      case action::kNop: return nullptr;
      case action::kFlowTag: verdict_.flow_tag = a & 0xffffff; return nullptr;
      case action::kRemoveBySize:  // [13:7] offset, [5:0] size, in 2-byte words
        return packet_.remove(start, (a >> 7 & 0x7f) * 2, (a & 0x3f) * 2);
      case action::kRemoveHeaderToHeader:  // [13:8] end anchor
        return packet_.remove_between(start, uint8_t(a >> 8 & 0x3f));
      case action::kInsertInline:  // [15:9] offset in words; 4 bytes of data
        return packet_.insert(start, (a >> 9 & 0x7f) * 2, inline_data);
      case action::kSet:  // [23:16] field dword, [13:8] left shift + 0x20, [5:0] length
        return packet_.set(uint8_t(a >> 16), (a >> 8 & 0x3f) - 0x20, a & 0x3f, data);
      case action::kCopy:  // the source field and its right shift in the second dword
        return packet_.copy(uint8_t(a >> 16), (a >> 8 & 0x3f) - 0x20, a & 0x3f, uint8_t(data >> 16),
                            (data >> 8 & 0x3f) - 0x20);
      case action::kInsertPointer:  // [15:9] offset, [8:3] size in words, [2:0] attributes; the context
        return insert_pointer(start, (a >> 9 & 0x7f) * 2, (a >> 3 & 0x3f) * 2, a & 0x7, data);
      case action::kModifyList:
        if (in_list) return "a modify list inside a modify list";
        return modify_list(a >> 16 & 0xff, a & 0xffff);
      default: return "STE action not offered";
    }
  }

  // DR's encapsulation: a packet reformat context's headers at the frame's start.
  const char* insert_pointer(uint8_t start, uint32_t offset, uint32_t bytes, uint32_t attributes, uint32_t id) {
    const auto data = reformats_ ? reformats_(id) : std::span<const uint8_t>{};
    if (data.empty() || bytes > data.size()) return "no such packet reformat context";
    if (attributes != action::kInsertEncap || start != anchor::kStart || offset != 0)
      return "header insertion by pointer not offered";
    return packet_.encapsulate(data.first(bytes));
  }

  // num_of_modify_actions 8-byte actions at header-modify ICM + 64 x modify_actions_ptr.
  const char* modify_list(uint32_t count, uint32_t index) {
    if (count == 0) return nullptr;
    std::array<uint8_t, 8 * kMaxModifyActions> list{};
    const auto actions = std::span(list).first(8 * count);
    if (!icm_.read(kHeaderModifyIcm.start + uint64_t(index) * 64, actions)) return "modify list outside header-modify ICM";
    return act(actions, true) ? nullptr : verdict_.fault;
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
  PacketState packet_;
  const ReformatData& reformats_;
  const Definers& definers_;
  std::array<uint8_t, kSteBytes> ste_{};
  uint16_t next_type_ = 0, next_byte_mask_ = 0;
  SteVerdict verdict_;
};

}  // namespace

SteVerdict walk_ste_v1(const SwIcm& icm, uint64_t root, std::span<const uint8_t> frame, const ReformatData& reformats,
                       const Definers& definers) {
  return Walk(icm, frame, reformats, definers).run(root);
}

}  // namespace hcaemu::model::steering
