// A replay stops when operations are in flight and none completes for the stall limit, and
// reports them incomplete, instead of running for ever (RNR NAKs retried without end, say).
#include <gtest/gtest.h>

#include <systemc>

#include "replay/replayer.h"

namespace hcaemu::replay {
namespace {

TEST(ReplayStall, NoCompletionWithinTheLimitStopsTheRun) {
  std::string error;
  const auto w = parse_workload(R"({"format": "hcareplay-workload/1",
    "hosts": [{"name": "a", "ip": "10.0.0.1"}, {"name": "b", "ip": "10.0.0.2"}],
    "qps": [{"host": "a", "peer": "b", "service": "rc", "mtu": 4096,
             "ops": [{"op": "write", "bytes": 4194304}, {"op": "write", "bytes": 4194304}]}]})", &error);
  ASSERT_TRUE(w) << error;
  ReplayOptions o;
  o.stall_ps = 1'000'000;  // 1 us: far less than a 4 MiB WRITE takes
  const auto r = replay(*w, o, &error);
  ASSERT_TRUE(r) << error;
  EXPECT_TRUE(r->stalled);
  EXPECT_EQ(r->incomplete, 2u);
  EXPECT_LT(r->end_ps, 10'000'000u) << "stopped within the limit, not at the end of the work";
}

}  // namespace
}  // namespace hcaemu::replay

int sc_main(int, char**) { return 0; }
