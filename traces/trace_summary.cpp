#include "traces/trace_summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

namespace hcaemu::traces {

namespace {

constexpr const char* kMetricNames[kMetricCount] = {"end_to_end",      "wqe_fetch", "payload_dma", "wire_first_packet",
                                                    "remote_delivery", "ack",       "cqe_write",   "interrupt"};
constexpr std::string_view kCsvHeader = "time_ps,function,qpn,message,opcode,bytes,stage";

uint8_t bit(Stage s) { return uint8_t(1u << unsigned(s)); }

template <typename T>
bool parse_unsigned(std::string_view text, T* out) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      value > std::numeric_limits<T>::max())
    return false;
  *out = T(value);
  return true;
}

std::string located(const std::string& name, uint64_t line, const std::string& what) {
  return fmt::format("{}:{}: {}", name, line, what);
}

}  // namespace

const char* metric_name(size_t metric) { return metric < kMetricCount ? kMetricNames[metric] : "unknown"; }

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * double(sorted.size()));
  const size_t index = rank < 1 ? 0 : std::min(sorted.size() - 1, size_t(rank) - 1);
  return sorted[index];
}

size_t SummaryBuilder::KeyHash::operator()(const Key& k) const {
  return std::hash<uint64_t>()(k.message * 0x9e3779b97f4a7c15ull ^ k.function);
}

void SummaryBuilder::add(const TraceEvent& e) {
  const auto s = size_t(e.stage);
  if (s >= kStageCount) return;
  ++events_;
  const Key key{e.function, e.message};
  auto [it, inserted] = open_.try_emplace(key);
  Message& m = it->second;
  if (inserted) {
    m.opcode = e.opcode;
    m.bytes = e.bytes;
  }
  if (m.seen & bit(e.stage)) {
    m.time_ps[s] = std::min(m.time_ps[s], e.time_ps);  // a repeated stage counts from its first time
    return;
  }
  m.seen |= bit(e.stage);
  m.time_ps[s] = e.time_ps;
  if (e.stage == Stage::kCqeWrite) {
    completed_.push_back(key);
    if (completed_.size() > kSettleWindow) {
      settle(completed_.front());
      completed_.pop_front();
    }
  }
}

void SummaryBuilder::settle(const Key& key) {
  auto it = open_.find(key);
  if (it == open_.end()) return;
  const Message& m = it->second;
  Group& g = groups_[{m.opcode, m.bytes}];
  ++g.messages;
  const bool has_doorbell = m.seen & bit(Stage::kDoorbell), has_cqe = m.seen & bit(Stage::kCqeWrite);
  const uint64_t t_doorbell = m.time_ps[size_t(Stage::kDoorbell)], t_cqe = m.time_ps[size_t(Stage::kCqeWrite)];
  if (has_doorbell && has_cqe) {
    ++g.complete;
    if (t_cqe >= t_doorbell) g.samples[0].push_back(t_cqe - t_doorbell);
    g.first_doorbell_ps = std::min(g.first_doorbell_ps, t_doorbell);
    g.last_cqe_ps = std::max(g.last_cqe_ps, t_cqe);
  }
  // The recorded stages in model time (ties in stage order); each one after the first gets the
  // delta from the one before it.
  std::array<size_t, kStageCount> order{};
  size_t n = 0;
  for (size_t s = 0; s < kStageCount; ++s)
    if (m.seen & (1u << s)) order[n++] = s;
  std::stable_sort(order.begin(), order.begin() + ptrdiff_t(n),
                   [&](size_t a, size_t b) { return m.time_ps[a] < m.time_ps[b]; });
  for (size_t i = 1; i < n; ++i) {
    if (order[i] == size_t(Stage::kDoorbell)) continue;  // no metric ends at the doorbell
    g.samples[order[i]].push_back(m.time_ps[order[i]] - m.time_ps[order[i - 1]]);
  }
  open_.erase(it);
}

TraceSummary SummaryBuilder::finish() {
  for (const Key& key : completed_) settle(key);
  completed_.clear();
  while (!open_.empty()) settle(open_.begin()->first);
  TraceSummary summary;
  summary.events = events_;
  for (auto& [group_key, g] : groups_) {
    GroupSummary out;
    out.opcode = group_key.first;
    out.bytes = group_key.second;
    out.messages = g.messages;
    out.complete = g.complete;
    out.span_ps = g.complete != 0 && g.last_cqe_ps > g.first_doorbell_ps ? g.last_cqe_ps - g.first_doorbell_ps : 0;
    for (size_t i = 0; i < kMetricCount; ++i) {
      std::vector<uint64_t>& v = g.samples[i];
      std::sort(v.begin(), v.end());
      out.metrics[i] = {v.size(), nearest_rank(v, 50), nearest_rank(v, 90), nearest_rank(v, 99),
                        v.empty() ? 0 : v.back()};
    }
    summary.messages += g.messages;
    summary.complete += g.complete;
    summary.groups.push_back(out);
  }
  groups_.clear();
  events_ = 0;
  return summary;
}

// ---- CSV ----

bool read_csv_trace(std::istream& in, const std::string& name, SummaryBuilder& builder, std::string* error) {
  return read_csv_trace(in, name, [&builder](const TraceEvent& e) { builder.add(e); }, error);
}

bool read_csv_trace(std::istream& in, const std::string& name, const std::function<void(const TraceEvent&)>& sink,
                    std::string* error) {
  std::string line;
  uint64_t line_no = 0;
  auto fail = [&](const std::string& what) {
    if (error) *error = located(name, std::max<uint64_t>(line_no, 1), what);
    return false;
  };
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!header) {
      if (line != kCsvHeader) return fail(fmt::format("expected the header \"{}\"", kCsvHeader));
      header = true;
      continue;
    }
    if (line.empty()) continue;
    std::array<std::string_view, 7> f;
    size_t count = 0, start = 0;
    const std::string_view text(line);
    while (true) {
      const size_t comma = text.find(',', start);
      if (count < f.size()) f[count] = text.substr(start, comma - start);
      ++count;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (count != f.size()) return fail(fmt::format("expected 7 fields, found {}", count));
    TraceEvent e;
    if (!parse_unsigned(f[0], &e.time_ps)) return fail(fmt::format("bad time_ps \"{}\"", f[0]));
    if (!parse_unsigned(f[1], &e.function)) return fail(fmt::format("bad function \"{}\"", f[1]));
    if (!parse_unsigned(f[2], &e.qpn)) return fail(fmt::format("bad qpn \"{}\"", f[2]));
    if (!parse_unsigned(f[3], &e.message)) return fail(fmt::format("bad message \"{}\"", f[3]));
    if (!parse_wqe_opcode(f[4], &e.opcode)) return fail(fmt::format("bad opcode \"{}\"", f[4]));
    if (!parse_unsigned(f[5], &e.bytes)) return fail(fmt::format("bad bytes \"{}\"", f[5]));
    if (!parse_stage(f[6], &e.stage)) return fail(fmt::format("unknown stage \"{}\"", f[6]));
    sink(e);
  }
  if (in.bad()) return fail("read error");
  if (!header) return fail("empty file (expected the CSV header)");
  return true;
}

// ---- JSON ----

namespace {

using nlohmann::json;

// Where the parser is in the file: nlohmann's SAX callbacks carry no position, so the input
// iterator counts the lines it has handed out.
struct Position {
  uint64_t line = 1;
};

class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;

  CountingIterator() = default;
  CountingIterator(std::streambuf* buf, Position* pos) : buf_(buf), pos_(pos) {}

  char operator*() const { return std::char_traits<char>::to_char_type(buf_->sgetc()); }
  CountingIterator& operator++() {
    if (buf_->sbumpc() == '\n') ++pos_->line;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& other) const { return at_end() == other.at_end(); }
  bool at_end() const { return !buf_ || std::char_traits<char>::eq_int_type(buf_->sgetc(), std::char_traits<char>::eof()); }

 private:
  std::streambuf* buf_ = nullptr;
  Position* pos_ = nullptr;
};

// Picks the stage events out of {"traceEvents":[...]} or [...] without building the document.
class StageEventReader : public nlohmann::json_sax<json> {
 public:
  StageEventReader(SummaryBuilder& builder, const Position& pos) : builder_(builder), pos_(pos) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override {
    if (v >= 0) return number_unsigned(number_unsigned_t(v));
    if (!ours()) return true;
    return fail(fmt::format("\"{}\" must not be negative", key_));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (!in_event_field()) return true;
    if (depth_ == event_depth_ && key_ == "ts") {
      if (v > std::numeric_limits<uint64_t>::max() / 1000000) return fail("\"ts\" is too large");
      ev_.time_ps = v * 1000000;
      have_ |= kTs;
    } else if (depth_ == event_depth_) {
      if (key_ == "pid") return take(v, &ev_.function, kPid);
      if (key_ == "tid") return take(v, &ev_.qpn, kTid);
    } else {
      if (key_ == "message") return take(v, &ev_.message, kMessage);
      if (key_ == "bytes") return take(v, &ev_.bytes, kBytes);
      if (key_ == "opcode") return take(v, &ev_.opcode, kOpcode);
    }
    return true;
  }
  bool number_float(number_float_t v, const string_t& raw) override {
    if (!ours()) return true;
    if (key_ != "ts" || depth_ != event_depth_) return fail(fmt::format("\"{}\" must be an integer", key_));
    if (!(v >= 0) || v > 1.8e13) return fail("\"ts\" out of range");
    ev_.time_ps = micros_to_ps(v, raw);
    have_ |= kTs;
    return true;
  }
  bool string(string_t& s) override {
    if (!in_event_field()) return true;
    if (depth_ == event_depth_) {
      if (key_ == "ph") ph_ = s;
      if (key_ == "name") name_ = s;
    } else if (key_ == "opcode") {
      if (!parse_wqe_opcode(s, &ev_.opcode)) return fail(fmt::format("unknown opcode \"{}\"", s));
      have_ |= kOpcode;
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth_;
    if (in_events_ && depth_ == *events_depth_ + 1 && event_depth_ == 0) {
      event_depth_ = depth_;
      ev_ = TraceEvent{};
      have_ = 0;
      ph_.clear();
      name_.clear();
    } else if (event_depth_ && depth_ == event_depth_ + 1 && key_ == "args") {
      in_args_ = true;
    }
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    if (in_args_ && depth_ == event_depth_ + 1) in_args_ = false;
    if (event_depth_ && depth_ == event_depth_) {
      event_depth_ = 0;
      if (!finish_event()) return false;
    }
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    // The event array: the whole document, or the value of the top-level key "traceEvents".
    if (!events_depth_ && (depth_ == 1 || (depth_ == 2 && top_is_object_ && key_ == "traceEvents"))) {
      events_depth_ = depth_;
      in_events_ = true;
    }
    return true;
  }
  bool end_array() override {
    if (in_events_ && depth_ == *events_depth_) in_events_ = false;
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    syntax_error_ = true;
    // nlohmann counts lines and columns from where it started; the line is ours to give.
    error_ = ex.what();
    if (size_t p = error_.find("column"); p != std::string::npos && (p = error_.find(": ", p)) != std::string::npos)
      error_.erase(0, p + 2);
    return false;
  }

  void note_top(bool object) { top_is_object_ = object; }
  bool syntax_error() const { return syntax_error_; }
  const std::string& error() const { return error_; }
  uint64_t error_line() const { return error_line_; }
  bool saw_event_array() const { return events_depth_.has_value(); }

 private:
  enum : uint8_t { kTs = 1, kPid = 2, kTid = 4, kMessage = 8, kOpcode = 16, kBytes = 32 };

  bool scalar() { return true; }
  // One of the fields the reader takes: a wrong type there is an error, elsewhere it is ignored.
  bool ours() const {
    if (!in_event_field()) return false;
    if (depth_ == event_depth_) return key_ == "ts" || key_ == "pid" || key_ == "tid";
    return key_ == "message" || key_ == "opcode" || key_ == "bytes";
  }
  // A value of the current event itself or of its args (deeper values are someone else's).
  bool in_event_field() const {
    return event_depth_ && (depth_ == event_depth_ || (in_args_ && depth_ == event_depth_ + 1));
  }
  template <typename T>
  bool take(uint64_t v, T* out, uint8_t flag) {
    if (v > std::numeric_limits<T>::max()) return fail(fmt::format("\"{}\" is too large", key_));
    *out = T(v);
    have_ |= flag;
    return true;
  }
  bool fail(const std::string& what) {
    error_ = what;
    error_line_ = pos_.line;
    return false;
  }
  // The writer prints microseconds with six decimals: read them exactly. Anything else (an
  // exponent, more decimals) is rounded to the nearest picosecond.
  static uint64_t micros_to_ps(double v, const std::string& raw) {
    const size_t dot = raw.find('.');
    if (dot != std::string::npos && raw.find_first_of("eE") == std::string::npos && raw.size() - dot - 1 <= 6) {
      uint64_t whole = 0, frac = 0;
      std::string digits = raw.substr(dot + 1);
      digits.append(6 - digits.size(), '0');
      if (parse_unsigned(std::string_view(raw).substr(0, dot), &whole) && parse_unsigned(digits, &frac) &&
          whole <= std::numeric_limits<uint64_t>::max() / 1000000 - 1)
        return whole * 1000000 + frac;
    }
    return uint64_t(std::llround(v * 1e6));
  }
  bool finish_event() {
    Stage stage;
    if (ph_ != "i" || !parse_stage(name_, &stage)) return true;  // spans, metadata, other instants
    static constexpr std::pair<uint8_t, const char*> kRequired[] = {
        {kTs, "ts"}, {kPid, "pid"}, {kTid, "tid"}, {kMessage, "args.message"}, {kOpcode, "args.opcode"},
        {kBytes, "args.bytes"}};
    for (const auto& [flag, field] : kRequired)
      if (!(have_ & flag)) return fail(fmt::format("stage event \"{}\" without {}", name_, field));
    ev_.stage = stage;
    builder_.add(ev_);
    return true;
  }

  SummaryBuilder& builder_;
  const Position& pos_;
  int depth_ = 0;
  std::optional<int> events_depth_;
  bool in_events_ = false;
  int event_depth_ = 0;  // 0: not inside an event
  bool in_args_ = false;
  bool top_is_object_ = false;
  std::string key_, ph_, name_;
  TraceEvent ev_;
  uint8_t have_ = 0;
  bool syntax_error_ = false;
  std::string error_;
  uint64_t error_line_ = 0;
};

}  // namespace

bool read_json_trace(std::istream& in, const std::string& name, SummaryBuilder& builder, bool* truncated,
                     std::string* error) {
  if (truncated) *truncated = false;
  std::streambuf* buf = in.rdbuf();
  // Look at the first non-blank character to know where the event array will be.
  int c = buf->sgetc();
  Position pos;
  while (c != std::char_traits<char>::eof() && std::isspace(c)) {
    if (buf->sbumpc() == '\n') ++pos.line;
    c = buf->sgetc();
  }
  StageEventReader reader(builder, pos);
  reader.note_top(c == '{');
  const bool ok = json::sax_parse(CountingIterator(buf, &pos), CountingIterator(), &reader);
  if (ok) {
    if (!reader.saw_event_array()) {
      if (error) *error = located(name, pos.line, "no \"traceEvents\" array");
      return false;
    }
    return true;
  }
  if (reader.syntax_error()) {
    // A run killed before it closed its trace leaves an event array without its end: everything
    // up to the end of the file was read, and the last (possibly partial) event is dropped.
    const bool at_end = std::char_traits<char>::eq_int_type(buf->sgetc(), std::char_traits<char>::eof());
    if (at_end && reader.saw_event_array()) {
      if (truncated) *truncated = true;
      return true;
    }
    if (error) *error = located(name, pos.line, reader.error());
    return false;
  }
  if (error) *error = located(name, reader.error_line(), reader.error());
  return false;
}

std::optional<TraceSummary> summarize_trace_file(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error) *error = path + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  char first = 0;
  in >> std::ws;
  first = char(in.peek());
  in.clear();
  in.seekg(0);
  SummaryBuilder builder;
  bool truncated = false;
  const bool ok = (first == '{' || first == '[') ? read_json_trace(in, path, builder, &truncated, error)
                                                 : read_csv_trace(in, path, builder, error);
  if (!ok) return std::nullopt;
  TraceSummary summary = builder.finish();
  summary.truncated = truncated;
  return summary;
}

// ---- output ----

namespace {

std::string human_time(uint64_t ps) {
  if (ps < 1000000) return fmt::format("{:.1f} ns", double(ps) / 1e3);
  if (ps < 1000000000) return fmt::format("{:.3f} us", double(ps) / 1e6);
  return fmt::format("{:.3f} ms", double(ps) / 1e9);
}

std::string exact_ns(uint64_t ps) { return fmt::format("{}.{:03}", ps / 1000, ps % 1000); }

}  // namespace

std::string format_summary_table(const TraceSummary& s) {
  std::string out = fmt::format("{} events, {} messages ({} with doorbell and cqe_write){}\n", s.events, s.messages,
                                s.complete, s.truncated ? "; the JSON ended early (trace not closed)" : "");
  if (s.groups.empty()) return out;
  size_t opcode_width = 6;
  for (const auto& g : s.groups) opcode_width = std::max(opcode_width, wqe_opcode_label(g.opcode).size());
  out += fmt::format("\n{:<{}}  {:>10}  {:<20} {:>9} {:>11} {:>11} {:>11} {:>11}\n", "opcode", opcode_width, "bytes",
                     "metric", "count", "p50", "p90", "p99", "max");
  for (const auto& g : s.groups) {
    for (size_t i = 0; i < kMetricCount; ++i) {
      const LatencyStats& m = g.metrics[i];
      if (m.count == 0) continue;
      const std::string metric = i == 0 ? metric_name(i) : std::string("->") + metric_name(i);
      out += fmt::format("{:<{}}  {:>10}  {:<20} {:>9} {:>11} {:>11} {:>11} {:>11}\n", wqe_opcode_label(g.opcode),
                         opcode_width, g.bytes, metric, m.count, human_time(m.p50_ps), human_time(m.p90_ps),
                         human_time(m.p99_ps), human_time(m.max_ps));
    }
  }
  out += fmt::format("\n{:<{}}  {:>10}  {:>9} {:>13} {:>14}\n", "opcode", opcode_width, "bytes", "complete", "span",
                     "model Gb/s");
  for (const auto& g : s.groups) {
    if (g.span_ps == 0) continue;
    out += fmt::format("{:<{}}  {:>10}  {:>9} {:>13} {:>14.2f}\n", wqe_opcode_label(g.opcode), opcode_width, g.bytes,
                       g.complete, human_time(g.span_ps), g.model_gbps());
  }
  out +=
      "\nend_to_end: doorbell -> cqe_write of the same message. ->X: from the message's previous recorded stage\n"
      "to X (model time). Percentiles are nearest-rank. span: the group's first doorbell to its last cqe_write;\n"
      "model Gb/s: the complete messages' payload over that span (model time; idle time does not advance it).\n";
  return out;
}

std::string format_summary_csv(const TraceSummary& s) {
  std::string out = "opcode,bytes,metric,count,p50_ns,p90_ns,p99_ns,max_ns\n";
  for (const auto& g : s.groups) {
    for (size_t i = 0; i < kMetricCount; ++i) {
      const LatencyStats& m = g.metrics[i];
      if (m.count == 0) continue;
      out += fmt::format("{},{},{},{},{},{},{},{}\n", wqe_opcode_label(g.opcode), g.bytes, metric_name(i), m.count,
                         exact_ns(m.p50_ps), exact_ns(m.p90_ps), exact_ns(m.p99_ps), exact_ns(m.max_ps));
    }
  }
  return out;
}

}  // namespace hcaemu::traces
