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
  void write(uint64_t model_time_ps, std::span<const uint8_t> frame);
  void flush();
  uint64_t frames() const { return frames_; }

  ~PcapWriter();  // flushes and closes the file
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

 private:
  struct Handles;
  explicit PcapWriter(std::unique_ptr<Handles> handles);

  std::unique_ptr<Handles> handles_;
  uint64_t frames_ = 0;
};

}  // namespace hcaemu::traces
