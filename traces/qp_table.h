#pragma once
// The QPs of a run as the device saw each when it became ready to receive (INIT to RTR) and to
// send (RTR to RTS), written beside the latency trace as PREFIX.qps.csv. A capture and its trace show what was sent and when; this
// table adds what shaped the device's timing but never reaches the wire: which CQ each end
// completes into and how large it is, the send queue's size, the retry settings.
//
//   time_ps,function,qpn,service,address,send_cq,send_cq_entries,recv_cq,recv_cq_entries,
//   sq_wqebbs,rq_stride,mtu,ack_timeout,retry_count,rnr_retry,max_rd_atomic,remote_qpn,mac,state
//
// address is the QP's source GID as text (dotted IPv4 for an IPv4-mapped one); service is rc, uc,
// ud, xrc, qp1, umr or other; rq_stride is the bytes of one receive WQE, which the device reads
// whole for each message received (0: the QP takes its receives from an SRQ); mtu in bytes (0 for datagram QPs); max_rd_atomic counts READs/atomics in flight;
// remote_qpn is the connected peer's QPN (0 for datagram QPs): a UC requester's QPN is never on
// the wire, but its responder knows it. mac is the function's MAC at that address (a datagram
// QP's packets name their source address per WQE: its own is the table's first); state is rtr or
// rts.
#include <array>
#include <cstdint>
#include <fstream>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hcaemu::traces {

struct QpRecord {
  uint64_t time_ps = 0;
  uint16_t function = 0;  // vhca id: 0 PF, 1+n VF n
  uint32_t qpn = 0;
  std::string service;
  std::array<uint8_t, 16> address{};
  uint32_t send_cq = 0, send_cq_entries = 0, recv_cq = 0, recv_cq_entries = 0;
  uint32_t sq_wqebbs = 0, rq_stride = 0, mtu = 0;
  uint32_t ack_timeout = 0, retry_count = 0, rnr_retry = 0, max_rd_atomic = 0;
  uint32_t remote_qpn = 0;
  std::array<uint8_t, 6> mac{};
  std::string state;  // "rtr" or "rts"
  bool operator==(const QpRecord&) const = default;
};

// "10.0.0.1" for an IPv4-mapped GID, else IPv6 text; and back (false for neither).
std::string address_text(const std::array<uint8_t, 16>& gid);
bool parse_address(const std::string& text, std::array<uint8_t, 16>& gid);

class QpTableWriter {
 public:
  // Creates (truncates) `path`; null and a message on failure.
  static std::unique_ptr<QpTableWriter> open(const std::string& path, std::string* error);
  void record(const QpRecord& r);
  void close();
  uint64_t records() const { return records_; }
  const std::string& path() const { return path_; }

 private:
  QpTableWriter() = default;
  std::string path_;
  std::ofstream file_;
  uint64_t records_ = 0;
};

// Null with "FILE:LINE: reason" on a malformed table.
std::optional<std::vector<QpRecord>> read_qp_table(const std::string& path, std::string* error);
// The same from a stream; `name` stands for the file in errors.
std::optional<std::vector<QpRecord>> read_qp_table(std::istream& in, const std::string& name, std::string* error);
// PREFIX.qps.csv for the trace PREFIX.csv (or PREFIX).
std::string qp_table_path(const std::string& trace_csv);

}  // namespace hcaemu::traces
