#pragma once
// What a device run leaves behind for its user: a pcap of every frame through the embedded switch
// and the per-message latency trace (model time, per stage) of every function, with the table of
// its QPs (traces/qp_table.h). Attached at elaboration; close() flushes them and logs what was
// written.
#include <filesystem>
#include <memory>
#include <string>

#include "sriov/hca_device.h"
#include "traces/latency_trace.h"
#include "traces/pcap_writer.h"
#include "traces/qp_table.h"

namespace hcaemu::sriov {

class DeviceRecorder {
 public:
  // Empty paths record nothing. Throws std::runtime_error naming the file it cannot open.
  // `pcap_limit_bytes`: the capture file's size at most (0: no limit; frames past it are counted).
  DeviceRecorder(HcaDevice& device, const std::filesystem::path& pcap_file, const std::string& trace_prefix,
                 uint64_t pcap_limit_bytes = 0);
  void close();

 private:
  void attach_trace(HcaDevice& device);

  std::unique_ptr<traces::PcapWriter> pcap_;
  std::unique_ptr<traces::LatencyTrace> trace_;
  std::unique_ptr<traces::QpTableWriter> qp_table_;
  std::filesystem::path pcap_file_;
  std::string trace_prefix_;
};

}  // namespace hcaemu::sriov
