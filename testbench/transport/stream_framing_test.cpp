// QEMU's stream netdev framing (transport/stream_framing.h): frames cut anywhere by the socket come
// out whole, an oversized frame is skipped and counted, and a length no sane peer sends breaks the
// stream for good.
#include "transport/stream_framing.h"

#include <gtest/gtest.h>

#include <numeric>

namespace hcaemu::transport {
namespace {

std::vector<uint8_t> frame_of(size_t size, uint8_t seed) {
  std::vector<uint8_t> f(size);
  std::iota(f.begin(), f.end(), seed);
  return f;
}

TEST(StreamFraming, FramesCutAnywhereComeOutWhole) {
  const std::vector<std::vector<uint8_t>> sent = {frame_of(60, 1), frame_of(1514, 7), frame_of(1, 3)};
  std::vector<uint8_t> bytes;
  for (const auto& f : sent) {
    const auto e = stream_encode(f);
    bytes.insert(bytes.end(), e.begin(), e.end());
  }
  for (size_t chunk : {size_t(1), size_t(3), size_t(5), size_t(100), bytes.size()}) {
    StreamDecoder d(1514);
    std::vector<std::vector<uint8_t>> got;
    for (size_t at = 0; at < bytes.size(); at += chunk) {
      const auto piece = std::span(bytes).subspan(at, std::min(chunk, bytes.size() - at));
      ASSERT_TRUE(d.feed(piece, [&](std::span<const uint8_t> f) { got.emplace_back(f.begin(), f.end()); }));
    }
    EXPECT_EQ(got, sent) << "chunks of " << chunk;
    EXPECT_FALSE(d.mid_frame());
  }
}

TEST(StreamFraming, AnOversizedFrameIsSkippedAndTheNextOneStillArrives) {
  StreamDecoder d(1514);
  std::vector<uint8_t> bytes = stream_encode(frame_of(9000, 0));
  const auto next = stream_encode(frame_of(64, 9));
  bytes.insert(bytes.end(), next.begin(), next.end());
  std::vector<std::vector<uint8_t>> got;
  ASSERT_TRUE(d.feed(bytes, [&](std::span<const uint8_t> f) { got.emplace_back(f.begin(), f.end()); }));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], frame_of(64, 9));
  EXPECT_EQ(d.oversized(), 1u);
}

TEST(StreamFraming, GarbageLengthsBreakTheStreamUntilReset) {
  for (uint32_t bad : {0u, kMaxStreamLength + 1, 0xffffffffu}) {
    StreamDecoder d(1514);
    std::vector<uint8_t> bytes(8, 0);
    bytes[0] = uint8_t(bad >> 24), bytes[1] = uint8_t(bad >> 16), bytes[2] = uint8_t(bad >> 8), bytes[3] = uint8_t(bad);
    int frames = 0;
    EXPECT_FALSE(d.feed(bytes, [&](std::span<const uint8_t>) { ++frames; }));
    EXPECT_TRUE(d.broken());
    EXPECT_EQ(d.bad_length(), bad);
    EXPECT_FALSE(d.feed(stream_encode(frame_of(60, 0)), [&](std::span<const uint8_t>) { ++frames; }));
    EXPECT_EQ(frames, 0);
    d.reset();
    EXPECT_TRUE(d.feed(stream_encode(frame_of(60, 0)), [&](std::span<const uint8_t>) { ++frames; }));
    EXPECT_EQ(frames, 1);
  }
}

TEST(StreamFraming, ADisconnectMidFrameIsVisible) {
  StreamDecoder d(1514);
  const auto bytes = stream_encode(frame_of(100, 0));
  EXPECT_TRUE(d.feed(std::span(bytes).first(50), [](std::span<const uint8_t>) {}));
  EXPECT_TRUE(d.mid_frame());
}

}  // namespace
}  // namespace hcaemu::transport
