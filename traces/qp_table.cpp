#include "traces/qp_table.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <string_view>
#include <sstream>

namespace hcaemu::traces {
namespace {

constexpr const char* kHeader =
    "time_ps,function,qpn,service,address,send_cq,send_cq_entries,recv_cq,recv_cq_entries,sq_wqebbs,rq_stride,mtu,"
    "ack_timeout,retry_count,rnr_retry,max_rd_atomic,remote_qpn,mac,state";
constexpr size_t kColumns = 19;
constexpr size_t kMaxRecords = 1u << 20;  // a table is read whole: bounded

bool ipv4_mapped(const std::array<uint8_t, 16>& gid) {
  for (size_t i = 0; i < 10; ++i)
    if (gid[i] != 0) return false;
  return gid[10] == 0xff && gid[11] == 0xff;
}

template <typename T>
bool number(const std::string& text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool parse_mac(const std::string& text, std::array<uint8_t, 6>& mac) {
  if (text.size() != 17) return false;
  for (size_t i = 0; i < 6; ++i) {
    if (i != 0 && text[3 * i - 1] != ':') return false;
    const auto [end, ec] = std::from_chars(text.data() + 3 * i, text.data() + 3 * i + 2, mac[i], 16);
    if (ec != std::errc() || end != text.data() + 3 * i + 2) return false;
  }
  return true;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

}  // namespace

std::string address_text(const std::array<uint8_t, 16>& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ipv4_mapped(gid)) inet_ntop(AF_INET, gid.data() + 12, text, sizeof text);
  else inet_ntop(AF_INET6, gid.data(), text, sizeof text);
  return text;
}

bool parse_address(const std::string& text, std::array<uint8_t, 16>& gid) {
  gid = {};
  if (inet_pton(AF_INET6, text.c_str(), gid.data()) == 1) return true;
  if (inet_pton(AF_INET, text.c_str(), gid.data() + 12) != 1) return false;
  gid[10] = gid[11] = 0xff;
  return true;
}

std::unique_ptr<QpTableWriter> QpTableWriter::open(const std::string& path, std::string* error) {
  std::unique_ptr<QpTableWriter> w(new QpTableWriter);
  w->path_ = path;
  w->file_.open(path, std::ios::out | std::ios::trunc);
  if (!w->file_) {
    if (error) *error = "cannot create " + path;
    return nullptr;
  }
  w->file_ << kHeader << "\n";
  return w;
}

void QpTableWriter::record(const QpRecord& r) {
  if (!file_.is_open()) return;
  file_ << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:02x},{}\n", r.time_ps, r.function,
                       r.qpn, r.service, address_text(r.address), r.send_cq, r.send_cq_entries, r.recv_cq,
                       r.recv_cq_entries, r.sq_wqebbs, r.rq_stride, r.mtu, r.ack_timeout, r.retry_count, r.rnr_retry, r.max_rd_atomic, r.remote_qpn,
                       fmt::join(r.mac, ":"), r.state);
  file_.flush();  // a run that is killed keeps every QP it reported
  ++records_;
}

void QpTableWriter::close() {
  if (file_.is_open()) file_.close();
}

std::optional<std::vector<QpRecord>> read_qp_table(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (error) *error = path + ":0: cannot open";
    return std::nullopt;
  }
  return read_qp_table(in, path, error);
}

std::optional<std::vector<QpRecord>> read_qp_table(std::istream& in, const std::string& path, std::string* error) {
  auto fail = [&](size_t line, const std::string& why) -> std::optional<std::vector<QpRecord>> {
    if (error) *error = path + ":" + std::to_string(line) + ": " + why;
    return std::nullopt;
  };
  std::string line;
  if (!std::getline(in, line) || line != kHeader) return fail(1, std::string("the header is not \"") + kHeader + "\"");
  std::vector<QpRecord> out;
  for (size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    if (out.size() == kMaxRecords) return fail(n, "more than " + std::to_string(kMaxRecords) + " QPs");
    const std::vector<std::string> c = split(line);
    if (c.size() != kColumns) return fail(n, std::to_string(c.size()) + " columns, not " + std::to_string(kColumns));
    QpRecord r;
    r.service = c[3];
    const bool ok = number(c[0], r.time_ps) && number(c[1], r.function) && number(c[2], r.qpn) &&
                    parse_address(c[4], r.address) && number(c[5], r.send_cq) && number(c[6], r.send_cq_entries) &&
                    number(c[7], r.recv_cq) && number(c[8], r.recv_cq_entries) && number(c[9], r.sq_wqebbs) &&
                    number(c[10], r.rq_stride) && number(c[11], r.mtu) && number(c[12], r.ack_timeout) &&
                    number(c[13], r.retry_count) && number(c[14], r.rnr_retry) && number(c[15], r.max_rd_atomic) &&
                    number(c[16], r.remote_qpn) && parse_mac(c[17], r.mac);
    if (!ok) return fail(n, "a value is not a number or an address");
    if (r.qpn > 0xffffff || r.remote_qpn > 0xffffff || r.send_cq > 0xffffff || r.recv_cq > 0xffffff)
      return fail(n, "a QP or CQ number beyond 24 bits");
    r.state = c[18];
    if (r.state != "rtr" && r.state != "rts") return fail(n, "\"" + r.state + "\" is not a state (rtr, rts)");
    constexpr std::array<std::string_view, 7> kServices = {"rc", "uc", "ud", "xrc", "qp1", "umr", "other"};
    if (std::find(kServices.begin(), kServices.end(), r.service) == kServices.end())
      return fail(n, "\"" + r.service + "\" is not a service (rc, uc, ud, xrc, qp1, umr, other)");
    out.push_back(std::move(r));
  }
  return out;
}

std::string qp_table_path(const std::string& trace_csv) {
  const std::string suffix = ".csv";
  const bool has_suffix = trace_csv.size() >= suffix.size() &&
                          trace_csv.compare(trace_csv.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has_suffix ? trace_csv.substr(0, trace_csv.size() - suffix.size()) : trace_csv) + ".qps.csv";
}

}  // namespace hcaemu::traces
