#pragma once
// Ethernet frames over a byte stream, as QEMU's `-netdev stream` carries them (and hcaemu's uplinks
// and hcafabric, so ordinary VMs, other hcaemu processes and switches share one framing): each
// frame is a 4-byte big-endian length followed by that many bytes. Over datagrams (`-netdev
// dgram`) a frame is one datagram and needs no framing.
//
// The decoder takes whatever the socket gave and hands out whole frames. A length of 0 or above
// kMaxStreamLength cannot come from a sane peer (QEMU's own buffers stop at 64 KiB + 4 KiB): the
// stream is garbage and cannot be resynchronised, so the decoder stops and the link drops the
// connection. A frame longer than the wire's largest (max_frame) but within that bound is skipped
// and counted, and decoding goes on behind it.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace hcaemu::transport {

inline constexpr uint32_t kStreamLengthBytes = 4;
inline constexpr uint32_t kMaxStreamLength = 69632;  // 64 KiB + 4 KiB (QEMU's NET_BUFSIZE)

// The bytes QEMU's stream netdev sends for `frame`.
std::vector<uint8_t> stream_encode(std::span<const uint8_t> frame);

class StreamDecoder {
 public:
  using Frame = std::function<void(std::span<const uint8_t> frame)>;
  explicit StreamDecoder(uint32_t max_frame) : max_frame_(max_frame) {}

  // Feeds bytes; calls `frame` for each whole frame in them. False once the stream is garbage
  // (then it stays so until reset()).
  bool feed(std::span<const uint8_t> bytes, const Frame& frame);
  void reset();  // a new connection

  bool broken() const { return broken_; }
  uint32_t bad_length() const { return bad_length_; }      // the length that broke the stream
  uint64_t oversized() const { return oversized_; }         // frames skipped for being > max_frame
  bool mid_frame() const { return have_ != 0 || skip_ != 0; }  // a disconnect now cuts a frame

 private:
  uint32_t max_frame_;
  std::vector<uint8_t> buffer_;  // the header and then the frame being gathered
  uint32_t have_ = 0;            // bytes of buffer_ filled
  uint32_t want_ = 0;            // frame length once the header is in (0: reading the header)
  uint32_t skip_ = 0;            // bytes of an oversized frame still to pass over
  bool broken_ = false;
  uint32_t bad_length_ = 0;
  uint64_t oversized_ = 0;
};

}  // namespace hcaemu::transport
