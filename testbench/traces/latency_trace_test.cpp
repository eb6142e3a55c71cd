// The latency trace writer: what Perfetto / chrome://tracing load, closed and killed, and the CSV.
#include "traces/latency_trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hcaemu::traces;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LatencyTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("hcaemu_latency_trace_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    prefix_ = (dir_ / "run").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<LatencyTrace> open() {
    std::string error;
    auto trace = LatencyTrace::open(prefix_, &error);
    EXPECT_TRUE(trace) << error;
    return trace;
  }

  // One RDMA WRITE through all stages, 100 ns apart from t0.
  static void write_message(LatencyTrace& t, uint16_t function, uint32_t qpn, uint64_t message, uint64_t t0_ps) {
    for (size_t s = 0; s < kStageCount; ++s)
      t.record({t0_ps + s * 100000, function, qpn, message, 0x08, 64, Stage(s)});
  }

  static std::vector<json> events_of(const json& array, const std::string& ph) {
    std::vector<json> out;
    for (const auto& e : array)
      if (e.at("ph") == ph) out.push_back(e);
    return out;
  }

  std::filesystem::path dir_;
  std::string prefix_;
};

TEST(LatencyTraceNames, StagesAndOpcodes) {
  const char* expected[] = {"doorbell", "wqe_fetch", "payload_dma", "wire_first_packet",
                            "remote_delivery", "ack", "cqe_write", "interrupt"};
  for (size_t i = 0; i < kStageCount; ++i) {
    EXPECT_STREQ(stage_name(Stage(i)), expected[i]);
    Stage s;
    ASSERT_TRUE(parse_stage(expected[i], &s));
    EXPECT_EQ(s, Stage(i));
  }
  Stage s;
  EXPECT_FALSE(parse_stage("doorbel", &s));
  EXPECT_STREQ(stage_name(Stage(42)), "unknown");

  EXPECT_STREQ(wqe_opcode_name(0x08), "RDMA_WRITE");
  EXPECT_STREQ(wqe_opcode_name(0x09), "RDMA_WRITE_IMM");
  EXPECT_STREQ(wqe_opcode_name(0x0a), "SEND");
  EXPECT_STREQ(wqe_opcode_name(0x0b), "SEND_IMM");
  EXPECT_STREQ(wqe_opcode_name(0x10), "RDMA_READ");
  EXPECT_STREQ(wqe_opcode_name(0x11), "ATOMIC_CS");
  EXPECT_STREQ(wqe_opcode_name(0x12), "ATOMIC_FA");
  EXPECT_STREQ(wqe_opcode_name(0x01), "SEND_INV");
  EXPECT_STREQ(wqe_opcode_name(0x00), "NOP");
  EXPECT_STREQ(wqe_opcode_name(0x1e), "UNKNOWN");
  EXPECT_EQ(wqe_opcode_label(0x1e), "0x1e");
  EXPECT_EQ(wqe_opcode_label(0x10), "RDMA_READ");

  uint8_t op = 0;
  EXPECT_TRUE(parse_wqe_opcode("RDMA_READ", &op));
  EXPECT_EQ(op, 0x10);
  EXPECT_TRUE(parse_wqe_opcode("0x1e", &op));
  EXPECT_EQ(op, 0x1e);
  EXPECT_TRUE(parse_wqe_opcode("10", &op));
  EXPECT_EQ(op, 10);
  for (const char* bad : {"", "0x", "0x100", "256", "rdma_read", "8 ", "-1"}) EXPECT_FALSE(parse_wqe_opcode(bad, &op)) << bad;
}

TEST_F(LatencyTraceTest, ClosedJsonIsATraceEventObject) {
  auto trace = open();
  write_message(*trace, 0, 0x12, 1, 1234567);  // ts 1.234567 us
  write_message(*trace, 2, 0x40, 7, 5000000);  // VF1
  EXPECT_EQ(trace->events(), 2 * kStageCount);
  trace->close();

  const std::string text = slurp(prefix_ + ".json");
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  EXPECT_NE(text.find("\"ts\":1.234567,"), std::string::npos) << "microseconds, exact to the picosecond";
  const json doc = json::parse(text);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  const json& events = doc.at("traceEvents");

  const auto instants = events_of(events, "i");
  ASSERT_EQ(instants.size(), 2 * kStageCount);
  EXPECT_EQ(instants[0].at("name"), "doorbell");
  EXPECT_EQ(instants[0].at("s"), "t");
  EXPECT_EQ(instants[0].at("pid"), 0);
  EXPECT_EQ(instants[0].at("tid"), 0x12);
  EXPECT_DOUBLE_EQ(instants[0].at("ts").get<double>(), 1.234567);
  EXPECT_EQ(instants[0].at("args").at("message"), 1);
  EXPECT_EQ(instants[0].at("args").at("opcode"), "RDMA_WRITE");
  EXPECT_EQ(instants[0].at("args").at("bytes"), 64);
  EXPECT_EQ(instants[kStageCount - 1].at("name"), "interrupt");

  const auto spans = events_of(events, "X");
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].at("name"), "RDMA_WRITE 64 B");
  EXPECT_DOUBLE_EQ(spans[0].at("ts").get<double>(), 1.234567);
  EXPECT_DOUBLE_EQ(spans[0].at("dur").get<double>(), 0.6) << "doorbell to cqe_write";
  EXPECT_EQ(spans[0].at("pid"), 0);
  EXPECT_EQ(spans[0].at("tid"), (1 << 24) | 0x12) << "lane 0 of QP 0x12";
  EXPECT_EQ(spans[1].at("pid"), 2);
  EXPECT_EQ(trace->counters().spans, 2u);

  std::map<int, std::string> process_names;
  std::map<int64_t, std::string> thread_names;
  for (const auto& m : events_of(events, "M")) {
    if (m.at("name") == "process_name") process_names[m.at("pid").get<int>()] = m.at("args").at("name").get<std::string>();
    if (m.at("name") == "thread_name") thread_names[m.at("tid").get<int64_t>()] = m.at("args").at("name").get<std::string>();
  }
  EXPECT_EQ(process_names, (std::map<int, std::string>{{0, "PF"}, {2, "VF1"}}));
  EXPECT_EQ(thread_names[0x12], "QP 0x000012");
  EXPECT_EQ(thread_names[(1 << 24) | 0x12], "QP 0x000012 messages");
}

TEST_F(LatencyTraceTest, EmptyTraceIsValidToo) {
  open()->close();
  const json doc = json::parse(slurp(prefix_ + ".json"));
  EXPECT_TRUE(doc.at("traceEvents").empty());
  EXPECT_EQ(slurp(prefix_ + ".csv"), "time_ps,function,qpn,message,opcode,bytes,stage\n");
}

// A killed run never reaches close(): what was flushed must load as the JSON array form, which
// Perfetto reads without its closing bracket and chrome://tracing completes with one.
TEST_F(LatencyTraceTest, KilledRunLeavesALoadableArray) {
  auto trace = open();
  const std::string before_events = slurp(prefix_ + ".json");
  EXPECT_EQ(before_events[0], '[');
  EXPECT_TRUE(json::parse(before_events + "]").empty());

  write_message(*trace, 0, 5, 1, 0);
  write_message(*trace, 0, 5, 2, 1000000);
  trace->record({2000000, 0, 5, 3, 0x0a, 128, Stage::kDoorbell});  // still in flight
  trace->flush();
  const std::string text = slurp(prefix_ + ".json");
  EXPECT_EQ(text[0], '[');
  EXPECT_EQ(text.back(), '}') << "the file ends at an event boundary";
  const json array = json::parse(text + "]");
  ASSERT_TRUE(array.is_array());
  EXPECT_EQ(events_of(array, "i").size(), 2 * kStageCount + 1);
  EXPECT_EQ(events_of(array, "X").size(), 2u);

  const std::string csv = slurp(prefix_ + ".csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2 * long(kStageCount) + 1);
}

TEST_F(LatencyTraceTest, CsvHasOneLinePerStage) {
  auto trace = open();
  trace->record({1500, 3, 0xabcdef, 42, 0x10, 4096, Stage::kDoorbell});
  trace->record({2500, 3, 0xabcdef, 42, 0x1e, 4096, Stage::kWqeFetch});
  trace->close();
  EXPECT_EQ(slurp(prefix_ + ".csv"),
            "time_ps,function,qpn,message,opcode,bytes,stage\n"
            "1500,3,11259375,42,RDMA_READ,4096,doorbell\n"
            "2500,3,11259375,42,0x1e,4096,wqe_fetch\n");
}

// Pipelined messages on one QP overlap; trace viewers cut overlapping slices on one thread, so
// each overlapping span goes to its own lane.
TEST_F(LatencyTraceTest, OverlappingMessagesGetSeparateLanes) {
  auto trace = open();
  auto rec = [&](uint64_t t, uint64_t msg, Stage s) { trace->record({t, 0, 9, msg, 0x08, 64, s}); };
  rec(0, 1, Stage::kDoorbell);
  rec(100, 2, Stage::kDoorbell);
  rec(500, 1, Stage::kCqeWrite);
  rec(600, 2, Stage::kCqeWrite);
  rec(700, 3, Stage::kDoorbell);
  rec(900, 3, Stage::kCqeWrite);
  trace->close();
  const json doc = json::parse(slurp(prefix_ + ".json"));
  const auto spans = events_of(doc.at("traceEvents"), "X");
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].at("tid"), (1 << 24) | 9);
  EXPECT_EQ(spans[1].at("tid"), (2 << 24) | 9) << "overlaps message 1";
  EXPECT_EQ(spans[2].at("tid"), (1 << 24) | 9) << "lane 0 is free again";
  EXPECT_EQ(trace->counters().lanes_exhausted, 0u);
}

TEST_F(LatencyTraceTest, LanesAreBounded) {
  auto trace = open();
  const uint64_t n = LatencyTrace::kMaxLanes + 3;
  for (uint64_t m = 0; m < n; ++m) trace->record({m, 0, 9, m, 0x08, 64, Stage::kDoorbell});
  for (uint64_t m = 0; m < n; ++m) trace->record({1000 + m, 0, 9, m, 0x08, 64, Stage::kCqeWrite});
  EXPECT_EQ(trace->counters().spans, n);
  EXPECT_EQ(trace->counters().lanes_exhausted, 3u);
}

// A guest that rings doorbells and never completes them cannot grow the open-span table.
TEST_F(LatencyTraceTest, OpenMessagesAreBounded) {
  auto trace = open();
  const uint64_t n = LatencyTrace::kMaxOpenMessages + 10;
  for (uint64_t m = 0; m < n; ++m) trace->record({m, 1, 3, m, 0x0a, 8, Stage::kDoorbell});
  EXPECT_EQ(trace->counters().spans_evicted, 10u);
  trace->record({n, 1, 3, 0, 0x0a, 8, Stage::kCqeWrite});  // evicted: no span
  trace->record({n, 1, 3, n - 1, 0x0a, 8, Stage::kCqeWrite});
  EXPECT_EQ(trace->counters().spans_unopened, 1u);
  EXPECT_EQ(trace->counters().spans, 1u);
  EXPECT_EQ(trace->events(), n + 2);
}

TEST_F(LatencyTraceTest, InterruptAfterTheCqeOpensNothing) {
  auto trace = open();
  trace->record({0, 0, 1, 1, 0x08, 64, Stage::kDoorbell});
  trace->record({10, 0, 1, 1, 0x08, 64, Stage::kCqeWrite});
  trace->record({20, 0, 1, 1, 0x08, 64, Stage::kInterrupt});
  trace->record({30, 0, 1, 1, 0x08, 64, Stage::kCqeWrite});  // a CQE of a closed span: no second span
  EXPECT_EQ(trace->counters().spans, 1u);
  EXPECT_EQ(trace->counters().spans_unopened, 1u);
}

TEST_F(LatencyTraceTest, SpanStartsAtTheEarliestStage) {
  auto trace = open();
  trace->record({5000, 0, 1, 1, 0x08, 64, Stage::kWqeFetch});
  trace->record({4000, 0, 1, 1, 0x08, 64, Stage::kDoorbell});  // recorded late, earlier in model time
  trace->record({9000, 0, 1, 1, 0x08, 64, Stage::kCqeWrite});
  trace->close();
  const auto spans = events_of(json::parse(slurp(prefix_ + ".json")).at("traceEvents"), "X");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_DOUBLE_EQ(spans[0].at("ts").get<double>(), 0.004);
  EXPECT_DOUBLE_EQ(spans[0].at("dur").get<double>(), 0.005);
}

TEST_F(LatencyTraceTest, ManyEventsStreamBeforeClose) {
  auto trace = open();
  for (uint64_t m = 0; m < 2000; ++m) write_message(*trace, uint16_t(m % 3), uint32_t(m % 7), m, m * 1000000);
  EXPECT_GT(std::filesystem::file_size(prefix_ + ".json"), LatencyTrace::kFlushBytes / 2) << "written as it goes";
  trace->close();
  const json doc = json::parse(slurp(prefix_ + ".json"));
  EXPECT_EQ(events_of(doc.at("traceEvents"), "i").size(), 2000 * kStageCount);
  EXPECT_EQ(events_of(doc.at("traceEvents"), "X").size(), 2000u);
}

TEST_F(LatencyTraceTest, CloseIsIdempotentAndEndsRecording) {
  auto trace = open();
  write_message(*trace, 0, 1, 1, 0);
  trace->close();
  const std::string closed = slurp(prefix_ + ".json");
  trace->close();
  trace->record({1, 0, 1, 2, 0x08, 64, Stage::kDoorbell});
  trace.reset();
  EXPECT_EQ(slurp(prefix_ + ".json"), closed);
  EXPECT_NO_THROW(json::parse(closed));
}

TEST_F(LatencyTraceTest, OpenFailsWithAMessage) {
  std::string error;
  EXPECT_EQ(LatencyTrace::open((dir_ / "missing" / "run").string(), &error), nullptr);
  EXPECT_NE(error.find("missing/run.json: cannot create"), std::string::npos) << error;
}

}  // namespace
