#pragma once
// The latency trace: every stage of every work request, stamped in model time, streamed to two
// files as it happens.
//
//   PREFIX.json  Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing): one
//                process per function ("PF", "VF0", ...), one thread per QP carrying an instant
//                event per stage, and under it "lane" threads carrying one complete span ("X")
//                per message, from its first recorded stage (the doorbell) to its CQE write.
//   PREFIX.csv   time_ps,function,qpn,message,opcode,bytes,stage - one line per stage.
//
// Both files are written in whole events, so a run that is killed leaves files that still load:
// while the trace is open the JSON is an unterminated array (which Perfetto and chrome://tracing
// accept), and close() turns it into the object form {"displayTimeUnit":"ns","traceEvents":[...]}
// by overwriting the blank-padded first line. docs/timing.md describes the formats.
//
// Not thread-safe: record() runs on the SystemC kernel thread, close() after sc_start() returns.
#include <array>
#include <cstdint>
#include <fstream>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "traces/stage.h"

namespace hcaemu::traces {


// "doorbell", "wqe_fetch", "payload_dma", "wire_first_packet", "remote_delivery", "ack",
// "cqe_write", "interrupt"; "unknown" for a value outside the enum.
const char* stage_name(Stage stage);
// The inverse of stage_name(); false for an unknown name.
bool parse_stage(std::string_view name, Stage* stage);

// mlx5 send WQE opcodes (ctrl segment, opmod_idx_opcode[7:0]; rdma-core mlx5dv.h MLX5_OPCODE_*).
// Unknown opcodes have no name: nullptr.
const char* wqe_opcode_name_or_null(uint8_t mlx5_opcode);
// "SEND", "SEND_IMM", "RDMA_WRITE", "RDMA_WRITE_IMM", "RDMA_READ", "ATOMIC_CS", "ATOMIC_FA",
// "SEND_INV", "NOP", ...; "UNKNOWN" for an opcode without a name.
const char* wqe_opcode_name(uint8_t mlx5_opcode);
// How the trace files spell an opcode: its name, or "0x1f" for one without a name.
std::string wqe_opcode_label(uint8_t mlx5_opcode);
// The inverse of wqe_opcode_label(), also accepting decimal numbers; false if neither.
bool parse_wqe_opcode(std::string_view label, uint8_t* mlx5_opcode);

struct TraceEvent {
  uint64_t time_ps = 0;   // model time
  uint16_t function = 0;  // vhca id: 0 PF, 1+n VF n
  uint32_t qpn = 0;
  uint64_t message = 0;   // per-function unique id of the WQE/message (the model assigns)
  uint8_t opcode = 0;     // mlx5 WQE opcode (0x08 RDMA_WRITE, 0x0a SEND, 0x10 RDMA_READ ...)
  uint32_t bytes = 0;     // message length
  Stage stage = Stage::kDoorbell;
};

struct LatencyTraceCounters {
  uint64_t events = 0;           // record() calls written
  uint64_t spans = 0;            // complete spans written (one per message that reached kCqeWrite)
  uint64_t spans_unopened = 0;   // kCqeWrite without an earlier stage of the same message
  uint64_t spans_evicted = 0;    // open messages dropped to stay under kMaxOpenMessages
  uint64_t lanes_exhausted = 0;  // spans drawn over another one (more than kMaxLanes in flight on a QP)
  uint64_t write_errors = 0;     // 1 once a write failed; the trace stops there
};

class LatencyTrace {
 public:
  // Messages whose span is still open (first stage seen, no CQE yet). A guest that posts WQEs and
  // never completes them cannot grow this: past the limit the oldest open message loses its span
  // (its instant events are all written regardless).
  static constexpr size_t kMaxOpenMessages = 1u << 16;
  // Span lanes per QP: overlapping spans (pipelined messages) go to separate lanes, because
  // trace viewers cut slices on one thread that overlap without nesting.
  static constexpr uint32_t kMaxLanes = 16;
  // QPs whose lanes are remembered; past it the table starts afresh (names are re-emitted).
  static constexpr size_t kMaxTrackedQps = 1u << 14;
  // Bytes buffered per file before they are written out.
  static constexpr size_t kFlushBytes = 64u << 10;

  // Creates (truncates) PREFIX.json and PREFIX.csv. nullptr and a message on failure.
  static std::unique_ptr<LatencyTrace> open(const std::string& prefix, std::string* error);

  LatencyTrace(const LatencyTrace&) = delete;
  LatencyTrace& operator=(const LatencyTrace&) = delete;
  ~LatencyTrace();  // close()

  void record(const TraceEvent& event);
  // Writes the buffered events out (both files stay valid as described above).
  void flush();
  // Finishes the JSON and closes both files. Idempotent; record() afterwards is ignored.
  void close();

  uint64_t events() const { return counters_.events; }
  const LatencyTraceCounters& counters() const { return counters_; }
  const std::string& json_path() const { return json_path_; }
  const std::string& csv_path() const { return csv_path_; }

 private:
  struct MessageKey {
    uint16_t function;
    uint64_t message;
    bool operator==(const MessageKey&) const = default;
  };
  struct MessageKeyHash {
    size_t operator()(const MessageKey& k) const;
  };
  struct OpenMessage {
    MessageKey key;
    uint64_t start_ps;
    uint32_t qpn;
  };
  struct QpLanes {
    std::vector<uint64_t> lane_end_ps;  // latest span end drawn on each lane
  };

  LatencyTrace() = default;
  void write_event(const TraceEvent& e);
  void name_function(uint16_t function);
  QpLanes& lanes_of(uint16_t function, uint32_t qpn);
  void open_span(const TraceEvent& e);
  void close_span(const TraceEvent& e);
  void emit_span(const OpenMessage& m, const TraceEvent& end);
  void json_line(const std::string& text);
  void write_out(std::ofstream& file, std::string& buffer);

  std::string json_path_, csv_path_;
  std::ofstream json_, csv_;
  std::string json_buffer_, csv_buffer_, line_;
  bool open_ = false;
  bool first_json_event_ = true;
  LatencyTraceCounters counters_;

  std::array<uint64_t, 65536 / 64> named_functions_{};
  std::list<OpenMessage> open_order_;  // oldest first
  std::unordered_map<MessageKey, std::list<OpenMessage>::iterator, MessageKeyHash> open_messages_;
  std::unordered_map<uint64_t, QpLanes> qp_lanes_;  // key: function << 32 | qpn
};

}  // namespace hcaemu::traces
