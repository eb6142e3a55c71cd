#pragma once
// Steering entries laid out as mlx5 DR writes them for STE v1 (ICM image: control, then the bit
// mask at 0x20 and the tag at 0x30), for tests of the walk (model/steering/ste_v1.h).
#include <array>
#include <cstdint>
#include <span>

#include <gtest/gtest.h>

#include "common/endian.h"
#include "model/objects/sw_icm.h"

namespace hcaemu::model::test {

struct SteImage {
  std::array<uint8_t, 64> bytes{};

  SteImage& lookup(uint16_t type) {
    bytes[0] = uint8_t(type >> 8);
    bytes[6] = uint8_t(type);
    return *this;
  }
  SteImage& miss(uint64_t address) {
    const uint64_t index = address >> 6;
    bytes[7] = uint8_t(index >> 26);
    store_be32(&bytes[0x08], uint32_t(index << 6));
    return *this;
  }
  // The next table: its address and entries, the lookup type and byte mask it is hashed by.
  SteImage& hit(uint64_t address, uint32_t entries = 1, uint16_t next_type = 0x000f, uint16_t byte_mask = 0) {
    const uint64_t v = (address >> 5) | entries;
    bytes[0x0f] = uint8_t(v >> 27);
    store_be32(&bytes[0x10], uint32_t(v << 5));
    bytes[0x0e] = uint8_t(next_type);
    store_be16(&bytes[0x14], byte_mask);
    bytes[0x16] = uint8_t((next_type >> 8) << 7);
    return *this;
  }
  SteImage& never_hit() {
    bytes[0x0f] = 0xff;
    store_be32(&bytes[0x10], 0xffffffe0u);
    return *this;
  }
  SteImage& counter(uint32_t id) {
    store_be32(&bytes[0x00], uint32_t(bytes[0]) << 24 | (id & 0xffffff));
    return *this;
  }
  SteImage& action(uint32_t slot, uint32_t value) {
    store_be32(&bytes[0x18 + 4 * slot], value);
    return *this;
  }
  SteImage& match(std::span<const uint8_t, 16> mask, std::span<const uint8_t, 16> tag) {
    std::copy(mask.begin(), mask.end(), bytes.begin() + 0x20);
    std::copy(tag.begin(), tag.end(), bytes.begin() + 0x30);
    return *this;
  }
  // A match-format entry's 32-byte tag (a definer's lookup: no mask in the entry).
  SteImage& match_tag(std::span<const uint8_t, 32> tag) {
    std::copy(tag.begin(), tag.end(), bytes.begin() + 0x20);
    return *this;
  }
  SteImage& always_miss() {  // DR's: tag 0xdc under a zero mask
    bytes[0x30] = 0xdc;
    return *this;
  }
  void write(SwIcm& icm, uint64_t address) const { EXPECT_TRUE(icm.write(address, bytes)); }
};

}  // namespace hcaemu::model::test
