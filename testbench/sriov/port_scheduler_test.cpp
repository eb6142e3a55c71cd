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
                                    uint64_t from_ps = 0) {
  std::map<uint16_t, uint64_t> clock, counted;
  for (uint16_t v : vports) clock[v] = 0;
  for (;;) {
    auto next = std::min_element(clock.begin(), clock.end(), [](auto& a, auto& b) { return a.second < b.second; });
    if (next->second >= until_ps) break;
    next->second = port.serialised_ps(next->first, kWireBytes, next->second);
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
  EXPECT_NEAR(later.rate_gbps(1, kMs + PortScheduler::kActivityWindowPs / 2), 25.0, 0.1);
  EXPECT_NEAR(later.rate_gbps(1, kMs + 2 * PortScheduler::kActivityWindowPs), 100.0, 0.1);
}

TEST(PortScheduler, WithoutQosEveryVportKeepsTheFullRate) {
  PortScheduler port(100);
  EXPECT_FALSE(port.enabled());
  EXPECT_DOUBLE_EQ(port.rate_gbps(1, 0), 100.0);
  port.set_qos(3, {.max_tx_rate_mbps = 1000});
  EXPECT_TRUE(port.enabled());
  port.set_qos(3, {});
  EXPECT_FALSE(port.enabled()) << "cleared again";
}

}  // namespace
}  // namespace hcaemu::sriov
