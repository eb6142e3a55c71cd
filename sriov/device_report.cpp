// The counters of every function and of the embedded switch, at the end of a run.
#include "sriov/device_report.h"

#include "common/log.h"

namespace hcaemu::sriov {

namespace {

void log_summary(FunctionPort& port) {
  const auto& e = port.hca().eth_counters();
  log().info("{}: commands {} (unsupported {}, failed {}); eth tx {} frames / {} WQEs / {} CQEs, rx {} frames "
             "(no WQE {}, steering miss {}, no RQ {}), tx errors {}, unclaimed SQ doorbells {}",
             port.name(), port.hca().command_counters().executed, port.hca().firmware().unsupported_commands(),
             port.hca().firmware().failed_commands(), e.tx_frames, e.tx_wqes, e.tx_cqes, e.rx_frames, e.rx_no_wqe,
             e.rx_steering_miss, e.rx_no_rq, e.tx_error_cqes, port.hca().unclaimed_sq_doorbells());
}

// What the function refused because it failed or was flooded (issue 14); silent when nothing was.
void log_protection(FunctionPort& port) {
  const auto& c = port.hca().counters();
  if (c.failures == 0 && c.rx_frames_dropped_queue_full == 0) return;
  log().info("{}: failed on a host fault {} time(s) (doorbells and frames dropped meanwhile {}); frames dropped "
             "with its receive queue full {}",
             port.name(), c.failures, c.dropped_while_failed, c.rx_frames_dropped_queue_full);
}

void log_details(FunctionPort& port) {
  const auto& e = port.hca().eth_counters();
  log().debug("{}: eth doorbells {} (unknown sq {}, not ready {}, in error {}, dbr faults {}, overrun {}), tx nops {} "
              "tso {} no-port {} paced {} tx-steering drop {} encapsulated {} header-modified {}, rx cqes {} (dma faults {}, cqe failures {}, too big {}, rq not ready {}), "
              "decapsulated {} (not tunnelled {})",
              port.name(), e.doorbells, e.doorbell_unknown_sq, e.doorbell_not_ready, e.doorbell_in_error,
              e.dbr_faults, e.producer_overrun, e.tx_nops, e.tx_tso_wqes, e.tx_no_port, e.tx_paced, e.tx_steering_drop, e.tx_reformatted, e.header_modified, e.rx_cqes, e.rx_dma_faults,
              e.rx_cqe_failures, e.rx_too_big, e.rx_rq_not_ready, e.rx_decapsulated, e.rx_not_tunnelled);
  if (e.sw_steering_walks != 0)
    log().info("{}: software steering walked {} frames, {} dropped on an entry the model does not perform; {} "
               "Ethernet doorbells waited behind looped RDMA work (rule writes)",
               port.name(), e.sw_steering_walks, e.sw_steering_faults, port.hca().counters().eth_doorbells_deferred);
}

void log_rdma(FunctionPort& port) {
  const auto& r = port.hca().rdma_counters();
  if (r.sq_doorbells == 0 && r.rx_packets == 0) return;
  log().info("{}: rdma {} WQEs, {} messages completed, tx {} packets, rx {} packets, acks {}/{} naks {}/{} rnr {}/{} "
             "(sent/received), retransmits {}, timeouts {}, duplicates {}, error CQEs {}, flushed {}",
             port.name(), r.wqes, r.messages_completed, r.tx_packets, r.rx_packets, r.acks_sent, r.acks_received,
             r.naks_sent, r.naks_received, r.rnr_naks_sent, r.rnr_naks_received, r.retransmits, r.timeouts,
             r.duplicates, r.error_cqes, r.flushed_wqes);
  // At info level once the wire damaged frames (a link with faults): the receiving side's view of them.
  const auto level = r.rx_bad_icrc != 0 || r.rx_parse_errors != 0 ? spdlog::level::info : spdlog::level::debug;
  log().log(level, "{}: rdma drops: not addressed to it {}, parse errors {}, bad ICRC {}, unknown QP {}, QP not ready {}, "
              "not from the QP's path {}, RoCE v1 {}; local protection {}, remote access {}, invalid requests {}, "
              "bad WQEs {}, DMA faults {}, other services {}",
              port.name(), r.rx_not_addressed, r.rx_parse_errors, r.rx_bad_icrc, r.rx_unknown_qp, r.rx_qp_not_ready,
              r.rx_wrong_source,
              r.rx_roce_v1_unsupported, r.local_protection_errors, r.remote_access_errors, r.invalid_requests,
              r.bad_wqes, r.dma_faults, r.unsupported_service);
  if (r.rx_wrong_source != 0 || r.rx_not_addressed != 0)
    log().info("{}: rdma frames dropped: to a connected QP from outside its path {}, not addressed to the function {}",
               port.name(), r.rx_wrong_source, r.rx_not_addressed);
  if (r.umr_wqes != 0 || r.umr_errors != 0)
    log().info("{}: rdma UMR WQEs (MR loads, re-registration) {}, refused {}", port.name(), r.umr_wqes, r.umr_errors);
  if (r.page_faults != 0 || r.page_fault_failures != 0)
    log().info("{}: rdma ODP page faults {}, resumed {}, failed instead {}", port.name(), r.page_faults,
               r.page_fault_resumes, r.page_fault_failures);
  if (r.datagrams_sent != 0 || r.datagrams_received != 0 || r.datagrams_dropped_no_receive != 0 || r.rx_bad_qkey != 0)
    log().info("{}: datagrams (UD/QP1) sent {}, received {}, dropped: no receive {}, bad Q_Key {}, too long {}",
               port.name(), r.datagrams_sent, r.datagrams_received, r.datagrams_dropped_no_receive, r.rx_bad_qkey,
               r.datagrams_too_long);
}

// "eswitch" for port 0's embedded switch, "eswitch1" for port 1's.
std::string switch_name(HcaDevice& device) {
  const uint8_t port = device.config().port;
  return port == 0 ? "eswitch" : "eswitch" + std::to_string(port);
}

}  // namespace

void log_device_counters(HcaDevice& device) {
  log_rdma(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) log_rdma(device.vf(i));
  log_details(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) log_details(device.vf(i));
  log_summary(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) log_summary(device.vf(i));
  log_protection(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) log_protection(device.vf(i));
  const auto& sw = device.eswitch().counters();
  const std::string name = switch_name(device);
  log().info("{}: forwarded {}, flooded {}, looped back {}, dropped: unknown unicast {}, sender down {}, to self {}, "
             "runt {}, spoofed source {}, group copies to unsubscribed vports {}",
             name, sw.forwarded, sw.flooded, sw.looped_back, sw.drop_unknown_unicast, sw.drop_sender_down, sw.drop_to_self,
             sw.drop_runt, sw.drop_spoofed, sw.group_unsubscribed);
  if (device.eswitch().has_uplink())
    log().info("{} uplink: sent {}, received {}, dropped: link down {}, unknown unicast in {}, local source in {}, "
               "runt in {}",
               name, sw.uplink_tx, sw.uplink_rx, sw.drop_uplink_down, sw.drop_uplink_unknown, sw.drop_uplink_local_source,
               sw.drop_uplink_runt);
}

std::string device_counters_text(HcaDevice& device) {
  std::string out;
  auto add = [&](const char* key, uint64_t value) { out += " " + std::string(key) + "=" + std::to_string(value); };
  auto function = [&](FunctionPort& port) {
    const auto& r = port.hca().rdma_counters();
    const auto& e = port.hca().eth_counters();
    out += port.name();
    add("rdma_tx_packets", r.tx_packets);
    add("rdma_tx_bytes", r.tx_bytes);
    add("rdma_rx_packets", r.rx_packets);
    add("rdma_rx_bytes", r.rx_bytes);
    add("messages_completed", r.messages_completed);
    add("retransmits", r.retransmits);
    add("timeouts", r.timeouts);
    add("duplicates", r.duplicates);
    add("naks_sent", r.naks_sent);
    add("rx_bad_icrc", r.rx_bad_icrc);
    add("rx_parse_errors", r.rx_parse_errors);
    add("error_cqes", r.error_cqes);
    add("flushed_wqes", r.flushed_wqes);
    add("np_cnp_sent", r.np_cnp_sent);
    add("rp_cnp_handled", r.rp_cnp_handled);
    add("eth_tx_frames", e.tx_frames);
    add("eth_rx_frames", e.rx_frames);
    out += "\n";
  };
  function(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) function(device.vf(i));
  const auto& sw = device.eswitch().counters();
  out += switch_name(device);
  add("forwarded", sw.forwarded);
  add("flooded", sw.flooded);
  add("looped_back", sw.looped_back);
  add("uplink_tx", sw.uplink_tx);
  add("uplink_rx", sw.uplink_rx);
  add("drop_uplink_down", sw.drop_uplink_down);
  add("drop_uplink_unknown", sw.drop_uplink_unknown);
  add("drop_unknown_unicast", sw.drop_unknown_unicast);
  add("drop_spoofed", sw.drop_spoofed);
  return out + "\n";
}

}  // namespace hcaemu::sriov
