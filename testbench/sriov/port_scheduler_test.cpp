// The port's transmit scheduler among the vports (sriov/port_scheduler.h): VFs sending at once get
// their max_tx_rate caps and their min_tx_rate weights' shares of the port in model time, the port
// stays work conserving, and with QoS off every function keeps the full port rate as before.
#include "sriov/port_scheduler.h"

#include <gtest/gtest.h>

#include <map>

namespace hcaemu::sriov {
namespace {

constexpr size_t kWireBytes = 1024 + 78 + 24;  // a 1 KiB RoCE payload with its headers, on the wire

// Saturating senders, one frame at a time in model-time order, as the functions' engines would:
// the Gb/s each vport got between `from_ps` and `until_ps`.
std::map<uint16_t, double> saturate(PortScheduler& port, const std::vector<uint16_t>& vports, uint64_t until_ps,
                                    uint64_t from_ps = 0, std::map<uint16_t, std::vector<uint8_t>> frames = {}) {
  std::map<uint16_t, uint64_t> clock, counted;
  for (uint16_t v : vports) {
    clock[v] = 0;
    frames.try_emplace(v, std::vector<uint8_t>(64, 0));
  }
  for (;;) {
    auto next = std::min_element(clock.begin(), clock.end(), [](auto& a, auto& b) { return a.second < b.second; });
    if (next->second >= until_ps) break;
    next->second = port.serialised_ps(next->first, frames.at(next->first), kWireBytes, next->second);
    if (next->second > from_ps && next->second <= until_ps) counted[next->first] += kWireBytes;
  }
  std::map<uint16_t, double> gbps;
  for (uint16_t v : vports) gbps[v] = double(counted[v]) * 8.0 / (double(until_ps - from_ps) / 1000.0);
  return gbps;
}

constexpr uint64_t kMs = 1'000'000'000;

TEST(PortScheduler, MaxRatesCapTwoVfsSendingAtOnce) {
  PortScheduler port(100);
  port.set_qos(1, {.max_tx_rate_mbps = 10000});
  port.set_qos(2, {.max_tx_rate_mbps = 30000});
  const auto got = saturate(port, {1, 2}, kMs);
  EXPECT_NEAR(got.at(1), 10.0, 10.0 * 0.05);
  EXPECT_NEAR(got.at(2), 30.0, 30.0 * 0.05);
}

TEST(PortScheduler, MinRatesShareAFullPortByTheirWeights) {
  PortScheduler port(100);
  port.set_qos(1, {.min_tx_rate_mbps = 10000});
  port.set_qos(2, {.min_tx_rate_mbps = 30000});
  const auto got = saturate(port, {1, 2}, kMs);
  EXPECT_NEAR(got.at(1), 25.0, 25.0 * 0.05) << "weights 1:3 of 100 Gb/s";
  EXPECT_NEAR(got.at(2), 75.0, 75.0 * 0.05);
  EXPECT_NEAR(got.at(2) / got.at(1), 3.0, 3.0 * 0.05);
}

TEST(PortScheduler, ACappedVportLeavesItsShareToTheOthers) {
  PortScheduler port(100);
  port.set_qos(1, {.min_tx_rate_mbps = 10000});
  port.set_qos(2, {.max_tx_rate_mbps = 50000, .min_tx_rate_mbps = 30000});
  const auto got = saturate(port, {1, 2}, kMs);
  EXPECT_NEAR(got.at(2), 50.0, 50.0 * 0.05) << "its 75 Gb/s share is capped at 50";
  EXPECT_NEAR(got.at(1), 50.0, 50.0 * 0.05) << "and the other takes the rest";
}

TEST(PortScheduler, AVportAloneGetsThePortAndOneThatStopsLosesItsShare) {
  PortScheduler port(100);
  port.set_qos(1, {.min_tx_rate_mbps = 10000});
  port.set_qos(2, {.min_tx_rate_mbps = 30000});
  EXPECT_NEAR(saturate(port, {1}, kMs).at(1), 100.0, 5.0) << "work conserving";
  // Vport 2 sent until 1 ms; 20 us after it stopped, vport 1 has the whole port again.
  PortScheduler later(100);
  later.set_qos(1, {.min_tx_rate_mbps = 10000});
  later.set_qos(2, {.min_tx_rate_mbps = 30000});
  saturate(later, {1, 2}, kMs);
  EXPECT_NEAR(later.rate_gbps(1, 0, kMs + PortScheduler::kActivityWindowPs / 2), 25.0, 0.1);
  EXPECT_NEAR(later.rate_gbps(1, 0, kMs + 2 * PortScheduler::kActivityWindowPs), 100.0, 0.1);
}

TEST(PortScheduler, WithoutQosEveryVportKeepsTheFullRate) {
  PortScheduler port(100);
  EXPECT_FALSE(port.enabled());
  EXPECT_DOUBLE_EQ(port.rate_gbps(1, 0, 0), 100.0);
  port.set_qos(3, {.max_tx_rate_mbps = 1000});
  EXPECT_TRUE(port.enabled());
  port.set_qos(3, {});
  EXPECT_FALSE(port.enabled()) << "cleared again";
}

// RoCE v2 frames with DSCP `dscp` (IPv4) or PCP `pcp` (an 802.1Q tag), the rest zero.
std::vector<uint8_t> ipv4_frame(uint8_t dscp) {
  std::vector<uint8_t> f(64, 0);
  f[12] = 0x08;
  f[14] = 0x45;
  f[15] = uint8_t(dscp << 2);
  return f;
}
std::vector<uint8_t> tagged_frame(uint8_t pcp) {
  std::vector<uint8_t> f(68, 0);
  f[12] = 0x81;
  f[14] = uint8_t(pcp << 5);
  f[16] = 0x08;
  f[18] = 0x45;
  return f;
}

TEST(PortScheduler, TrafficClassesComeFromPcpOrDscpAsTrusted) {
  PortScheduler port(100);
  PortTcConfig tc;
  tc.prio_tc = {0, 1, 2, 3, 4, 5, 6, 7};
  port.set_tc_config(tc);
  EXPECT_TRUE(port.enabled());
  EXPECT_EQ(port.traffic_class(tagged_frame(5)), 5);
  EXPECT_EQ(port.traffic_class(ipv4_frame(26)), 0) << "PCP trusted: an untagged frame is priority 0";
  tc.trust_dscp = true;
  port.set_tc_config(tc);
  EXPECT_EQ(port.traffic_class(ipv4_frame(26)), 3) << "DSCP 26 (AF31) is priority 3";
  EXPECT_EQ(port.traffic_class(std::vector<uint8_t>(10, 0xff)), 0) << "a runt is priority 0";
}

TEST(PortScheduler, EtsClassesShareThePortByTheirPercentages) {
  PortScheduler port(100);
  PortTcConfig tc;
  tc.trust_dscp = true;
  tc.prio_tc = {0, 0, 0, 1, 0, 0, 0, 0};  // priority 3 (DSCP 24..31) in class 1
  tc.tcbw = {30, 70, 0, 0, 0, 0, 0, 0};
  port.set_tc_config(tc);
  const auto got = saturate(port, {1, 2}, kMs, 0, {{1, ipv4_frame(0)}, {2, ipv4_frame(26)}});
  EXPECT_NEAR(got.at(1), 30.0, 30.0 * 0.05);
  EXPECT_NEAR(got.at(2), 70.0, 70.0 * 0.05);
}

TEST(PortScheduler, AStrictClassGoesFirstAndTheOthersGetWhatItLeaves) {
  PortScheduler port(100);
  PortTcConfig tc;
  tc.prio_tc = {0, 0, 0, 0, 0, 1, 0, 0};  // PCP 5 in class 1, strict
  tc.tsa[1] = PortTcConfig::Tsa::kStrict;
  port.set_tc_config(tc);
  port.set_qos(2, {.max_tx_rate_mbps = 40000});
  // The strict class's vport is capped at 40 Gb/s: the ETS class gets the other 60.
  auto got = saturate(port, {1, 2}, kMs, 0, {{1, tagged_frame(0)}, {2, tagged_frame(5)}});
  EXPECT_NEAR(got.at(2), 40.0, 40.0 * 0.05);
  EXPECT_NEAR(got.at(1), 60.0, 60.0 * 0.05);
  // Uncapped, the strict class takes the port while it sends; the other waits for it.
  PortScheduler starving(100);
  starving.set_tc_config(tc);
  got = saturate(starving, {1, 2}, kMs, 0, {{1, tagged_frame(0)}, {2, tagged_frame(5)}});
  EXPECT_GT(got.at(2), 95.0);
  EXPECT_LT(got.at(1), 5.0);
}

}  // namespace
}  // namespace hcaemu::sriov
