// DCQCN's reaction and notification points on their own (model/congestion/dcqcn.h): a CNP cuts the
// rate by alpha/2 at most once per monitor period, alpha decays without CNPs, the timer and the
// byte counter raise the rate back to the line rate, messages are paced at the current rate, and
// the receiver sends at most one CNP per QP per interval.
#include "model/congestion/dcqcn.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hcaemu::model {
namespace {

constexpr uint64_t kUs = 1'000'000;  // ps

DcqcnParameters connectx() {
  DcqcnParameters p;
  p.enabled = true;
  return p;
}

TEST(Dcqcn, FirstCnpHalvesTheRateAndTheNextWaitsForTheMonitorPeriod) {
  const DcqcnParameters p = connectx();
  ReactionPoint rp(p, 100.0);
  EXPECT_FALSE(rp.limited());
  EXPECT_EQ(rp.rate_gbps(0), 100.0);
  EXPECT_TRUE(rp.on_cnp(10 * kUs));
  EXPECT_TRUE(rp.limited());
  EXPECT_NEAR(rp.rate_gbps(10 * kUs), 100.0 * (1 - 1023.0 / 2048.0), 1e-9);  // alpha 1023/1024, gd 11: /2
  EXPECT_FALSE(rp.on_cnp(12 * kUs)) << "within rate_reduce_monitor_period (4 us)";
  const double before = rp.rate_gbps(15 * kUs);
  EXPECT_TRUE(rp.on_cnp(15 * kUs));
  EXPECT_LT(rp.rate_gbps(15 * kUs), before);
  EXPECT_GE(rp.rate_gbps(15 * kUs), before * 0.5) << "rpg_min_dec_fac: one cut keeps at least half";
}

TEST(Dcqcn, AlphaDecaysWithoutCnps) {
  const DcqcnParameters p = connectx();
  ReactionPoint rp(p, 100.0);
  rp.on_cnp(0);
  rp.rate_gbps(1 * kUs);  // the first period had the CNP: alpha up
  const double a1 = rp.alpha();
  EXPECT_NEAR(a1, 1019.0 / 1024 * 1023.0 / 1024 + 5.0 / 1024, 1e-12);
  rp.rate_gbps(101 * kUs);  // 100 periods without one
  EXPECT_NEAR(rp.alpha(), a1 * std::pow(1019.0 / 1024, 100), 1e-9);
}

TEST(Dcqcn, TimerAndByteCounterBringTheRateBack) {
  DcqcnParameters p = connectx();
  ReactionPoint rp(p, 100.0);
  rp.on_cnp(0);
  const double cut = rp.rate_gbps(0);
  // One message of the byte counter's size: one increase, half way back to the target.
  rp.on_sent(p.rpg_byte_reset, 1 * kUs);
  EXPECT_GT(rp.rate_gbps(1 * kUs), cut);
  // Long enough without CNPs: the limit is gone.
  EXPECT_EQ(rp.rate_gbps(1'000'000 * kUs), 100.0);
  EXPECT_FALSE(rp.limited());
}

TEST(Dcqcn, MessagesArePacedAtTheCurrentRate) {
  const DcqcnParameters p = connectx();
  ReactionPoint rp(p, 100.0);
  EXPECT_EQ(rp.next_send_ps(0), 0u) << "no CNP yet: no limit";
  rp.on_cnp(0);
  const double rate = rp.rate_gbps(0);
  rp.on_sent(10'000, 0);  // below the byte counter: no increase
  const uint64_t expected = uint64_t(std::llround(10'000 * 8000.0 / rate));
  EXPECT_EQ(rp.next_send_ps(0), expected);
}

TEST(Dcqcn, OneCnpPerQpPerInterval) {
  const DcqcnParameters p = connectx();
  NotificationPoint np;
  EXPECT_TRUE(np.should_notify(p, 0));
  EXPECT_FALSE(np.should_notify(p, 3 * kUs));
  EXPECT_TRUE(np.should_notify(p, 4 * kUs));
}

TEST(Dcqcn, ParametersByNameWithClearErrors) {
  DcqcnParameters p;
  std::string error;
  EXPECT_TRUE(set_dcqcn_parameter(p, "enabled", "true", &error));
  EXPECT_TRUE(p.enabled);
  EXPECT_TRUE(set_dcqcn_parameter(p, "rpg_ai_rate_mbps", "40", &error)) << error;
  EXPECT_EQ(p.rpg_ai_rate_mbps, 40.0);
  EXPECT_FALSE(set_dcqcn_parameter(p, "rpg_gd", "12", &error));
  EXPECT_EQ(error, "dcqcn.rpg_gd must be 10 or 11");
  EXPECT_FALSE(set_dcqcn_parameter(p, "dce_tcp_g", "1.5", &error));
  EXPECT_EQ(error, "dcqcn.dce_tcp_g: \"1.5\" is not a whole number, 0 or more");
  EXPECT_FALSE(set_dcqcn_parameter(p, "g", "1", &error));
  EXPECT_EQ(error, "unknown DCQCN parameter dcqcn.g");
}

}  // namespace
}  // namespace hcaemu::model
