// hcaemu's latency trace joined to a capture of the same run (replay/trace_timing.h): a message
// found by its requester QPN and last PSN takes its doorbell as its post time and keeps its FCT;
// ids two functions share and datagram ids are left out; a malformed trace names its line.
#include "replay/trace_timing.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // records name only what they set

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "replay/workload.h"

namespace hcaemu::replay {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

constexpr uint64_t kId = (uint64_t(0x10) << 24) | 0x105;

TEST(TraceTiming, DoorbellBecomesThePostAndTheFctIsKept) {
  const std::string csv = write_file("trace_timing_test.csv",
      "time_ps,function,qpn,message,opcode,bytes,stage\n"
      "1000000,0,16," + std::to_string(kId) + ",RDMA_WRITE,4096,doorbell\n"
      "1200000,0,16," + std::to_string(kId) + ",RDMA_WRITE,4096,wqe_fetch\n"
      "1500000,0,16," + std::to_string(kId) + ",RDMA_WRITE,4096,payload_dma\n"
      "5000000,0,16," + std::to_string(kId) + ",RDMA_WRITE,4096,cqe_write\n"
      // the same id on another function: ambiguous, left out
      "1000000,0,17," + std::to_string((uint64_t(0x11) << 24) | 7) + ",SEND,8,doorbell\n"
      "1000000,1,17," + std::to_string((uint64_t(0x11) << 24) | 7) + ",SEND,8,doorbell\n"
      // 64 bytes, no payload read (inline), no CQE (unsignalled)
      "6000000,0,16," + std::to_string((uint64_t(0x10) << 24) | 0x107) + ",RDMA_WRITE,64,doorbell\n"
      // a datagram: its id is a counter
      "2000000,0,18," + std::to_string((uint64_t(1) << 63) | 5) + ",SEND,8,doorbell\n");
  std::string error;
  const auto timing = read_trace_timing(csv, &error);
  ASSERT_TRUE(timing) << error;
  EXPECT_EQ(timing->messages, 2u);
  EXPECT_EQ(timing->ambiguous, 1u);

  Reconstruction capture;
  capture.hosts.resize(2);
  capture.hosts[0].gid = transport::gid_from_ipv4(0x0a000001);
  capture.hosts[1].gid = transport::gid_from_ipv4(0x0a000002);
  capture.hosts[0].name = "a";
  capture.hosts[1].name = "b";
  capture.queue_pairs.push_back({.host = 0, .peer_host = 1, .qpn = 0x10, .service = Service::kRc, .mtu = 4096});
  capture.messages.push_back({.qp = 0, .kind = MessageKind::kWrite, .bytes = 4096, .first_psn = 0x105, .packets = 1,
                              .last_psn = 0x105, .first_ns = 1500, .done_ns = 4800, .complete = true});
  capture.messages.push_back({.qp = 0, .kind = MessageKind::kWrite, .bytes = 4096, .first_psn = 0x106, .packets = 1,
                              .last_psn = 0x106, .first_ns = 6000, .done_ns = 9000, .complete = true});
  capture.messages.push_back({.qp = 0, .kind = MessageKind::kWrite, .bytes = 64, .first_psn = 0x107, .packets = 1,
                              .last_psn = 0x107, .first_ns = 6100, .done_ns = 9500, .complete = true});
  EXPECT_EQ(apply_trace_timing(capture, *timing), 2u);
  EXPECT_EQ(capture.messages[0].doorbell_ps, 1000000u);
  EXPECT_EQ(capture.messages[0].cqe_ps, 5000000u);
  EXPECT_EQ(capture.messages[1].doorbell_ps, 0u) << "not in the trace";
  const Workload w = lower(capture);
  ASSERT_EQ(w.qps.size(), 1u);
  EXPECT_EQ(w.qps[0].ops[0].post_ns, 1000u);
  EXPECT_EQ(w.qps[0].ops[0].captured_fct_ns, 4000u);
  EXPECT_EQ(w.qps[0].ops[1].post_ns, 6000u) << "untimed: its first packet";
  EXPECT_EQ(w.qps[0].ops[1].think_ns, 1000u) << "after the CQE the trace saw";
  EXPECT_FALSE(w.qps[0].ops[1].captured_fct_ns);
  EXPECT_TRUE(w.qps[0].ops[0].signalled);
  EXPECT_FALSE(w.qps[0].ops[0].inline_data) << "its payload was read";
  EXPECT_FALSE(w.qps[0].ops[2].signalled) << "no CQE in the trace";
  EXPECT_TRUE(w.qps[0].ops[2].inline_data) << "no payload read in the trace";
  EXPECT_FALSE(w.qps[0].ops[2].captured_fct_ns);
  // The workload file keeps the captured FCT.
  const auto again = parse_workload(workload_json(w), &error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->qps[0].ops[0].captured_fct_ns, 4000u);
  std::filesystem::remove(csv);
}

TEST(TraceTiming, AMalformedTraceNamesItsLine) {
  const std::string csv = write_file("trace_timing_bad.csv",
                                     "time_ps,function,qpn,message,opcode,bytes,stage\n1,0,16,5,RDMA_WRITE,8,landed\n");
  std::string error;
  EXPECT_FALSE(read_trace_timing(csv, &error));
  EXPECT_NE(error.find("trace_timing_bad.csv:2"), std::string::npos) << error;
  EXPECT_NE(error.find("landed"), std::string::npos) << error;
  EXPECT_FALSE(read_trace_timing("/nonexistent/trace.csv", &error));
  std::filesystem::remove(csv);
}

}  // namespace
}  // namespace hcaemu::replay
