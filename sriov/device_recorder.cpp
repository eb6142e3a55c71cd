// The pcap tap on the embedded switch and the latency trace hooks of every function.
#include "sriov/device_recorder.h"

#include <stdexcept>

#include "common/log.h"
#include "pcie/model_time.h"

namespace hcaemu::sriov {

DeviceRecorder::DeviceRecorder(HcaDevice& device, const std::filesystem::path& pcap_file, const std::string& trace_prefix)
    : pcap_file_(pcap_file), trace_prefix_(trace_prefix) {
  std::string error;
  if (!pcap_file.empty() && !(pcap_ = traces::PcapWriter::open(pcap_file.string(), &error)))
    throw std::runtime_error("--pcap " + pcap_file.string() + ": " + error);
  if (!trace_prefix.empty() && !(trace_ = traces::LatencyTrace::open(trace_prefix, &error)))
    throw std::runtime_error("--trace " + trace_prefix + ": " + error);
  if (pcap_) {
    device.eswitch().set_tap([this](std::span<const uint8_t> frame) { pcap_->write(pcie::model_time_ps(), frame); });
  }
  if (trace_) attach_trace(device);
}

void DeviceRecorder::attach_trace(HcaDevice& device) {
  auto hook = [this](uint16_t function) {
    return [this, function](const model::StageStamp& s) {
      trace_->record({.time_ps = s.time_ps != 0 ? s.time_ps : pcie::model_time_ps(),
                      .function = s.function >= 0 ? uint16_t(s.function) : function,
                      .qpn = s.qpn,
                      .message = s.message,
                      .opcode = s.opcode,
                      .bytes = s.bytes,
                      .stage = s.stage});
    };
  };
  // Remote delivery is stamped by the responder on the requester's record: MAC -> function.
  const DeviceConfig& config = device.config();
  auto peer = [&config](const transport::Mac& mac) -> int32_t {
    for (uint16_t vhca = 0; vhca <= config.total_vfs; ++vhca)
      if (config.function_mac(vhca) == mac) return vhca;
    return -1;
  };
  device.pf().hca().set_stage_hook(hook(0));
  device.pf().hca().set_peer_lookup(peer);
  for (unsigned i = 0; i < device.vf_ports(); ++i) {
    device.vf(i).hca().set_stage_hook(hook(uint16_t(1 + i)));
    device.vf(i).hca().set_peer_lookup(peer);
  }
}

void DeviceRecorder::close() {
  if (pcap_) log().info("pcap: {} frames written to {}", pcap_->frames(), pcap_file_.string());
  if (trace_) {
    trace_->close();
    log().info("trace: {} events written to {}.json and {}.csv", trace_->events(), trace_prefix_, trace_prefix_);
  }
}

}  // namespace hcaemu::sriov
