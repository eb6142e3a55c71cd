#pragma once
// Latency statistics of a latency trace (what `hcatrace summary` prints): per opcode and exact
// message size, the count and p50/p90/p99/max of
//   end_to_end   doorbell -> cqe_write of the same function and message, and
//   <stage>      for each stage after the doorbell: the time from the message's previous recorded
//                stage (in model time) to this one. For an RDMA WRITE that is the chain
//                doorbell -> wqe_fetch -> payload_dma -> ... -> cqe_write -> interrupt; an opcode
//                that passes the stages in another order (RDMA READ) or skips some still gets
//                deltas that add up to its end-to-end latency.
// Percentiles are nearest-rank over the exact samples (no histogram): memory grows with the
// number of messages, about 80 bytes each.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/latency_trace.h"

namespace hcaemu::traces {

// Metric i > 0 is the delta ending at Stage(i); metric 0 is end_to_end.
inline constexpr size_t kMetricCount = kStageCount;
const char* metric_name(size_t metric);  // "end_to_end", "wqe_fetch", ..., "interrupt"

struct LatencyStats {
  uint64_t count = 0;
  uint64_t p50_ps = 0, p90_ps = 0, p99_ps = 0, max_ps = 0;
};

struct GroupSummary {
  uint8_t opcode = 0;
  uint32_t bytes = 0;
  uint64_t messages = 0;
  uint64_t complete = 0;  // with both a doorbell and a cqe_write
  std::array<LatencyStats, kMetricCount> metrics{};
  // The complete messages' first doorbell to last cqe_write, and their payload over that span: the
  // model's throughput while the group kept it busy (model time stands still while the kernel is
  // idle, so gaps where the guest was slow to post do not count).
  uint64_t span_ps = 0;
  double model_gbps() const { return span_ps == 0 ? 0 : double(complete) * bytes * 8.0 / (double(span_ps) / 1e3); }
};

struct TraceSummary {
  uint64_t events = 0;
  uint64_t messages = 0;
  uint64_t complete = 0;
  bool truncated = false;            // a JSON trace that ended inside its event array (killed run)
  std::vector<GroupSummary> groups;  // by opcode, then bytes
};

// Nearest-rank percentile (0 < p <= 100) of sorted samples; 0 for none.
uint64_t nearest_rank(const std::vector<uint64_t>& sorted, double p);

class SummaryBuilder {
 public:
  // A message is settled (its samples taken) this many completions after its cqe_write, so a
  // trace of any length needs memory only for its samples and the messages in flight; an
  // interrupt recorded later than that is counted as a message of its own without a doorbell.
  static constexpr size_t kSettleWindow = 1u << 16;

  void add(const TraceEvent& event);
  TraceSummary finish();

 private:
  struct Key {
    uint16_t function;
    uint64_t message;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Message {
    std::array<uint64_t, kStageCount> time_ps{};
    uint8_t seen = 0;  // bit per Stage
    uint8_t opcode = 0;
    uint32_t bytes = 0;
  };
  struct Group {
    uint64_t messages = 0, complete = 0;
    uint64_t first_doorbell_ps = UINT64_MAX, last_cqe_ps = 0;
    std::array<std::vector<uint64_t>, kMetricCount> samples;
  };

  void settle(const Key& key);

  uint64_t events_ = 0;
  std::unordered_map<Key, Message, KeyHash> open_;
  std::deque<Key> completed_;
  std::map<std::pair<uint8_t, uint32_t>, Group> groups_;
};

// Readers of the two files LatencyTrace writes. On malformed input they return false with
// "NAME:LINE: reason" in *error. The JSON reader keeps the stage events ("ph":"i") and ignores
// spans and metadata; a JSON trace that ends early is read up to its last complete event.
bool read_csv_trace(std::istream& in, const std::string& name, SummaryBuilder& builder, std::string* error);
bool read_csv_trace(std::istream& in, const std::string& name, const std::function<void(const TraceEvent&)>& sink,
                    std::string* error);
bool read_json_trace(std::istream& in, const std::string& name, SummaryBuilder& builder, bool* truncated,
                     std::string* error);

// Opens PATH, tells CSV from JSON by its first character and summarises it.
std::optional<TraceSummary> summarize_trace_file(const std::string& path, std::string* error);

// An aligned table (times in ns, us or ms) and the same as CSV (times in ns, exact to the ps).
std::string format_summary_table(const TraceSummary& summary);
std::string format_summary_csv(const TraceSummary& summary);

}  // namespace hcaemu::traces
