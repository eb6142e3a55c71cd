#pragma once
// Test helpers that access config space the way Linux's PCI core does: capability walks
// modelled on pci_find_capability()/pci_find_ext_capability() (status bit 4, pointer at 0x34
// masked with ~3, TTL 48; extended list from 0x100 with a TTL of (4096-256)/8), and BAR sizing
// as __pci_read_base() does it (save, write all ones, read, restore).
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

namespace hcaemu::test {

using CfgRead = std::function<uint32_t(uint16_t off, unsigned size)>;
using CfgWrite = std::function<void(uint16_t off, unsigned size, uint32_t v)>;

struct CapEntry {
  uint16_t id;
  uint16_t offset;
  uint8_t version;  // extended caps only
};

// Every standard capability in list order; `loop` is set if an offset repeats or TTL runs out.
inline std::vector<CapEntry> walk_std_caps(const CfgRead& rd, bool& loop) {
  std::vector<CapEntry> caps;
  loop = false;
  if (!(rd(0x06, 2) & 0x10)) return caps;
  uint8_t pos = uint8_t(rd(0x34, 1));
  std::set<uint8_t> seen;
  int ttl = 48;
  while (ttl--) {
    if (pos < 0x40) return caps;
    pos &= ~3;
    const uint16_t ent = uint16_t(rd(pos, 2));
    const uint8_t id = ent & 0xFF;
    if (id == 0xFF) return caps;
    if (!seen.insert(pos).second) break;
    caps.push_back({id, pos, 0});
    pos = uint8_t(ent >> 8);
  }
  loop = true;
  return caps;
}

inline std::vector<CapEntry> walk_ext_caps(const CfgRead& rd, bool& loop) {
  std::vector<CapEntry> caps;
  loop = false;
  uint16_t pos = 0x100;
  int ttl = (4096 - 256) / 8;
  uint32_t header = rd(pos, 4);
  if (header == 0 || header == 0xFFFFFFFF) return caps;
  std::set<uint16_t> seen;
  while (ttl-- > 0) {
    if (!seen.insert(pos).second) break;
    caps.push_back({uint16_t(header & 0xFFFF), pos, uint8_t((header >> 16) & 0xF)});
    pos = uint16_t(header >> 20) & 0xFFC;
    if (pos < 0x100) return caps;
    header = rd(pos, 4);
    if (header == 0) return caps;
  }
  loop = true;
  return caps;
}

struct SizedBar {
  uint32_t flags = 0;
  uint64_t size = 0;  // 0 = unimplemented
  bool is_64 = false;
};

// Sizes BAR register at `reg` (and `reg`+4 if 64-bit) and restores the original value(s).
inline SizedBar size_bar(const CfgRead& rd, const CfgWrite& wr, uint16_t reg) {
  SizedBar r;
  const uint32_t orig = rd(reg, 4);
  wr(reg, 4, 0xFFFFFFFF);
  const uint32_t lo = rd(reg, 4);
  wr(reg, 4, orig);
  if (lo == 0) return r;
  r.flags = lo & 0xF;
  r.is_64 = ((lo >> 1) & 3) == 2;
  uint64_t mask = lo & ~0xFull;
  if (r.is_64) {
    const uint32_t orig_hi = rd(reg + 4, 4);
    wr(reg + 4, 4, 0xFFFFFFFF);
    const uint32_t hi = rd(reg + 4, 4);
    wr(reg + 4, 4, orig_hi);
    mask |= uint64_t(hi) << 32;
  } else {
    mask |= 0xFFFFFFFF00000000ull;
  }
  r.size = mask ? (~mask + 1) : 0;
  return r;
}

}  // namespace hcaemu::test
