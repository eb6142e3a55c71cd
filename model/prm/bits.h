#pragma once
// Typed access to mlx5's big-endian structures (commands, contexts, EQEs, CQEs, WQEs). A field is
// named the way mlx5-layouts.md lists it: the byte offset of its big-endian dword and the bit range
// [hi:lo] inside that dword (bit 31 = MSB). Wider fields are whole dwords or 64-bit words.
// Every access is bounds-checked against the buffer: a read past the end returns 0, a write past
// the end is dropped, so a short or hostile buffer never leads outside its memory.
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/endian.h"

namespace hcaemu::model {

struct Field {
  uint32_t offset;  // byte offset of the big-endian dword
  uint8_t hi = 31;  // bit range inside that dword
  uint8_t lo = 0;

  constexpr uint32_t width() const { return uint32_t(hi - lo + 1); }
  constexpr uint32_t mask() const { return width() >= 32 ? 0xffffffffu : ((1u << width()) - 1); }
};

inline uint32_t get(std::span<const uint8_t> buf, Field f) {
  if (f.offset > buf.size() || buf.size() - f.offset < 4) return 0;
  return (load_be32(&buf[f.offset]) >> f.lo) & f.mask();
}

inline void set(std::span<uint8_t> buf, Field f, uint32_t value) {
  if (f.offset > buf.size() || buf.size() - f.offset < 4) return;
  uint32_t dw = load_be32(&buf[f.offset]);
  const uint32_t m = f.mask() << f.lo;
  dw = (dw & ~m) | ((value << f.lo) & m);
  store_be32(&buf[f.offset], dw);
}

// 64-bit big-endian words (addresses, GUIDs) at a byte offset.
inline uint64_t get64(std::span<const uint8_t> buf, uint32_t offset) {
  if (offset > buf.size() || buf.size() - offset < 8) return 0;
  return load_be64(&buf[offset]);
}

inline void set64(std::span<uint8_t> buf, uint32_t offset, uint64_t value) {
  if (offset > buf.size() || buf.size() - offset < 8) return;
  store_be64(&buf[offset], value);
}

// A sub-structure (e.g. a context inside a command) as its own span; empty when out of range.
inline std::span<const uint8_t> sub(std::span<const uint8_t> buf, uint32_t offset, uint32_t size) {
  if (offset > buf.size() || buf.size() - offset < size) return {};
  return buf.subspan(offset, size);
}
inline std::span<uint8_t> sub(std::span<uint8_t> buf, uint32_t offset, uint32_t size) {
  if (offset > buf.size() || buf.size() - offset < size) return {};
  return buf.subspan(offset, size);
}

}  // namespace hcaemu::model
