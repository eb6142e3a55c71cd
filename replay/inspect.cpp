#include "replay/inspect.h"

#include "replay/statistics.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace hcaemu::replay {

namespace {

std::string ns_text(double ns) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(ns < 1e4 ? 0 : 1);
  if (ns >= 1e6) s << ns / 1e6 << " ms";
  else if (ns >= 1e4) s << ns / 1e3 << " us";
  else s << ns << " ns";
  return s.str();
}

struct SizeRow {
  uint64_t count = 0, bytes = 0;
};
using SizeTable = std::map<std::pair<std::string, uint64_t>, SizeRow>;  // (opcode, bucket top) -> row

void print_sizes(std::ostream& out, const SizeTable& table) {
  out << "messages by opcode and size:\n";
  out << "  " << std::left << std::setw(11) << "opcode" << std::setw(10) << "up to" << std::right << std::setw(10)
      << "count" << std::setw(16) << "bytes" << "\n";
  for (const auto& [key, row] : table)
    out << "  " << std::left << std::setw(11) << key.first << std::setw(10) << size_bucket_name(key.second) << std::right
        << std::setw(10) << row.count << std::setw(16) << row.bytes << "\n";
}

void add_size(SizeTable& table, MessageKind kind, uint64_t bytes) {
  SizeRow& row = table[{message_kind_name(kind), size_bucket(bytes)}];
  ++row.count;
  row.bytes += bytes;
}

void print_think(std::ostream& out, std::vector<uint64_t> gaps) {
  std::sort(gaps.begin(), gaps.end());
  out << "think time (a QP's completion to its next post): ";
  if (gaps.empty()) {
    out << "no samples\n";
    return;
  }
  double sum = 0;
  for (uint64_t g : gaps) sum += double(g);
  out << gaps.size() << " samples, mean " << ns_text(sum / double(gaps.size())) << ", p50 "
      << ns_text(double(nearest_rank(gaps, 50))) << ", p99 " << ns_text(double(nearest_rank(gaps, 99))) << ", max "
      << ns_text(double(gaps.back())) << "\n";
}

void print_hosts(std::ostream& out, const std::vector<WorkloadHost>& hosts) {
  out << "hosts:\n";
  size_t width = 0;
  for (const WorkloadHost& h : hosts) width = std::max(width, gid_text(h.gid).size());
  for (const WorkloadHost& h : hosts)
    out << "  " << std::left << std::setw(6) << h.name << std::setw(int(width + 2)) << gid_text(h.gid) << mac_text(h.mac) << "\n";
}

// The think times a workload gives its operations (a capture's: lower() derives them).
std::vector<uint64_t> think_times(const Workload& w) {
  std::vector<uint64_t> think;
  for (const WorkloadQp& q : w.qps) {
    if (q.connection_setup) continue;  // a connection manager's MADs: not the workload's think times
    for (const WorkloadOp& op : q.ops)
      if (op.think_ps) think.push_back((*op.think_ps + 500) / 1000);
  }
  return think;
}

std::string qpn_text(uint32_t qpn) {
  if (qpn == 0) return "-";
  std::ostringstream s;
  s << "0x" << std::hex << qpn;
  return s.str();
}

}  // namespace

void print_capture(std::ostream& out, const Reconstruction& c, size_t max_unmapped) {
  const double mapped = c.roce_frames != 0 ? 100.0 * double(c.mapped_roce_frames) / double(c.roce_frames) : 0;
  out << "frames " << c.frames << ", RoCEv2 " << c.roce_frames << ", mapped " << c.mapped_roce_frames << " ("
      << std::fixed << std::setprecision(2) << mapped << "% of RoCEv2), unmapped " << c.unmapped.size() << "\n";
  const Workload lowered = lower(c);  // the hosts as a workload names them, and the think times
  print_hosts(out, lowered.hosts);
  std::vector<uint64_t> per_qp(c.queue_pairs.size(), 0);
  for (const Message& m : c.messages) ++per_qp[m.qp];
  out << "queue pairs:\n  " << std::left << std::setw(4) << "qp" << std::setw(6) << "host" << std::setw(6) << "peer"
      << std::setw(8) << "service" << std::setw(10) << "qpn" << std::setw(10) << "peer qpn" << std::setw(7) << "mtu"
      << "messages\n";
  for (size_t i = 0; i < c.queue_pairs.size(); ++i) {
    const QueuePair& q = c.queue_pairs[i];
    out << "  " << std::left << std::setw(4) << i << std::setw(6) << c.hosts[q.host].name << std::setw(6)
        << c.hosts[q.peer_host].name << std::setw(8) << (q.connection_setup ? "ud CM" : service_name(q.service)) << std::setw(10) << qpn_text(q.qpn)
        << std::setw(10) << qpn_text(q.peer_qpn) << std::setw(7) << (q.mtu != 0 ? std::to_string(q.mtu) : "-")
        << per_qp[i] << "\n";
  }
  SizeTable sizes;
  uint64_t incomplete = 0, unanswered = 0;
  size_t data_messages = 0;
  for (const Message& m : c.messages) {
    if (c.queue_pairs[m.qp].connection_setup) continue;  // CM MADs: counted below, with the protocol
    ++data_messages;
    add_size(sizes, m.kind, m.bytes);
    incomplete += m.complete ? 0 : 1;
    unanswered += m.done_ns == 0 ? 1 : 0;
  }
  print_sizes(out, sizes);
  out << "  " << data_messages << " messages; " << incomplete << " with packets missing from the capture, "
      << unanswered << " never acknowledged or answered in it\n";
  print_think(out, think_times(lowered));
  const Anomalies& a = c.anomalies;
  out << "protocol: " << a.acks << " ACKs, " << a.sequence_naks << " PSN sequence NAKs, " << a.rnr_naks << " RNR NAKs, "
      << a.other_naks << " other NAKs, " << a.retransmitted_packets << " retransmitted packets, " << a.duplicate_responses
      << " duplicate responses, " << a.psn_gaps << " PSN gaps, " << a.cm_mads << " CM MADs (QP1), " << a.cnps << " CNPs, "
      << a.ecn_marked << " ECN-marked\n";
  std::map<std::string, uint64_t> reasons;
  for (const Unmapped& u : c.unmapped) ++reasons[u.reason.substr(0, u.reason.find(" PSN "))];
  out << "unmapped frames: " << c.unmapped.size() << "\n";
  for (const auto& [reason, count] : reasons) out << "  " << std::setw(8) << std::right << count << "  " << reason << "\n";
  for (size_t i = 0; i < c.unmapped.size() && i < max_unmapped; ++i)
    out << "  frame " << c.unmapped[i].frame << " at " << c.unmapped[i].time_ns << " ns: " << c.unmapped[i].reason << "\n";
  if (c.unmapped.size() > max_unmapped) out << "  (" << c.unmapped.size() - max_unmapped << " more; --unmapped N lists more)\n";
}

void print_workload(std::ostream& out, const Workload& w) {
  print_hosts(out, w.hosts);
  out << "queue pairs:\n";
  SizeTable sizes;
  size_t ops = 0, timed = 0, dependent = 0;
  for (size_t i = 0; i < w.qps.size(); ++i) {
    const WorkloadQp& q = w.qps[i];
    out << "  " << std::left << std::setw(4) << i << std::setw(6) << w.hosts[q.host].name << std::setw(6)
        << w.hosts[q.peer].name << std::setw(8) << service_name(q.service) << "mtu " << std::setw(6) << q.mtu
        << q.ops.size() << " operations\n";
    for (const WorkloadOp& op : q.ops) {
      add_size(sizes, op.kind, op.bytes);
      ++ops;
      if (op.post_ps) ++timed;
      if (!op.after.empty()) ++dependent;
    }
  }
  print_sizes(out, sizes);
  const std::vector<uint64_t> think = think_times(w);
  out << "  " << ops << " operations: " << timed << " with a post time, " << think.size() << " with a think time, "
      << dependent << " waiting for other completions\n";
  print_think(out, think);
}

}  // namespace hcaemu::replay
