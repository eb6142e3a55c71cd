#include "transport/stream_framing.h"

#include <algorithm>

#include "common/endian.h"

namespace hcaemu::transport {

std::vector<uint8_t> stream_encode(std::span<const uint8_t> frame) {
  std::vector<uint8_t> out(kStreamLengthBytes + frame.size());
  store_be32(out.data(), uint32_t(frame.size()));
  std::copy(frame.begin(), frame.end(), out.begin() + kStreamLengthBytes);
  return out;
}

bool StreamDecoder::feed(std::span<const uint8_t> bytes, const Frame& frame) {
  while (!broken_ && !bytes.empty()) {
    if (skip_ != 0) {  // the rest of an oversized frame
      const uint32_t n = uint32_t(std::min<size_t>(skip_, bytes.size()));
      skip_ -= n;
      bytes = bytes.subspan(n);
      continue;
    }
    const uint32_t need = want_ == 0 ? kStreamLengthBytes : want_;
    if (buffer_.size() < need) buffer_.resize(need);
    const uint32_t n = uint32_t(std::min<size_t>(need - have_, bytes.size()));
    std::copy_n(bytes.begin(), n, buffer_.begin() + have_);
    have_ += n;
    bytes = bytes.subspan(n);
    if (have_ < need) break;
    have_ = 0;
    if (want_ == 0) {
      const uint32_t length = load_be32(buffer_.data());
      if (length == 0 || length > kMaxStreamLength) {
        broken_ = true;
        bad_length_ = length;
        break;
      }
      if (length > max_frame_) {
        ++oversized_;
        skip_ = length;
      } else {
        want_ = length;
      }
      continue;
    }
    const uint32_t length = want_;
    want_ = 0;
    frame(std::span<const uint8_t>(buffer_.data(), length));
  }
  return !broken_;
}

void StreamDecoder::reset() {
  have_ = want_ = skip_ = 0;
  broken_ = false;
  bad_length_ = 0;
}

}  // namespace hcaemu::transport
