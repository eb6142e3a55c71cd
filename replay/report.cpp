#include "replay/report.h"

#include "replay/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <vector>

namespace hcaemu::replay {

namespace {

std::string ns3(uint64_t ps) {
  char text[32];
  std::snprintf(text, sizeof text, "%llu.%03llu", static_cast<unsigned long long>(ps / 1000),
                static_cast<unsigned long long>(ps % 1000));
  return text;
}

}  // namespace

void write_messages_csv(std::ostream& out, const ReplayResult& r) {
  out << "qp,op,opcode,bytes,post_ns,done_ns,fct_ns,status\n";
  for (const OpResult& op : r.ops) {
    out << op.qp << ',' << op.op << ',' << message_kind_name(op.kind) << ',' << op.bytes << ',' << ns3(op.post_ps) << ',';
    if (op.done_ps != 0)
      out << ns3(op.done_ps) << ',' << ns3(op.done_ps - op.post_ps) << ',';
    else
      out << ",,";
    out << (op.done_ps == 0 ? "incomplete" : op.status == 0 ? "ok" : "error " + std::to_string(op.status)) << '\n';
  }
}

void write_summary(std::ostream& out, const ReplayResult& r) {
  std::map<std::pair<std::string, uint64_t>, std::vector<uint64_t>> fct;  // (opcode, bucket top) -> FCTs
  size_t errors = 0;
  uint64_t payload = 0;
  for (const OpResult& op : r.ops) {
    if (op.done_ps == 0) continue;
    if (op.status != 0) {
      ++errors;
      continue;
    }
    fct[{message_kind_name(op.kind), size_bucket(op.bytes)}].push_back(op.done_ps - op.post_ps);
    payload += op.bytes;
  }
  out << "flow completion time (post -> completion seen), ns:\n";
  out << std::left << std::setw(11) << "opcode" << std::setw(8) << "up to" << std::right << std::setw(9) << "count"
      << std::setw(14) << "p50" << std::setw(14) << "p99" << std::setw(14) << "p99.9" << std::setw(14) << "max" << "\n";
  for (auto& [key, samples] : fct) {
    std::sort(samples.begin(), samples.end());
    out << std::left << std::setw(11) << key.first << std::setw(8) << size_bucket_name(key.second) << std::right << std::setw(9)
        << samples.size() << std::setw(14) << ns3(nearest_rank(samples, 50)) << std::setw(14)
        << ns3(nearest_rank(samples, 99)) << std::setw(14) << ns3(nearest_rank(samples, 99.9)) << std::setw(14)
        << ns3(samples.back()) << "\n";
  }
  if (!r.ports.empty()) {
    out << "switch ports (toward each host):\n" << std::left << std::setw(6) << "host" << std::right << std::setw(10)
        << "frames" << std::setw(14) << "bytes" << std::setw(8) << "busy" << std::setw(16) << "max queue B"
        << std::setw(14) << "max frames" << "\n";
    for (size_t i = 0; i < r.ports.size(); ++i) {
      const PortResult& p = r.ports[i];
      const double busy = r.end_ps != 0 ? 100.0 * double(p.busy_ps) / double(r.end_ps) : 0;
      out << std::left << std::setw(6) << ("h" + std::to_string(i)) << std::right << std::setw(10) << p.frames
          << std::setw(14) << p.bytes << std::setw(7) << std::fixed << std::setprecision(1) << busy << "%"
          << std::setw(16) << p.max_queue_bytes << std::setw(14) << p.max_queue_frames << "\n";
    }
  }
  const double seconds = double(r.end_ps) / 1e12;
  out << "operations " << r.ops.size() << ", errors " << errors << ", incomplete " << r.incomplete << "\n";
  out << "packets " << r.packets << ", wire bytes " << r.wire_bytes << ", model time " << ns3(r.end_ps) << " ns";
  if (seconds > 0)
    out << std::fixed << std::setprecision(2) << ", payload " << double(payload) * 8 / seconds / 1e9 << " Gb/s";
  out << "\n";
}

}  // namespace hcaemu::replay

namespace hcaemu::replay {

namespace {
std::string gbps(uint64_t bytes, uint64_t bin_ps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", double(bytes) * 8.0 / (double(bin_ps) / 1e12) / 1e9);
  return text;
}
}  // namespace

void write_link_timeline(std::ostream& out, const ReplayResult& r, uint64_t bin_ps) {
  out << "port,bin_start_ns,bytes,gbps,max_queue_bytes\n";
  for (size_t p = 0; p < r.ports.size(); ++p)
    for (const auto& [bin, b] : r.ports[p].timeline)
      out << 'h' << p << ',' << ns3(bin * bin_ps) << ',' << b.bytes << ',' << gbps(b.bytes, bin_ps) << ','
          << b.max_queue_bytes << '\n';
}

void write_qp_timeline(std::ostream& out, const ReplayResult& r, uint64_t bin_ps) {
  std::map<std::pair<size_t, uint64_t>, uint64_t> bytes;  // (qp, bin) -> payload completed
  for (const OpResult& op : r.ops)
    if (op.done_ps != 0 && op.status == 0) bytes[{op.qp, op.done_ps / bin_ps}] += op.bytes;
  out << "qp,bin_start_ns,bytes,gbps\n";
  for (const auto& [key, b] : bytes) out << key.first << ',' << ns3(key.second * bin_ps) << ',' << b << ',' << gbps(b, bin_ps) << '\n';
}

}  // namespace hcaemu::replay
