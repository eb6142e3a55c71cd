// The QP table beside the latency trace (traces/qp_table.h): what is written reads back the same,
// and a malformed table names its line.
#include "traces/qp_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace hcaemu::traces {
namespace {

std::string temp(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

TEST(QpTable, WhatIsWrittenReadsBack) {
  const std::string path = temp("qp_table_test.qps.csv");
  std::string error;
  auto writer = QpTableWriter::open(path, &error);
  ASSERT_TRUE(writer) << error;
  QpRecord rc{.time_ps = 12345, .function = 1, .qpn = 0x11, .service = "rc", .send_cq = 4, .send_cq_entries = 2,
              .recv_cq = 5, .recv_cq_entries = 64, .sq_wqebbs = 32, .rq_stride = 64, .mtu = 1024, .ack_timeout = 14,
              .retry_count = 7, .rnr_retry = 7, .max_rd_atomic = 16, .remote_qpn = 0x12,
              .mac = {0x02, 0xc9, 0, 0, 0, 1}, .state = "rts"};
  ASSERT_TRUE(parse_address("fe80::c9:ff:fe00:1", rc.address));
  QpRecord ud = rc;
  ud.qpn = 0x13, ud.service = "ud", ud.mtu = 0, ud.remote_qpn = 0, ud.state = "rtr";
  ASSERT_TRUE(parse_address("10.9.0.2", ud.address));
  writer->record(rc);
  writer->record(ud);
  writer->close();
  EXPECT_EQ(writer->records(), 2u);
  const auto table = read_qp_table(path, &error);
  ASSERT_TRUE(table) << error;
  ASSERT_EQ(table->size(), 2u);
  EXPECT_EQ((*table)[0], rc);
  EXPECT_EQ((*table)[1], ud);
  EXPECT_EQ(address_text(ud.address), "10.9.0.2");
  EXPECT_EQ(qp_table_path("/x/run.csv"), "/x/run.qps.csv");
  EXPECT_EQ(qp_table_path("/x/run"), "/x/run.qps.csv");
  std::filesystem::remove(path);
}

TEST(QpTable, AMalformedTableNamesItsLine) {
  const std::string header =
      "time_ps,function,qpn,service,address,send_cq,send_cq_entries,recv_cq,recv_cq_entries,sq_wqebbs,rq_stride,"
      "mtu,ack_timeout,retry_count,rnr_retry,max_rd_atomic,remote_qpn,mac,state\n";
  const std::string good = "1,0,17,rc,10.0.0.1,4,2,4,2,32,64,1024,14,7,7,1,18,02:00:00:00:00:01,rts\n";
  const std::pair<std::string, std::string> cases[] = {
      {"time_ps,qpn\n", ":1"},
      {header + good + "1,0,17,rc,10.0.0.1,4,2,4,2,32,64,1024,14,7,7,1,18,02:00:00:00:00:01\n", ":3: 18 columns"},
      {header + "1,0,17,rc,not-an-ip,4,2,4,2,32,64,1024,14,7,7,1,18,02:00:00:00:00:01,rts\n", ":2:"},
      {header + "1,0,17,rc,10.0.0.1,4,2,4,2,32,64,1024,14,7,7,1,18,02-00-00-00-00-01,rts\n", ":2:"},
      {header + "1,0,16777216,rc,10.0.0.1,4,2,4,2,32,64,1024,14,7,7,1,18,02:00:00:00:00:01,rts\n", "24 bits"},
      {header + "1,0,17,tcp,10.0.0.1,4,2,4,2,32,64,1024,14,7,7,1,18,02:00:00:00:00:01,rts\n", "\"tcp\" is not a service"},
      {header + "1,0,17,rc,10.0.0.1,4,2,4,2,32,64,1024,14,7,7,1,18,02:00:00:00:00:01,init\n", "\"init\" is not a state"},
      {header + "-1,0,17,rc,10.0.0.1,4,2,4,2,32,64,1024,14,7,7,1,18,02:00:00:00:00:01,rts\n", ":2:"},
  };
  const std::string path = temp("qp_table_bad.qps.csv");
  for (const auto& [text, expected] : cases) {
    std::ofstream(path) << text;
    std::string error;
    EXPECT_FALSE(read_qp_table(path, &error)) << text;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(read_qp_table("/nonexistent/run.qps.csv", &error));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace hcaemu::traces
