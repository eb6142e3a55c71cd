#pragma once
// Reads a packet capture (pcap or pcapng, through libpcap; microsecond or nanosecond stamps) one
// Ethernet frame at a time. Anything but an Ethernet capture, and a file that ends in the middle of
// a record, is an error that names the file and the frame.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hcaemu::replay {

struct CapturedFrame {
  uint64_t index = 0;        // 0-based position in the capture
  uint64_t time_ns = 0;      // capture time stamp
  uint32_t wire_length = 0;  // the frame's length on the wire (may exceed bytes: a snap length)
  std::vector<uint8_t> bytes;
};

class CaptureReader {
 public:
  // Null with `error` set when the file cannot be opened, is not a capture, or is not Ethernet.
  static std::unique_ptr<CaptureReader> open(const std::string& path, std::string* error);
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  // The next frame; false at the end of the capture or on an error (then error() says which).
  bool next(CapturedFrame& frame);
  const std::string& error() const { return error_; }

 private:
  struct Handle;
  explicit CaptureReader(std::unique_ptr<Handle> handle, std::string path);
  std::unique_ptr<Handle> handle_;
  std::string path_;
  std::string error_;
  uint64_t next_index_ = 0;
};

}  // namespace hcaemu::replay
