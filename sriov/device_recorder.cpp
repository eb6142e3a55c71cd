// The pcap tap on the embedded switch and the latency trace hooks of every function.
#include "sriov/device_recorder.h"

#include <stdexcept>

#include "common/log.h"
#include "pcie/model_time.h"

namespace hcaemu::sriov {
namespace {

const char* service_name(uint8_t st) {
  switch (st) {
    case model::qp_st::kRc: return "rc";
    case model::qp_st::kUc: return "uc";
    case model::qp_st::kUd: return "ud";
    case model::qp_st::kXrc: return "xrc";
    case model::qp_st::kQp1: return "qp1";
    case model::qp_st::kRegUmr: return "umr";  // mlx5_ib's memory registration QP
    default: return "other";
  }
}

}  // namespace

DeviceRecorder::DeviceRecorder(HcaDevice& device, const std::filesystem::path& pcap_file, const std::string& trace_prefix,
                               uint64_t pcap_limit_bytes)
    : pcap_file_(pcap_file), trace_prefix_(trace_prefix) {
  std::string error;
  if (!pcap_file.empty() && !(pcap_ = traces::PcapWriter::open(pcap_file.string(), &error)))
    throw std::runtime_error("--pcap " + pcap_file.string() + ": " + error);
  if (!trace_prefix.empty() && !(trace_ = traces::LatencyTrace::open(trace_prefix, &error)))
    throw std::runtime_error("--trace " + trace_prefix + ": " + error);
  if (trace_ && !(qp_table_ = traces::QpTableWriter::open(traces::qp_table_path(trace_prefix), &error)))
    throw std::runtime_error("--trace " + trace_prefix + ": " + error);
  if (pcap_) {
    pcap_->set_limit(pcap_limit_bytes);
    device.eswitch().set_tap([this](std::span<const uint8_t> frame) {
      const uint64_t over = pcap_->frames_over_limit();
      pcap_->write(pcie::model_time_ps(), frame);
      if (over == 0 && pcap_->frames_over_limit() == 1)
        log().warn("pcap: {} reached its size limit (--pcap-limit-mib); later frames are counted, not written",
                   pcap_file_.string());
    });
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
  auto qp_hook = [this](uint16_t function) {
    return [this, function](const model::QpDescription& d) {
      qp_table_->record({.time_ps = pcie::model_time_ps(),
                         .function = function,
                         .qpn = d.qpn,
                         .service = service_name(d.service),
                         .address = d.address,
                         .send_cq = d.send_cq,
                         .send_cq_entries = d.send_cq_entries,
                         .recv_cq = d.recv_cq,
                         .recv_cq_entries = d.recv_cq_entries,
                         .sq_wqebbs = d.sq_wqebbs,
                         .rq_stride = d.rq_stride,
                         .mtu = d.mtu,
                         .ack_timeout = d.ack_timeout,
                         .retry_count = d.retry_count,
                         .rnr_retry = d.rnr_retry,
                         .max_rd_atomic = d.max_rd_atomic,
                         .remote_qpn = d.remote_qpn,
                         .mac = d.mac,
                         .state = d.sending ? "rts" : "rtr"});
    };
  };
  auto attach = [&](model::HcaFunction& hca, uint16_t function) {
    hca.set_stage_hook(hook(function));
    hca.set_qp_hook(qp_hook(function));
    hca.set_peer_lookup(peer);
  };
  attach(device.pf().hca(), 0);
  for (unsigned i = 0; i < device.vf_ports(); ++i) attach(device.vf(i).hca(), uint16_t(1 + i));
}

void DeviceRecorder::close() {
  if (pcap_)
    log().info("pcap: {} frames written to {}{}", pcap_->frames(), pcap_file_.string(),
               pcap_->frames_over_limit() != 0
                   ? fmt::format(" ({} more past its size limit, not written)", pcap_->frames_over_limit())
                   : std::string());
  if (trace_) {
    trace_->close();
    log().info("trace: {} events written to {}.json and {}.csv", trace_->events(), trace_prefix_, trace_prefix_);
    qp_table_->close();
    log().info("trace: {} QPs written to {}", qp_table_->records(), qp_table_->path());
  }
}

}  // namespace hcaemu::sriov
