#include "traces/latency_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <iterator>

#include "common/log.h"

namespace hcaemu::traces {

namespace {

constexpr const char* kStageNames[kStageCount] = {"doorbell",          "wqe_fetch",       "payload_dma",
                                                  "wire_first_packet", "remote_delivery", "ack",
                                                  "cqe_write",         "interrupt"};

// mlx5 send WQE opcodes: rdma-core infiniband/mlx5dv.h (MLX5_OPCODE_*) and, for BIND_MW, the
// kernel's include/linux/mlx5/qp.h.
struct OpcodeName {
  uint8_t opcode;
  const char* name;
};
constexpr OpcodeName kOpcodes[] = {
    {0x00, "NOP"},          {0x01, "SEND_INV"},         {0x08, "RDMA_WRITE"},       {0x09, "RDMA_WRITE_IMM"},
    {0x0a, "SEND"},         {0x0b, "SEND_IMM"},         {0x0e, "TSO"},              {0x10, "RDMA_READ"},
    {0x11, "ATOMIC_CS"},    {0x12, "ATOMIC_FA"},        {0x14, "ATOMIC_MASKED_CS"}, {0x15, "ATOMIC_MASKED_FA"},
    {0x18, "BIND_MW"},      {0x19, "FMR"},              {0x1b, "LOCAL_INV"},        {0x1f, "CONFIG_CMD"},
    {0x20, "SET_PSV"},      {0x25, "UMR"},              {0x28, "TAG_MATCHING"},     {0x2c, "FLOW_TBL_ACCESS"},
    {0x2f, "MMO"},
};

// While the trace is open the JSON file starts with "[" and blanks of the same length as the
// object header that close() writes over them: both are valid beginnings of a trace.
constexpr std::string_view kObjectHeader = R"({"displayTimeUnit":"ns","traceEvents":[)";
constexpr std::string_view kObjectFooter = "\n]}\n";

// Model time in the trace-event format's microseconds, exact to the picosecond.
struct Micros {
  uint64_t ps;
};

}  // namespace

}  // namespace hcaemu::traces

template <>
struct fmt::formatter<hcaemu::traces::Micros> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(hcaemu::traces::Micros t, Context& ctx) const {
    return fmt::format_to(ctx.out(), "{}.{:06}", t.ps / 1000000, t.ps % 1000000);
  }
};

namespace hcaemu::traces {

const char* stage_name(Stage stage) {
  const auto i = size_t(stage);
  return i < kStageCount ? kStageNames[i] : "unknown";
}

bool parse_stage(std::string_view name, Stage* stage) {
  for (size_t i = 0; i < kStageCount; ++i) {
    if (name == kStageNames[i]) {
      *stage = Stage(i);
      return true;
    }
  }
  return false;
}

const char* wqe_opcode_name_or_null(uint8_t mlx5_opcode) {
  for (const auto& o : kOpcodes)
    if (o.opcode == mlx5_opcode) return o.name;
  return nullptr;
}

const char* wqe_opcode_name(uint8_t mlx5_opcode) {
  const char* name = wqe_opcode_name_or_null(mlx5_opcode);
  return name ? name : "UNKNOWN";
}

std::string wqe_opcode_label(uint8_t mlx5_opcode) {
  if (const char* name = wqe_opcode_name_or_null(mlx5_opcode)) return name;
  return fmt::format("{:#04x}", mlx5_opcode);
}

bool parse_wqe_opcode(std::string_view label, uint8_t* mlx5_opcode) {
  for (const auto& o : kOpcodes) {
    if (label == o.name) {
      *mlx5_opcode = o.opcode;
      return true;
    }
  }
  int base = 10;
  if (label.size() > 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X')) {
    label.remove_prefix(2);
    base = 16;
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(label.data(), label.data() + label.size(), value, base);
  if (label.empty() || ec != std::errc() || end != label.data() + label.size() || value > 0xff) return false;
  *mlx5_opcode = uint8_t(value);
  return true;
}

size_t LatencyTrace::MessageKeyHash::operator()(const MessageKey& k) const {
  return std::hash<uint64_t>()(k.message * 0x9e3779b97f4a7c15ull ^ k.function);
}

std::unique_ptr<LatencyTrace> LatencyTrace::open(const std::string& prefix, std::string* error) {
  std::unique_ptr<LatencyTrace> trace(new LatencyTrace());
  trace->json_path_ = prefix + ".json";
  trace->csv_path_ = prefix + ".csv";
  for (auto [file, path] : {std::pair{&trace->json_, &trace->json_path_}, {&trace->csv_, &trace->csv_path_}}) {
    file->open(*path, std::ios::out | std::ios::trunc | std::ios::binary);
    if (!*file) {
      if (error) *error = *path + ": cannot create: " + std::strerror(errno);
      return nullptr;
    }
  }
  trace->open_ = true;
  trace->json_buffer_.assign("[");
  trace->json_buffer_.append(kObjectHeader.size() - 1, ' ');
  trace->csv_buffer_.assign("time_ps,function,qpn,message,opcode,bytes,stage\n");
  trace->flush();
  if (trace->counters_.write_errors) {
    if (error) *error = prefix + ".{json,csv}: cannot write";
    return nullptr;
  }
  return trace;
}

LatencyTrace::~LatencyTrace() { close(); }

void LatencyTrace::record(const TraceEvent& e) {
  if (!open_ || counters_.write_errors) return;
  name_function(e.function);
  lanes_of(e.function, e.qpn);
  write_event(e);
  if (e.stage == Stage::kCqeWrite)
    close_span(e);
  else if (e.stage != Stage::kInterrupt)  // the interrupt follows the CQE: it never opens a span
    open_span(e);
  ++counters_.events;
  if (json_buffer_.size() >= kFlushBytes) write_out(json_, json_buffer_);
  if (csv_buffer_.size() >= kFlushBytes) write_out(csv_, csv_buffer_);
}

void LatencyTrace::write_event(const TraceEvent& e) {
  const std::string opcode = wqe_opcode_label(e.opcode);
  line_.clear();
  fmt::format_to(std::back_inserter(line_),
                 R"({{"name":"{}","cat":"stage","ph":"i","s":"t","ts":{},"pid":{},"tid":{},)"
                 R"("args":{{"message":{},"opcode":"{}","bytes":{}}}}})",
                 stage_name(e.stage), Micros{e.time_ps}, e.function, e.qpn, e.message, opcode, e.bytes);
  json_line(line_);
  fmt::format_to(std::back_inserter(csv_buffer_), "{},{},{},{},{},{},{}\n", e.time_ps, e.function, e.qpn, e.message,
                 opcode, e.bytes, stage_name(e.stage));
}

void LatencyTrace::json_line(const std::string& text) {
  json_buffer_.append(first_json_event_ ? "\n" : ",\n");
  json_buffer_.append(text);
  first_json_event_ = false;
}

// Process names and order: PF first, then VF0, VF1, ...
void LatencyTrace::name_function(uint16_t function) {
  uint64_t& word = named_functions_[function / 64];
  const uint64_t bit = 1ull << (function % 64);
  if (word & bit) return;
  word |= bit;
  const std::string name = function == 0 ? "PF" : fmt::format("VF{}", function - 1);
  json_line(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"{}"}}}})", function, name));
  json_line(fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", function,
                        function));
}

// A QP's thread carries its instant events (tid = QPN); lane k's thread, right below it, carries
// spans (tid = (k + 1) << 24 | QPN: QPNs are 24 bits).
LatencyTrace::QpLanes& LatencyTrace::lanes_of(uint16_t function, uint32_t qpn) {
  const uint64_t key = uint64_t(function) << 32 | qpn;
  if (auto it = qp_lanes_.find(key); it != qp_lanes_.end()) return it->second;
  if (qp_lanes_.size() >= kMaxTrackedQps) qp_lanes_.clear();
  json_line(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"QP {:#08x}"}}}})",
                        function, qpn, qpn));
  json_line(fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                        function, qpn, uint64_t(qpn & 0xffffff) * (kMaxLanes + 1)));
  return qp_lanes_[key];
}

void LatencyTrace::open_span(const TraceEvent& e) {
  const MessageKey key{e.function, e.message};
  if (auto it = open_messages_.find(key); it != open_messages_.end()) {
    it->second->start_ps = std::min(it->second->start_ps, e.time_ps);
    return;
  }
  if (open_messages_.size() >= kMaxOpenMessages) {
    open_messages_.erase(open_order_.front().key);
    open_order_.pop_front();
    ++counters_.spans_evicted;
  }
  open_order_.push_back(OpenMessage{key, e.time_ps, e.qpn});
  open_messages_.emplace(key, std::prev(open_order_.end()));
}

void LatencyTrace::close_span(const TraceEvent& e) {
  auto it = open_messages_.find(MessageKey{e.function, e.message});
  if (it == open_messages_.end()) {
    ++counters_.spans_unopened;
    return;
  }
  emit_span(*it->second, e);
  open_order_.erase(it->second);
  open_messages_.erase(it);
}

void LatencyTrace::emit_span(const OpenMessage& m, const TraceEvent& end) {
  const uint64_t start = std::min(m.start_ps, end.time_ps);
  QpLanes& qp = lanes_of(m.key.function, m.qpn);
  size_t lane = 0;
  while (lane < qp.lane_end_ps.size() && qp.lane_end_ps[lane] > start) ++lane;
  if (lane == qp.lane_end_ps.size()) {
    if (lane < kMaxLanes) {
      qp.lane_end_ps.push_back(0);
      const uint64_t tid = uint64_t(lane + 1) << 24 | (m.qpn & 0xffffff);
      json_line(fmt::format(
          R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"QP {:#08x} messages{}"}}}})",
          m.key.function, tid, m.qpn, lane == 0 ? std::string() : fmt::format(" #{}", lane + 1)));
      json_line(fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                            m.key.function, tid, uint64_t(m.qpn & 0xffffff) * (kMaxLanes + 1) + lane + 1));
    } else {
      lane = size_t(std::min_element(qp.lane_end_ps.begin(), qp.lane_end_ps.end()) - qp.lane_end_ps.begin());
      ++counters_.lanes_exhausted;
    }
  }
  qp.lane_end_ps[lane] = std::max(qp.lane_end_ps[lane], end.time_ps);
  const uint64_t tid = uint64_t(lane + 1) << 24 | (m.qpn & 0xffffff);
  const std::string opcode = wqe_opcode_label(end.opcode);
  line_.clear();
  fmt::format_to(std::back_inserter(line_),
                 R"({{"name":"{} {} B","cat":"message","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},)"
                 R"("args":{{"message":{},"opcode":"{}","bytes":{}}}}})",
                 opcode, end.bytes, Micros{start}, Micros{end.time_ps - start}, m.key.function, tid, m.key.message,
                 opcode, end.bytes);
  json_line(line_);
  ++counters_.spans;
}

void LatencyTrace::write_out(std::ofstream& file, std::string& buffer) {
  if (buffer.empty() || counters_.write_errors) return;
  file.write(buffer.data(), std::streamsize(buffer.size()));
  file.flush();
  buffer.clear();
  if (!file) {
    counters_.write_errors = 1;
    log().error("latency trace: writing {} failed; the trace stops here", &file == &json_ ? json_path_ : csv_path_);
  }
}

void LatencyTrace::flush() {
  if (!open_) return;
  write_out(json_, json_buffer_);
  write_out(csv_, csv_buffer_);
}

void LatencyTrace::close() {
  if (!open_) return;
  json_buffer_.append(kObjectFooter);
  flush();
  if (!counters_.write_errors) {
    json_.seekp(0);
    json_.write(kObjectHeader.data(), std::streamsize(kObjectHeader.size()));
    json_.flush();
    if (!json_) {
      counters_.write_errors = 1;
      log().error("latency trace: finishing {} failed", json_path_);
    }
  }
  json_.close();
  csv_.close();
  open_ = false;
  open_messages_.clear();
  open_order_.clear();
  qp_lanes_.clear();
}

}  // namespace hcaemu::traces
