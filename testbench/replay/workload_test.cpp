// The workload format (replay/workload.h): what it accepts, that writing and reading it again
// gives the same workload byte for byte, and that every kind of mistake is an error naming its
// place in the file.
#include "replay/workload.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // records name only what they set

#include <gtest/gtest.h>

namespace hcaemu::replay {
namespace {

constexpr const char* kValid = R"({
  "format": "hcareplay-workload/1",
  "hosts": [{"name": "a", "ip": "10.0.0.1", "mac": "02:00:00:00:00:0a", "cqs": [{"id": 3, "entries": 2}]},
            {"name": "b", "ip": "10.0.0.2", "cqs": [{"id": 1, "entries": 64}]}, {"name": "c", "ip": "fe80::2"}],
  "qps": [
    {"host": "a", "peer": "b", "service": "rc", "mtu": 4096, "sq_wqebbs": 32, "peer_rq_stride": 64, "send_cq": 3, "recv_cq": 3,
     "peer_recv_cq": 1, "ops": [
      {"op": "write", "bytes": 65536, "post_ns": 1000, "captured_anomalies": {"resent_packets": 16, "rnr_naks": 1}},
      {"op": "send_imm", "bytes": 64, "think_ns": 500, "imm": 7, "inline": true},
      {"op": "fetch_add", "bytes": 8, "after": ["1:0"], "signalled": false}]},
    {"host": "b", "peer": "a", "service": "ud", "ops": [{"op": "send", "bytes": 100}]}
  ]
})";

std::string error_of(const std::string& text) {
  std::string error;
  EXPECT_FALSE(parse_workload(text, &error)) << text;
  return error;
}

// kValid with one substring replaced.
std::string with(const std::string& from, const std::string& to) {
  std::string text = kValid;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Workload, ParsesEveryField) {
  std::string error;
  const auto w = parse_workload(kValid, &error);
  ASSERT_TRUE(w) << error;
  ASSERT_EQ(w->hosts.size(), 3u);
  EXPECT_EQ(w->hosts[0].gid, transport::gid_from_ipv4(0x0a000001));
  EXPECT_FALSE(transport::is_ipv4_mapped(w->hosts[2].gid));
  ASSERT_EQ(w->qps.size(), 2u);
  EXPECT_EQ(w->qps[0].mtu, 4096u);
  EXPECT_EQ(w->qps[1].mtu, 1024u) << "the default";
  EXPECT_EQ(w->qps[0].sq_wqebbs, 32u);
  EXPECT_FALSE(w->qps[1].sq_wqebbs);
  EXPECT_EQ(w->qps[0].peer_rq_stride, 64u);
  EXPECT_FALSE(w->qps[1].peer_rq_stride);
  EXPECT_EQ(w->qps[0].cqs, (QpCompletionQueues{.send = 3, .recv = 3, .peer_recv = 1}));
  EXPECT_EQ(w->hosts[0].cqs, (std::vector<WorkloadCq>{{.id = 3, .entries = 2}}));
  const auto& ops = w->qps[0].ops;
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].post_ps, 1000000u);
  EXPECT_EQ(ops[0].captured_anomalies, (CapturedAnomalies{.resent_packets = 16, .rnr_naks = 1}));
  EXPECT_FALSE(ops[1].captured_anomalies.any());
  EXPECT_EQ(ops[1].think_ps, 500000u);
  EXPECT_FALSE(ops[0].think_ps);
  EXPECT_EQ(ops[1].immediate, 7u);
  EXPECT_TRUE(ops[1].inline_data);
  EXPECT_FALSE(ops[2].signalled);
  EXPECT_EQ(ops[2].after, (std::vector<OpRef>{{1, 0}}));
}

TEST(Workload, WritingAndReadingAgainGivesTheSameBytes) {
  std::string error;
  const auto w = parse_workload(kValid, &error);
  ASSERT_TRUE(w) << error;
  const std::string once = workload_json(*w);
  const auto again = parse_workload(once, &error);
  ASSERT_TRUE(again) << error << "\n" << once;
  EXPECT_EQ(workload_json(*again), once);
}

// Post and think times are nanoseconds to the picosecond: a captured doorbell 2 ps before a frame
// arrives must stay before it (rounded to whole nanoseconds, a replay could swap the two, and a
// 64-byte WRITE waited 1.1 us behind the other side's WQE fetch).
TEST(Workload, TimesKeepTheirPicoseconds) {
  std::string error;
  const auto w = parse_workload(with("\"post_ns\": 1000", "\"post_ns\": 1477024911.052"), &error);
  ASSERT_TRUE(w) << error;
  EXPECT_EQ(w->qps[0].ops[0].post_ps, 1477024911052u);
  const std::string text = workload_json(*w);
  EXPECT_NE(text.find("1477024911.052"), std::string::npos) << text;
  const auto again = parse_workload(text, &error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->qps[0].ops[0].post_ps, 1477024911052u);
  EXPECT_NE(text.find("\"think_ns\": 500"), std::string::npos);
  EXPECT_EQ(text.find("500.0"), std::string::npos) << "whole nanoseconds stay integers";
  // Every picosecond survives writing and reading up to where decimals are taken.
  for (uint64_t ps : {uint64_t(1), uint64_t(999), (uint64_t(1) << 50) - 1, (uint64_t(1) << 50) - 999, uint64_t(123456789012345)}) {
    auto timed = *w;
    timed.qps[0].ops[0].post_ps = ps;
    const auto back = parse_workload(workload_json(timed), &error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(back->qps[0].ops[0].post_ps, ps);
  }
  auto late = *w;
  late.qps[0].ops[0].post_ps = (uint64_t(1) << 50) + 1500;
  EXPECT_EQ(parse_workload(workload_json(late), &error)->qps[0].ops[0].post_ps, ((uint64_t(1) << 50) + 2000) / 1000 * 1000)
      << "past 2^50 ps, whole nanoseconds";
  EXPECT_EQ(error_of(with("\"post_ns\": 1000", "\"post_ns\": -0.5")),
            "qps[0].ops[0].post_ns: must be a number of nanoseconds from 0 (with decimals: below 1125899906842)");
  EXPECT_EQ(error_of(with("\"think_ns\": 500", "\"think_ns\": \"500\"")),
            "qps[0].ops[1].think_ns: must be a number of nanoseconds from 0 (with decimals: below 1125899906842)");
}

TEST(Workload, MistakesAreErrorsNamingTheirPlace) {
  EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
  EXPECT_EQ(error_of(with("\"bytes\": 100}", "\"bytes\": 100, \"bites\": 1}")), "qps[1].ops[0].bites: unknown key");
  EXPECT_EQ(error_of(with("\"bytes\": 65536", "\"bytes\": \"64k\"")), "qps[0].ops[0].bytes: must be an unsigned integer");
  EXPECT_EQ(error_of(with("\"bytes\": 65536", "\"bytes\": -1")), "qps[0].ops[0].bytes: must be an unsigned integer");
  EXPECT_EQ(error_of(with("\"peer\": \"b\"", "\"peer\": \"d\"")), "qps[0].peer: no host is named \"d\"");
  EXPECT_EQ(error_of(with("\"after\": [\"1:0\"]", "\"after\": [\"5:0\"]")), "qps[0].ops[2].after[0]: qps[5].ops[0] does not exist");
  EXPECT_EQ(error_of(with("\"op\": \"write\", \"bytes\": 65536, \"post_ns\": 1000", "\"op\": \"write\", \"bytes\": 65536, \"after\": [\"0:2\"]")),
            "qps[0].ops[0]: waits for itself (a cycle in \"after\")");
  EXPECT_EQ(error_of(with("\"imm\": 7, ", "")), "qps[0].ops[1]: send_imm needs \"imm\" (the immediate, or the rkey to invalidate)");
  EXPECT_EQ(error_of(with("\"fetch_add\", \"bytes\": 8", "\"fetch_add\", \"bytes\": 16")), "qps[0].ops[2].bytes: an atomic is 8 bytes");
  EXPECT_EQ(error_of(with("{\"op\": \"send\", \"bytes\": 100}", "{\"op\": \"read\", \"bytes\": 100}")),
            "qps[1].ops[0].op: read needs a reliable service (rc or xrc)");
  EXPECT_EQ(error_of(with("\"mtu\": 4096", "\"mtu\": 1500")), "qps[0].mtu: must be 256, 512, 1024, 2048 or 4096");
  EXPECT_EQ(error_of(with("\"ip\": \"10.0.0.1\"", "\"ip\": \"10.0.0\"")), "hosts[0].ip: \"10.0.0\" is not an IPv4 or IPv6 address");
  EXPECT_EQ(error_of(with("hcareplay-workload/1", "hcareplay-workload/9")),
            "format: \"hcareplay-workload/9\" is not hcareplay-workload/1");
  EXPECT_EQ(error_of(with("\"service\": \"rc\"", "\"service\": \"rd\"")), "qps[0].service: \"rd\" is not a service (rc, uc, ud, xrc)");
  EXPECT_EQ(error_of(with("\"send_cq\": 3", "\"send_cq\": 4")), "qps[0].send_cq: host a has no CQ 4");
  EXPECT_EQ(error_of(with("\"peer_recv_cq\": 1", "\"peer_recv_cq\": 3")), "qps[0].peer_recv_cq: host b has no CQ 3");
  EXPECT_EQ(error_of(with("\"entries\": 2", "\"entries\": 3")), "hosts[0].cqs[0].entries: must be a power of two from 2 to 65536");
  EXPECT_EQ(error_of(with("{\"id\": 3, \"entries\": 2}", "{\"id\": 3, \"entries\": 2}, {\"id\": 3, \"entries\": 4}")),
            "hosts[0].cqs[1].id: 3 names two CQs");
  EXPECT_EQ(error_of(with("{\"id\": 3, \"entries\": 2}", "{\"id\": 3, \"size\": 2}")), "hosts[0].cqs[0].size: unknown key");
  EXPECT_EQ(error_of(with("\"sq_wqebbs\": 32", "\"sq_wqebbs\": 48")), "qps[0].sq_wqebbs: must be a power of two from 1 to 8192");
  EXPECT_EQ(error_of(with("\"peer_rq_stride\": 64", "\"peer_rq_stride\": 4096")), "qps[0].peer_rq_stride: must be at most 2048");
  for (const char* stride : {"48", "8"})
    EXPECT_EQ(error_of(with("\"peer_rq_stride\": 64", std::string("\"peer_rq_stride\": ") + stride)),
              "qps[0].peer_rq_stride: must be a power of two from 16 to 2048") << stride;
  EXPECT_EQ(error_of(with("\"rnr_naks\": 1", "\"rnr_naks\": 1, \"nacks\": 2")),
            "qps[0].ops[0].captured_anomalies.nacks: unknown key");
  EXPECT_EQ(error_of(with("\"rnr_naks\": 1", "\"rnr_naks\": -1")),
            "qps[0].ops[0].captured_anomalies.rnr_naks: must be an unsigned integer");
  EXPECT_EQ(error_of(with("{\"resent_packets\": 16, \"rnr_naks\": 1}", "16")),
            "qps[0].ops[0].captured_anomalies: must be an object");
  EXPECT_EQ(error_of(with("\"ip\": \"fe80::2\"", "\"ip\": \"10.0.0.1\"")), "hosts[2].ip: \"10.0.0.1\" is also a's");
  EXPECT_EQ(error_of(with("{\"host\": \"b\", \"peer\": \"a\"", "{\"host\": \"b\", \"peer\": \"c\"")),
            "qps[1]: b has an IPv4 address and c an IPv6 one (a QP's ends use one family)");
  EXPECT_EQ(error_of(with("\"service\": \"rc\"", "\"service\": \"rc\", \"connection_setup\": true")),
            "qps[0].connection_setup: only a ud QP carries connection set-up MADs");
  EXPECT_EQ(error_of(with("\"service\": \"rc\"", "\"service\": \"rc\", \"connection_setup\": 1")),
            "qps[0].connection_setup: must be true or false");
  EXPECT_EQ(error_of(with("\"mac\": \"02:00:00:00:00:0a\"", "\"mac\": \"03:00:00:00:00:0a\"")),
            "hosts[0].mac: \"03:00:00:00:00:0a\" is a group address, not a host's");
}

TEST(Workload, ACaptureLowersToOperationsAtTheirTimes) {
  Reconstruction c;
  c.hosts = {{transport::gid_from_ipv4(0x0a000001), {2, 0, 0, 0, 0, 1}, "h0"},
             {transport::gid_from_ipv4(0x0a000002), {2, 0, 0, 0, 0, 2}, "h1"}};
  c.queue_pairs = {{.host = 0, .peer_host = 1, .qpn = 5, .peer_qpn = 6, .service = Service::kRc, .mtu = 1000}};
  Message first;
  first.kind = MessageKind::kWrite;
  first.bytes = 4096;
  first.first_ns = 100;
  first.done_ns = 900;
  first.retransmitted = 2;
  first.rnr_naks = 1;
  Message second = first;
  second.retransmitted = second.rnr_naks = 0;
  second.kind = MessageKind::kSendImm;
  second.immediate = 3;
  second.first_ns = 1000;
  c.messages = {first, second};
  const Workload w = lower(c);
  ASSERT_EQ(w.qps.size(), 1u);
  EXPECT_EQ(w.qps[0].mtu, 1024u) << "rounded up to an IB MTU";
  ASSERT_EQ(w.qps[0].ops.size(), 2u);
  EXPECT_EQ(w.qps[0].ops[0].post_ps, 100000u);
  EXPECT_EQ(w.qps[0].ops[1].think_ps, 100000u) << "after the first completed at 900";
  EXPECT_EQ(w.qps[0].ops[0].captured_anomalies, (CapturedAnomalies{.resent_packets = 2, .rnr_naks = 1}));
  EXPECT_FALSE(w.qps[0].ops[1].captured_anomalies.any());
  std::string error;
  EXPECT_TRUE(parse_workload(workload_json(w), &error)) << error;
  // With the run's latency trace: its doorbell and CQE times to the picosecond.
  c.messages[0].doorbell_ps = 99'052;
  c.messages[0].cqe_ps = 700'010;
  c.messages[1].doorbell_ps = 700'062;
  const Workload traced = lower(c);
  EXPECT_EQ(traced.qps[0].ops[0].post_ps, 99'052u);
  EXPECT_EQ(traced.qps[0].ops[1].post_ps, 700'062u);
  EXPECT_EQ(traced.qps[0].ops[1].think_ps, 52u) << "after the CQE the trace saw";
}

}  // namespace
}  // namespace hcaemu::replay
