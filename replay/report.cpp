#include "replay/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <optional>
#include <vector>

#include "replay/statistics.h"

namespace hcaemu::replay {

namespace {

// std::to_chars rather than snprintf: the CSV files' numbers were a tenth of a short replay's
// time. Same text (to_chars with a precision is printf's %.*f).
std::string ns3(uint64_t ps) {
  char text[32];
  char* end = std::to_chars(text, text + sizeof text, ps / 1000).ptr;
  const unsigned fraction = unsigned(ps % 1000);
  *end++ = '.';
  *end++ = char('0' + fraction / 100);
  *end++ = char('0' + fraction / 10 % 10);
  *end++ = char('0' + fraction % 10);
  return std::string(text, end);
}
std::string fixed(double v, int decimals = 3) {
  char text[352];  // DBL_MAX in fixed notation with its decimals
  const auto r = std::to_chars(text, text + sizeof text, v, std::chars_format::fixed, decimals);
  return std::string(text, r.ptr);
}
std::string gbps(uint64_t bytes, uint64_t ps) { return fixed(ps != 0 ? double(bytes) * 8.0 / double(ps) * 1e3 : 0.0); }

bool succeeded(const OpResult& op) { return op.done_ps != 0 && op.status == 0; }
uint64_t fct(const OpResult& op) { return op.done_ps - op.post_ps; }
// Slowdown x 1000 (so percentiles stay integers): FCT over the ideal FCT; 0 when not measured.
uint64_t slowdown_milli(const OpResult& op) {
  return op.ideal_ps != 0 ? uint64_t(std::llround(1000.0 * double(fct(op)) / double(op.ideal_ps))) : 0;
}

struct Samples {
  std::vector<uint64_t> fct, slowdown;
  void sort() {
    std::sort(fct.begin(), fct.end());
    std::sort(slowdown.begin(), slowdown.end());
  }
};

// (opcode, bucket) -> samples; "all" rows under bucket 0 / opcode "all".
std::map<std::pair<std::string, uint64_t>, Samples> group(const ReplayResult& r) {
  std::map<std::pair<std::string, uint64_t>, Samples> out;
  for (const OpResult& op : r.ops) {
    if (!succeeded(op)) continue;
    for (const auto& key : {std::make_pair(std::string(message_kind_name(op.kind)), size_bucket(op.bytes)),
                            std::make_pair(std::string("all"), uint64_t(0))}) {
      Samples& s = out[key];
      s.fct.push_back(fct(op));
      if (op.ideal_ps != 0) s.slowdown.push_back(slowdown_milli(op));
    }
  }
  for (auto& [key, s] : out) s.sort();
  return out;
}

// At the device, doorbell to CQE written: what hcaemu's latency trace measures.
bool has_device_fct(const OpResult& op) { return op.device_post_ps != 0 && op.device_done_ps >= op.device_post_ps; }
uint64_t device_fct(const OpResult& op) { return op.device_done_ps - op.device_post_ps; }
// The replay's FCT against the captured run's, both at the device, relative: (replayed - captured) / captured.
double fct_error(const OpResult& op) {
  return (double(device_fct(op)) - double(op.captured_fct_ps)) / double(op.captured_fct_ps);
}

// Against the captured run: how many operations had its FCT, and how far the replay's is.
struct CaptureComparison {
  size_t compared = 0, within_1_percent = 0;
  std::vector<uint64_t> error_ppm;  // |error| in parts per million, sorted
};
CaptureComparison compare_to_capture(const ReplayResult& r) {
  CaptureComparison c;
  for (const OpResult& op : r.ops) {
    if (op.captured_fct_ps == 0 || !succeeded(op) || !has_device_fct(op)) continue;
    const double e = std::abs(fct_error(op));
    ++c.compared;
    c.within_1_percent += e <= 0.01;
    c.error_ppm.push_back(uint64_t(std::llround(e * 1e6)));
  }
  std::sort(c.error_ppm.begin(), c.error_ppm.end());
  return c;
}

// Operations that completed with an error status.
size_t failed_operations(const ReplayResult& r) {
  return size_t(std::count_if(r.ops.begin(), r.ops.end(), [](const OpResult& op) { return op.done_ps != 0 && op.status != 0; }));
}

uint64_t payload_done(const ReplayResult& r) {
  uint64_t bytes = 0;
  for (const OpResult& op : r.ops)
    if (succeeded(op)) bytes += op.bytes;
  return bytes;
}

// "resent_packets:16 rnr_naks:1", the non-zero counts only; empty when there are none.
std::string captured_anomalies_text(const CapturedAnomalies& a) {
  std::string text;
  for (const CapturedAnomalyCount& c : kCapturedAnomalyCounts)
    if (const uint32_t n = a.*c.count; n != 0) text += (text.empty() ? "" : " ") + std::string(c.name) + ":" + std::to_string(n);
  return text;
}

}  // namespace

std::string size_bucket_label(uint64_t top) {
  std::string name = size_bucket_name(top);
  std::erase(name, ' ');
  return name;
}

void write_messages_csv(std::ostream& out, const ReplayResult& r) {
  out << "qp,op,opcode,bytes,post_ns,first_packet_ns,done_ns,fct_ns,ideal_fct_ns,slowdown,status,device_fct_ns,"
         "captured_fct_ns,fct_error,captured_anomalies\n";
  for (const OpResult& op : r.ops) {
    out << op.qp << ',' << op.op << ',' << message_kind_name(op.kind) << ',' << op.bytes << ',' << ns3(op.post_ps) << ','
        << (op.first_packet_ps != 0 ? ns3(op.first_packet_ps) : "") << ',';
    if (op.done_ps != 0)
      out << ns3(op.done_ps) << ',' << ns3(fct(op)) << ',';
    else
      out << ",,";
    out << (op.ideal_ps != 0 ? ns3(op.ideal_ps) : "") << ','
        << (op.ideal_ps != 0 && op.done_ps != 0 ? fixed(double(fct(op)) / double(op.ideal_ps)) : "") << ','
        << (op.done_ps == 0 ? "incomplete" : op.status == 0 ? "ok" : "error " + std::to_string(op.status)) << ',';
    if (has_device_fct(op)) out << ns3(device_fct(op));
    out << ',';
    if (op.captured_fct_ps != 0) out << ns3(op.captured_fct_ps);
    out << ',';
    if (op.captured_fct_ps != 0 && succeeded(op) && has_device_fct(op)) out << fixed(fct_error(op), 5);
    out << ',' << captured_anomalies_text(op.captured_anomalies) << '\n';
  }
}

void write_summary(std::ostream& out, const ReplayResult& r) {
  out << "flow completion time (post -> completion seen), ns; slowdown = FCT / ideal FCT (alone on the empty network):\n";
  out << std::left << std::setw(11) << "opcode" << std::setw(9) << "up to" << std::right << std::setw(8) << "count"
      << std::setw(13) << "p50" << std::setw(13) << "p99" << std::setw(13) << "p99.9" << std::setw(13) << "max"
      << std::setw(9) << "sd p50" << std::setw(9) << "sd p99" << std::setw(10) << "sd p99.9" << "\n";
  for (const auto& [key, s] : group(r)) {
    const auto sd = [&](double p) { return s.slowdown.empty() ? std::string("-") : fixed(double(nearest_rank(s.slowdown, p)) / 1000.0, 2); };
    out << std::left << std::setw(11) << key.first << std::setw(9) << (key.second ? size_bucket_name(key.second) : "all")
        << std::right << std::setw(8) << s.fct.size() << std::setw(13) << ns3(nearest_rank(s.fct, 50)) << std::setw(13)
        << ns3(nearest_rank(s.fct, 99)) << std::setw(13) << ns3(nearest_rank(s.fct, 99.9)) << std::setw(13)
        << ns3(s.fct.back()) << std::setw(9) << sd(50) << std::setw(9) << sd(99) << std::setw(10) << sd(99.9) << "\n";
  }
  out << "network: " << r.topology << "\n";
  out << std::left << std::setw(22) << "link" << std::right << std::setw(10) << "frames" << std::setw(14) << "bytes"
      << std::setw(8) << "busy" << std::setw(14) << "max queue B" << std::setw(11) << "ECN marks" << std::setw(8)
      << "pauses" << std::setw(12) << "paused us" << std::setw(8) << "drops" << "\n";
  for (const fabric::LinkStats& l : r.links) {
    if (l.frames == 0 && l.drops == 0 && l.pause_frames == 0) continue;
    const double busy = r.end_ps != 0 ? 100.0 * double(l.busy_ps) / double(r.end_ps) : 0;
    out << std::left << std::setw(22) << l.name << std::right << std::setw(10) << l.frames << std::setw(14) << l.bytes
        << std::setw(7) << fixed(busy, 1) << "%" << std::setw(14) << l.max_queue_bytes << std::setw(11) << l.ecn_marks
        << std::setw(8) << l.pause_frames << std::setw(12) << fixed(double(l.paused_ps) / 1e6, 1) << std::setw(8)
        << l.drops << "\n";
  }
  if (const CaptureComparison c = compare_to_capture(r); c.compared != 0) {
    const auto pct = [&](double p) { return fixed(double(nearest_rank(c.error_ppm, p)) / 1e4, 3) + "%"; };
    out << "against the captured run's latency trace: " << c.compared << " operations, FCT error p50 " << pct(50)
        << ", p99 " << pct(99) << ", max " << pct(100) << "; within 1%: " << c.within_1_percent << "\n";
  }
  const size_t errors = failed_operations(r);
  out << "operations " << r.ops.size() << ", errors " << errors << ", incomplete " << r.incomplete;
  if (r.connection_setup_ops != 0)
    out << "; connection set-up MADs " << r.connection_setup_ops << " (incomplete " << r.connection_setup_incomplete << ")";
  out << "\n";
  out << "packets " << r.packets << ", wire bytes " << r.wire_bytes << ", drops " << r.network.drops << ", ECN marks "
      << r.network.ecn_marks << ", pause frames " << r.network.pause_frames << ", CNPs " << r.cc.np_cnp_sent
      << " sent / " << r.cc.rp_cnp_handled << " acted on, model time " << ns3(r.end_ps) << " ns";
  if (r.end_ps != 0) out << ", payload " << fixed(double(payload_done(r)) * 8 / double(r.end_ps) * 1e3, 2) << " Gb/s";
  out << "\n";
}

void write_summary_csv(std::ostream& out, const ReplayResult& r) {
  out << "opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,slowdown_p50,slowdown_p99,slowdown_p999\n";
  for (const auto& [key, s] : group(r)) {
    const auto sd = [&](double p) { return s.slowdown.empty() ? std::string() : fixed(double(nearest_rank(s.slowdown, p)) / 1000.0); };
    out << key.first << ',' << (key.second ? size_bucket_label(key.second) : "all") << ',' << s.fct.size() << ','
        << ns3(nearest_rank(s.fct, 50)) << ',' << ns3(nearest_rank(s.fct, 99)) << ',' << ns3(nearest_rank(s.fct, 99.9))
        << ',' << sd(50) << ',' << sd(99) << ',' << sd(99.9) << '\n';
  }
}

void write_totals_csv(std::ostream& out, const ReplayResult& r) {
  const size_t errors = failed_operations(r);
  const CaptureComparison capture = compare_to_capture(r);
  out << "key,value\n"
      << "operations," << r.ops.size() << "\nerrors," << errors << "\nincomplete," << r.incomplete
      << "\nconnection_setup_mads," << r.connection_setup_ops << "\npackets,"
      << r.packets << "\nwire_bytes," << r.wire_bytes << "\nend_ns," << ns3(r.end_ps) << "\ngoodput_gbps,"
      << gbps(payload_done(r), r.end_ps) << "\ndrops," << r.network.drops << "\nunroutable," << r.network.unroutable
      << "\necn_marks," << r.network.ecn_marks << "\npause_frames," << r.network.pause_frames
      << "\nnp_ecn_marked_roce_packets," << r.cc.np_ecn_marked_roce_packets << "\nnp_cnp_sent," << r.cc.np_cnp_sent
      << "\nrp_cnp_handled," << r.cc.rp_cnp_handled << "\nrp_cnp_ignored," << r.cc.rp_cnp_ignored
      << "\ncompared_to_capture," << capture.compared << "\nfct_within_1pct_of_capture," << capture.within_1_percent
      << "\nstalled,"
      << (r.stalled ? 1 : 0) << "\n";
}

void write_link_timeline(std::ostream& out, const ReplayResult& r, uint64_t bin_ps) {
  out << "link,bin_start_ns,bytes,gbps,queue_bytes,ecn_marks,pause_frames,drops\n";
  for (const fabric::LinkStats& l : r.links)
    for (const auto& [bin, b] : l.timeline)
      out << l.name << ',' << ns3(bin * bin_ps) << ',' << b.bytes << ',' << gbps(b.bytes, bin_ps) << ','
          << b.max_queue_bytes << ',' << b.ecn_marks << ',' << b.pause_frames << ',' << b.drops << '\n';
}

void write_qp_timeline(std::ostream& out, const ReplayResult& r, uint64_t bin_ps) {
  std::map<size_t, std::map<uint64_t, uint64_t>> bytes;  // qp -> bin -> payload completed
  for (const OpResult& op : r.ops)
    if (succeeded(op)) bytes[op.qp][op.done_ps / bin_ps] += op.bytes;
  out << "qp,bin_start_ns,bytes,gbps,rate_gbps,cnps\n";
  const size_t qps = std::max(r.congestion.size(), bytes.empty() ? 0 : bytes.rbegin()->first + 1);
  for (size_t qp = 0; qp < qps; ++qp) {
    const std::map<uint64_t, uint64_t>& done = bytes[qp];
    static const std::map<uint64_t, QpCongestion::Bin> kNone;
    const auto& cc = qp < r.congestion.size() ? r.congestion[qp].timeline : kNone;
    std::vector<uint64_t> bins;
    for (const auto& [bin, b] : done) bins.push_back(bin);
    for (const auto& [bin, b] : cc) bins.push_back(bin);
    std::sort(bins.begin(), bins.end());
    bins.erase(std::unique(bins.begin(), bins.end()), bins.end());
    std::optional<double> rate;  // carried from the last bin that changed it
    for (uint64_t bin : bins) {
      const auto d = done.find(bin);
      const uint64_t b = d != done.end() ? d->second : 0;
      const auto c = cc.find(bin);
      if (c != cc.end()) rate = c->second.rate_gbps;
      out << qp << ',' << ns3(bin * bin_ps) << ',' << b << ',' << gbps(b, bin_ps) << ','
          << (rate ? fixed(*rate) : "") << ',' << (c != cc.end() ? c->second.cnps : 0) << '\n';
    }
  }
}

}  // namespace hcaemu::replay
