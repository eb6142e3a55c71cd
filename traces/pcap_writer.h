#pragma once
// The pcap tap of the wire: one capture file (DLT_EN10MB, nanosecond timestamps) of every frame the
// switch carries, stamped with model time so that two runs of the same workload give the same file.
// Frames are written without FCS, as build_frame() makes them; Wireshark/tshark dissect them as
// Ethernet/IP/UDP/InfiniBand.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace hcaemu::traces {

class PcapWriter {
 public:
  // Creates (truncates) `path`. nullptr and a message in *error (when given) on failure.
  static std::unique_ptr<PcapWriter> open(const std::string& path, std::string* error);

  // Appends one frame captured at model time `model_time_ps` (picoseconds since the model started;
  // written as seconds + nanoseconds). Frames longer than the snapshot length (65535) are cut to it
  // with their full length recorded. Thread: SystemC kernel only.
  // Past `limit_bytes` of file (record headers included) the frames are counted, not written: a
  // guest flooding the wire must not fill the host's disk. 0: no limit.
  void write(uint64_t model_time_ps, std::span<const uint8_t> frame);
  void set_limit(uint64_t limit_bytes) { limit_ = limit_bytes; }
  void flush();
  uint64_t frames() const { return frames_; }
  uint64_t frames_over_limit() const { return over_limit_; }

  ~PcapWriter();  // flushes and closes the file
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

 private:
  struct Handles;
  explicit PcapWriter(std::unique_ptr<Handles> handles);

  std::unique_ptr<Handles> handles_;
  uint64_t frames_ = 0, over_limit_ = 0;
  uint64_t bytes_ = 24;  // the file header
  uint64_t limit_ = 0;
};

}  // namespace hcaemu::traces
