// libFuzzer target: any bytes as what an uplink peer sends on a stream link. The decoder must never
// hand out a frame of 0 or more than max_frame bytes, and must give the same frames (and the same
// verdict) however the socket cut the bytes: whole, byte by byte, and at cuts the input chooses.
// The first input byte picks max_frame's scale and the cut stride; the rest is the stream.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "transport/stream_framing.h"

using hcaemu::transport::StreamDecoder;

namespace {
struct Outcome {
  std::vector<std::vector<uint8_t>> frames;
  bool ok = true;
  uint64_t oversized = 0;
  bool operator==(const Outcome&) const = default;
};

Outcome decode(std::span<const uint8_t> bytes, uint32_t max_frame, size_t stride) {
  StreamDecoder d(max_frame);
  Outcome o;
  for (size_t at = 0; at < bytes.size() && o.ok; at += stride) {
    o.ok = d.feed(bytes.subspan(at, std::min(stride, bytes.size() - at)), [&](std::span<const uint8_t> f) {
      if (f.empty() || f.size() > max_frame) std::abort();
      o.frames.emplace_back(f.begin(), f.end());
    });
  }
  o.oversized = d.oversized();
  return o;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t max_frame = 16u << (data[0] & 0x0f);  // 16 B .. 512 KiB: both sides of the hard bound
  const size_t stride = 1 + (data[0] >> 4);
  const std::span<const uint8_t> stream(data + 1, size - 1);
  const Outcome whole = decode(stream, max_frame, stream.size() + 1);
  if (!(decode(stream, max_frame, 1) == whole) || !(decode(stream, max_frame, stride) == whole)) std::abort();
  return 0;
}
