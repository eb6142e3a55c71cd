// The Internet checksum's sum (transport/ethernet.h sum16 + fold), four bytes at a time, against
// the RFC 1071 definition taken word by word: every length from 0 to 300 (odd tails), every start
// alignment, carried-in partial sums, and the all-ones words that make the end-around carry work.
#include "transport/ethernet.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace hcaemu::transport::ethernet {
namespace {

uint16_t reference(std::span<const uint8_t> bytes, uint32_t carried_in) {
  uint64_t sum = carried_in;
  for (size_t i = 0; i < bytes.size(); i += 2) {
    const uint32_t high = bytes[i], low = i + 1 < bytes.size() ? bytes[i + 1] : 0;
    sum += (high << 8) | low;
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(sum);
}

TEST(InternetChecksum, EveryLengthAlignmentAndCarryMatchesTheWordByWordSum) {
  std::mt19937 random(7);
  std::vector<uint8_t> buffer(320);
  for (int round = 0; round < 3; ++round) {
    for (uint8_t& b : buffer) b = round == 2 ? 0xff : uint8_t(random());  // the last round: all ones
    for (size_t start = 0; start < 4; ++start)
      for (size_t length = 0; length + start <= 304; ++length)
        for (uint32_t carried_in : {0u, 0xffffu, 0x1234abcdu, 0xffffffffu}) {
          const std::span<const uint8_t> bytes(buffer.data() + start, length);
          ASSERT_EQ(fold(sum16(bytes, carried_in)), reference(bytes, carried_in))
              << "start " << start << " length " << length << " carried in " << carried_in;
        }
  }
}

TEST(InternetChecksum, SumsChainAcrossPieces) {
  std::vector<uint8_t> bytes(1500);
  std::mt19937 random(11);
  for (uint8_t& b : bytes) b = uint8_t(random());
  const std::span<const uint8_t> all(bytes);
  for (size_t cut : {0u, 2u, 20u, 40u, 1498u})  // even cuts: each piece's words stay whole
    EXPECT_EQ(fold(sum16(all.subspan(cut), sum16(all.first(cut)))), fold(sum16(all))) << "cut " << cut;
}

}  // namespace
}  // namespace hcaemu::transport::ethernet
