// hcatrace's statistics and readers: percentiles, stage deltas, CSV and JSON (closed and killed),
// and errors that name the line.
#include "traces/trace_summary.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hcaemu::traces;

namespace {

constexpr size_t kEndToEnd = 0;
size_t metric(Stage s) { return size_t(s); }

TEST(TraceSummary, NearestRankPercentiles) {
  std::vector<uint64_t> v;
  for (uint64_t i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(nearest_rank(v, 50), 50u);
  EXPECT_EQ(nearest_rank(v, 90), 90u);
  EXPECT_EQ(nearest_rank(v, 99), 99u);
  EXPECT_EQ(nearest_rank(v, 100), 100u);
  EXPECT_EQ(nearest_rank({7}, 50), 7u);
  EXPECT_EQ(nearest_rank({7}, 99), 7u);
  EXPECT_EQ(nearest_rank({1, 2, 3}, 50), 2u);
  EXPECT_EQ(nearest_rank({}, 50), 0u);
}

TEST(TraceSummary, EndToEndAndStageChain) {
  SummaryBuilder b;
  // Two 64 B RDMA WRITEs (end to end 700 and 900 ns) and one 4096 B one.
  const uint64_t offsets[] = {0, 100, 250, 300, 400, 500, 700, 800};  // ns after the doorbell, per stage
  for (uint64_t msg = 0; msg < 2; ++msg)
    for (size_t s = 0; s < kStageCount; ++s)
      b.add({msg * 10000000 + (offsets[s] + (s >= 6 ? msg * 200 : 0)) * 1000, 0, 7, msg, 0x08, 64, Stage(s)});
  b.add({0, 1, 8, 0, 0x08, 4096, Stage::kDoorbell});
  b.add({3000000, 1, 8, 0, 0x08, 4096, Stage::kCqeWrite});
  const TraceSummary s = b.finish();
  EXPECT_EQ(s.events, 2 * kStageCount + 2);
  EXPECT_EQ(s.messages, 3u);
  EXPECT_EQ(s.complete, 3u);
  ASSERT_EQ(s.groups.size(), 2u);
  const GroupSummary& small = s.groups[0];
  EXPECT_EQ(small.opcode, 0x08);
  EXPECT_EQ(small.bytes, 64u);
  EXPECT_EQ(small.messages, 2u);
  EXPECT_EQ(small.metrics[kEndToEnd].count, 2u);
  EXPECT_EQ(small.metrics[kEndToEnd].p50_ps, 700000u);
  EXPECT_EQ(small.metrics[kEndToEnd].max_ps, 900000u);
  EXPECT_EQ(small.metrics[metric(Stage::kWqeFetch)].p50_ps, 100000u);
  EXPECT_EQ(small.metrics[metric(Stage::kPayloadDma)].p50_ps, 150000u);
  EXPECT_EQ(small.metrics[metric(Stage::kCqeWrite)].p50_ps, 200000u);
  EXPECT_EQ(small.metrics[metric(Stage::kCqeWrite)].max_ps, 400000u);
  EXPECT_EQ(small.metrics[metric(Stage::kInterrupt)].p50_ps, 100000u);
  const GroupSummary& big = s.groups[1];
  EXPECT_EQ(big.bytes, 4096u);
  EXPECT_EQ(big.metrics[kEndToEnd].p50_ps, 3000000u);
  EXPECT_EQ(big.metrics[metric(Stage::kCqeWrite)].count, 1u) << "delta from the doorbell, the stage before it";
  EXPECT_EQ(big.metrics[metric(Stage::kWqeFetch)].count, 0u);
}

// An RDMA READ writes its payload after the response arrives: deltas follow model time and
// still add up to the end-to-end latency.
TEST(TraceSummary, ModelThroughputOverTheGroupsSpan) {
  SummaryBuilder b;
  // Four 65536 B WRITEs, doorbells at 0/1/2/3 us, CQEs 10 us after each: 4 x 64 KiB over 13 us.
  for (uint64_t msg = 0; msg < 4; ++msg) {
    b.add({msg * 1000000, 0, 7, msg, 0x08, 65536, Stage::kDoorbell});
    b.add({msg * 1000000 + 10000000, 0, 7, msg, 0x08, 65536, Stage::kCqeWrite});
  }
  b.add({0, 0, 7, 99, 0x08, 64, Stage::kDoorbell});  // never completes: no span
  const TraceSummary s = b.finish();
  ASSERT_EQ(s.groups.size(), 2u);
  const GroupSummary& small = s.groups[0].bytes == 64 ? s.groups[0] : s.groups[1];
  const GroupSummary& large = s.groups[0].bytes == 64 ? s.groups[1] : s.groups[0];
  EXPECT_EQ(small.span_ps, 0u);
  EXPECT_EQ(small.model_gbps(), 0.0);
  EXPECT_EQ(large.span_ps, 13000000u);
  EXPECT_NEAR(large.model_gbps(), 4 * 65536 * 8 / 13000.0, 1e-9);
  EXPECT_NE(format_summary_table(s).find("161.32"), std::string::npos) << format_summary_table(s);
}

TEST(TraceSummary, DeltasFollowModelTimeOrder) {
  SummaryBuilder b;
  b.add({0, 0, 1, 1, 0x10, 64, Stage::kDoorbell});
  b.add({100, 0, 1, 1, 0x10, 64, Stage::kWqeFetch});
  b.add({300, 0, 1, 1, 0x10, 64, Stage::kWireFirstPacket});
  b.add({900, 0, 1, 1, 0x10, 64, Stage::kAck});
  b.add({1000, 0, 1, 1, 0x10, 64, Stage::kPayloadDma});
  b.add({1100, 0, 1, 1, 0x10, 64, Stage::kCqeWrite});
  const GroupSummary g = b.finish().groups.at(0);
  EXPECT_EQ(g.metrics[metric(Stage::kAck)].p50_ps, 600u);
  EXPECT_EQ(g.metrics[metric(Stage::kPayloadDma)].p50_ps, 100u);
  EXPECT_EQ(g.metrics[metric(Stage::kCqeWrite)].p50_ps, 100u);
  uint64_t sum = 0;
  for (size_t i = 1; i < kMetricCount; ++i) sum += g.metrics[i].p50_ps * g.metrics[i].count;
  EXPECT_EQ(sum, g.metrics[kEndToEnd].p50_ps);
}

TEST(TraceSummary, IncompleteMessagesHaveNoEndToEnd) {
  SummaryBuilder b;
  b.add({0, 0, 1, 1, 0x0a, 8, Stage::kWqeFetch});  // doorbell not traced
  b.add({50, 0, 1, 1, 0x0a, 8, Stage::kCqeWrite});
  b.add({0, 0, 1, 2, 0x0a, 8, Stage::kDoorbell});  // never completed
  const TraceSummary s = b.finish();
  EXPECT_EQ(s.messages, 2u);
  EXPECT_EQ(s.complete, 0u);
  EXPECT_EQ(s.groups.at(0).metrics[kEndToEnd].count, 0u);
  EXPECT_EQ(s.groups.at(0).metrics[metric(Stage::kCqeWrite)].p50_ps, 50u);
}

TEST(TraceSummary, MessagesAreKeyedByFunction) {
  SummaryBuilder b;
  b.add({0, 0, 1, 1, 0x08, 64, Stage::kDoorbell});
  b.add({0, 1, 1, 1, 0x08, 64, Stage::kDoorbell});  // same message id on VF0
  b.add({500, 0, 1, 1, 0x08, 64, Stage::kCqeWrite});
  b.add({900, 1, 1, 1, 0x08, 64, Stage::kCqeWrite});
  const auto g = b.finish().groups.at(0);
  EXPECT_EQ(g.complete, 2u);
  EXPECT_EQ(g.metrics[kEndToEnd].p50_ps, 500u);
  EXPECT_EQ(g.metrics[kEndToEnd].max_ps, 900u);
}

TEST(TraceSummary, LongTracesSettleAsTheyGo) {
  SummaryBuilder b;
  const uint64_t n = SummaryBuilder::kSettleWindow + 500;
  for (uint64_t m = 0; m < n; ++m) {
    b.add({m * 10, 0, 1, m, 0x08, 64, Stage::kDoorbell});
    b.add({m * 10 + 5, 0, 1, m, 0x08, 64, Stage::kCqeWrite});
    b.add({m * 10 + 6, 0, 1, m, 0x08, 64, Stage::kInterrupt});
  }
  const auto s = b.finish();
  EXPECT_EQ(s.messages, n);
  EXPECT_EQ(s.groups.at(0).metrics[metric(Stage::kInterrupt)].count, n);
}

class TraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("hcaemu_trace_summary_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string error_of(const std::string& name, const std::string& text) {
    std::string error;
    EXPECT_FALSE(summarize_trace_file(write(name, text), &error));
    return error;
  }

  // A trace of 50 messages of two opcodes with irregular (ps) timings.
  std::string record_trace(bool close) {
    std::string error;
    const std::string prefix = (dir_ / "run").string();
    trace_ = LatencyTrace::open(prefix, &error);
    EXPECT_TRUE(trace_) << error;
    for (uint64_t m = 0; m < 50; ++m) {
      const uint8_t opcode = m % 2 ? 0x0a : 0x08;
      const uint64_t t0 = 1000000000000ull + m * 7777777;  // starts 1 s into model time
      for (size_t s = 0; s < kStageCount; ++s)
        trace_->record({t0 + s * (100003 + m * 17), uint16_t(m % 3), 5, m, opcode, uint32_t(64 << (m % 2)), Stage(s)});
    }
    if (close)
      trace_->close();
    else
      trace_->flush();
    return prefix;
  }

  std::filesystem::path dir_;
  std::unique_ptr<LatencyTrace> trace_;
};

void expect_same(const TraceSummary& a, const TraceSummary& b) {
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.messages, b.messages);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].opcode, b.groups[i].opcode);
    EXPECT_EQ(a.groups[i].bytes, b.groups[i].bytes);
    for (size_t m = 0; m < kMetricCount; ++m) {
      EXPECT_EQ(a.groups[i].metrics[m].count, b.groups[i].metrics[m].count);
      EXPECT_EQ(a.groups[i].metrics[m].p50_ps, b.groups[i].metrics[m].p50_ps);
      EXPECT_EQ(a.groups[i].metrics[m].p99_ps, b.groups[i].metrics[m].p99_ps);
      EXPECT_EQ(a.groups[i].metrics[m].max_ps, b.groups[i].metrics[m].max_ps);
    }
  }
}

TEST_F(TraceFiles, CsvAndJsonGiveTheSameSummary) {
  const std::string prefix = record_trace(true);
  std::string error;
  const auto from_csv = summarize_trace_file(prefix + ".csv", &error);
  ASSERT_TRUE(from_csv) << error;
  const auto from_json = summarize_trace_file(prefix + ".json", &error);
  ASSERT_TRUE(from_json) << error;
  EXPECT_EQ(from_csv->events, 50 * kStageCount);
  EXPECT_EQ(from_csv->complete, 50u);
  ASSERT_EQ(from_csv->groups.size(), 2u);
  EXPECT_EQ(from_csv->groups[0].opcode, 0x08);
  EXPECT_EQ(from_csv->groups[1].opcode, 0x0a);
  EXPECT_EQ(from_csv->groups[1].bytes, 128u);
  EXPECT_EQ(from_csv->groups[0].metrics[kEndToEnd].p50_ps, 6 * (100003 + 24 * 17)) << "message 24 is the median";
  expect_same(*from_csv, *from_json);
  EXPECT_FALSE(from_json->truncated);
}

TEST_F(TraceFiles, KilledRunJsonIsReadToItsLastEvent) {
  const std::string prefix = record_trace(false);
  std::string error;
  const auto from_json = summarize_trace_file(prefix + ".json", &error);
  ASSERT_TRUE(from_json) << error;
  EXPECT_TRUE(from_json->truncated);
  const auto from_csv = summarize_trace_file(prefix + ".csv", &error);
  ASSERT_TRUE(from_csv) << error;
  expect_same(*from_csv, *from_json);

  // Cut inside the last event, as a write interrupted by SIGKILL would.
  std::ifstream in(prefix + ".json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string cut = text.str().substr(0, text.str().size() - 20);
  const auto partial = summarize_trace_file(write("cut.json", cut), &error);
  ASSERT_TRUE(partial) << error;
  EXPECT_TRUE(partial->truncated);
  EXPECT_EQ(partial->events, from_csv->events - 1);
}

TEST_F(TraceFiles, ForeignJsonLayoutsAreRead) {
  // Pretty-printed, keys in another order, integer ts, numeric opcode, extra fields and nesting.
  const std::string text = R"({
  "otherData": {"x": [1, 2, {"y": -1.5}]},
  "traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "PF"}},
    {"args": {"bytes": 64, "opcode": 8, "message": 3, "extra": {"ts": -1}}, "ts": 2, "name": "doorbell",
     "ph": "i", "pid": 0, "tid": 1, "s": "t", "cat": "stage"},
    {"name": "RDMA_WRITE 64 B", "ph": "X", "ts": 2.0, "dur": 1.5e-3, "pid": 0, "tid": 16777217},
    {"name": "cqe_write", "ph": "i", "ts": 2.5e0, "pid": 0, "tid": 1, "args": {"message": 3, "opcode": "RDMA_WRITE", "bytes": 64}}
  ],
  "more": [{"name": "doorbell", "ph": "i"}]
})";
  std::string error;
  const auto s = summarize_trace_file(write("foreign.json", text), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->events, 2u);
  ASSERT_EQ(s->groups.size(), 1u);
  EXPECT_EQ(s->groups[0].metrics[kEndToEnd].p50_ps, 500000u);
}

TEST_F(TraceFiles, CsvErrorsNameTheLine) {
  const std::string header = "time_ps,function,qpn,message,opcode,bytes,stage\n";
  EXPECT_NE(error_of("a.csv", "time,function\n1,2\n").find("a.csv:1: expected the header"), std::string::npos);
  EXPECT_NE(error_of("b.csv", header + "1,0,1,1,SEND,8,doorbell\n2,0,1,1,SEND,8\n").find("b.csv:3: expected 7 fields, found 6"),
            std::string::npos);
  EXPECT_NE(error_of("c.csv", header + "\n1,0,1,1,SEND,8,doorbel\n").find("c.csv:3: unknown stage \"doorbel\""),
            std::string::npos);
  EXPECT_NE(error_of("d.csv", header + "-1,0,1,1,SEND,8,doorbell\n").find("d.csv:2: bad time_ps \"-1\""), std::string::npos);
  EXPECT_NE(error_of("e.csv", header + "1,65536,1,1,SEND,8,doorbell\n").find("e.csv:2: bad function"), std::string::npos);
  EXPECT_NE(error_of("f.csv", header + "1,0,1,1,BOGUS,8,doorbell\n").find("f.csv:2: bad opcode \"BOGUS\""),
            std::string::npos);
  EXPECT_NE(error_of("g.csv", header + "1,0,1,1,SEND,8,doorbell,x\n").find("g.csv:2: expected 7 fields, found 8"),
            std::string::npos);
  EXPECT_NE(error_of("h.csv", "").find("h.csv:1: empty file"), std::string::npos);
  std::string error;
  EXPECT_FALSE(summarize_trace_file((dir_ / "absent.csv").string(), &error));
  EXPECT_NE(error.find("absent.csv: cannot open"), std::string::npos) << error;
}

TEST_F(TraceFiles, CsvWithWindowsLineEndsIsRead) {
  std::string error;
  const auto s = summarize_trace_file(
      write("crlf.csv", "time_ps,function,qpn,message,opcode,bytes,stage\r\n1,0,1,1,SEND,8,doorbell\r\n"), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->events, 1u);
}

TEST_F(TraceFiles, JsonErrorsNameTheLine) {
  const std::string syntax = error_of("s.json", "{\"traceEvents\":[\n{\"ph\":\"i\"},\n{\"ph\" \"i\"},\n{}]}\n");
  EXPECT_NE(syntax.find("s.json:3: syntax error"), std::string::npos) << syntax;
  const std::string missing = error_of(
      "m.json", "[\n{\"name\":\"doorbell\",\"ph\":\"i\",\"ts\":1,\"pid\":0,\"tid\":1,\"args\":{\"opcode\":8,\"bytes\":8}}\n]");
  EXPECT_NE(missing.find("m.json:2: stage event \"doorbell\" without args.message"), std::string::npos) << missing;
  const std::string negative = error_of("n.json", "[\n\n{\"name\":\"ack\",\"ph\":\"i\",\"ts\":1,\"pid\":-1}]");
  EXPECT_NE(negative.find("n.json:3: \"pid\" must not be negative"), std::string::npos) << negative;
  const std::string no_array = error_of("o.json", "{\"events\": 1}");
  EXPECT_NE(no_array.find("no \"traceEvents\" array"), std::string::npos) << no_array;
  const std::string opcode = error_of("p.json", "[{\"name\":\"ack\",\"ph\":\"i\",\"args\":{\"opcode\":\"WRIT\"}}]");
  EXPECT_NE(opcode.find("p.json:1: unknown opcode \"WRIT\""), std::string::npos) << opcode;
}

TEST_F(TraceFiles, TableAndCsvOutput) {
  const std::string prefix = record_trace(true);
  std::string error;
  const auto s = summarize_trace_file(prefix + ".csv", &error);
  ASSERT_TRUE(s) << error;
  const std::string table = format_summary_table(*s);
  EXPECT_NE(table.find("400 events, 50 messages (50 with doorbell and cqe_write)"), std::string::npos) << table;
  EXPECT_NE(table.find("opcode"), std::string::npos);
  EXPECT_NE(table.find("->wqe_fetch"), std::string::npos);
  EXPECT_NE(table.find("RDMA_WRITE          64  end_to_end"), std::string::npos) << table;
  EXPECT_NE(table.find("   602.5 ns"), std::string::npos) << table;
  const std::string csv = format_summary_csv(*s);
  EXPECT_EQ(csv.rfind("opcode,bytes,metric,count,p50_ns,p90_ns,p99_ns,max_ns\n", 0), 0u);
  // Message 24 is the median RDMA WRITE: 6 * (100003 + 408) ps end to end.
  EXPECT_NE(csv.find("\nRDMA_WRITE,64,end_to_end,25,602.466,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nSEND,128,interrupt,25,"), std::string::npos) << csv;
}

}  // namespace
