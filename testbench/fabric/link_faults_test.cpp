// Faults on a link (fabric/link_faults.h): rates as configured, the same faults for the same seed,
// corruption past the headers only, and settings parsed or refused with the key named.
#include "fabric/link_faults.h"

#include <gtest/gtest.h>

namespace hcaemu::fabric {
namespace {

std::vector<uint8_t> frame(size_t size) {
  std::vector<uint8_t> f(size);
  for (size_t i = 0; i < size; ++i) f[i] = uint8_t(i * 7);
  return f;
}

TEST(LinkFaults, RatesFollowTheSettingsAndTheSeedFixesEveryFault) {
  LinkFaults a({.loss = 0.01, .corrupt = 0.001, .duplicate = 0.005, .seed = 7});
  LinkFaults b({.loss = 0.01, .corrupt = 0.001, .duplicate = 0.005, .seed = 7});
  const auto f = frame(1100);
  size_t delivered = 0;
  for (int i = 0; i < 200000; ++i) {
    const auto out_a = a.carry(f), out_b = b.carry(f);
    ASSERT_EQ(out_a, out_b) << "frame " << i;
    delivered += out_a.size();
    for (const auto& g : out_a) {
      ASSERT_EQ(g.size(), f.size());
      EXPECT_TRUE(std::equal(g.begin(), g.begin() + LinkFaults::kCorruptFrom, f.begin())) << "headers untouched";
    }
  }
  const LinkFaultCounters& c = a.counters();
  EXPECT_EQ(c.frames, 200000u);
  EXPECT_NEAR(double(c.lost), 2000, 200);
  EXPECT_NEAR(double(c.corrupted), 198, 60);
  EXPECT_NEAR(double(c.duplicated), 995, 120);
  EXPECT_EQ(delivered, c.frames - c.lost + c.duplicated);
  LinkFaults other({.loss = 0.01, .seed = 8});
  size_t differs = 0;
  LinkFaults again({.loss = 0.01, .seed = 7});
  for (int i = 0; i < 1000; ++i) differs += other.carry(f).size() != again.carry(f).size();
  EXPECT_GT(differs, 0u) << "another seed, other losses";
}

TEST(LinkFaults, ACorruptedFrameDiffersInExactlyOneBit) {
  LinkFaults l({.corrupt = 1, .seed = 3});
  const auto f = frame(200);
  for (int i = 0; i < 100; ++i) {
    const auto out = l.carry(f);
    ASSERT_EQ(out.size(), 1u);
    int bits = 0;
    for (size_t k = 0; k < f.size(); ++k) bits += __builtin_popcount(unsigned(out[0][k] ^ f[k]));
    EXPECT_EQ(bits, 1);
  }
  EXPECT_EQ(l.carry(frame(60)), std::vector<std::vector<uint8_t>>{frame(60)}) << "too short to hold a payload";
}

TEST(LinkFaults, SettingsParseOrNameWhatIsWrong) {
  std::string error;
  const auto s = parse_link_faults("loss=1%,corrupt=0.1%,duplicate=0.005,seed=42", error);
  ASSERT_TRUE(s) << error;
  EXPECT_DOUBLE_EQ(s->loss, 0.01);
  EXPECT_DOUBLE_EQ(s->corrupt, 0.001);
  EXPECT_DOUBLE_EQ(s->duplicate, 0.005);
  EXPECT_EQ(s->seed, 42u);
  for (const char* bad : {"loss", "loss=2", "loss=-1%", "loss=abc", "jitter=1", "seed=x", "corrupt=101%"}) {
    error.clear();
    EXPECT_FALSE(parse_link_faults(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(LinkFaults, TimesRatesAndReorderParseOverABase) {
  std::string error;
  const auto s = parse_link_faults("delay=100us,jitter=2ms,rate=10gbit,reorder=1%", error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->delay_ns, 100000u);
  EXPECT_EQ(s->jitter_ns, 2000000u);
  EXPECT_DOUBLE_EQ(s->rate_bps, 10e9);
  EXPECT_DOUBLE_EQ(s->reorder, 0.01);
  EXPECT_TRUE(s->shapes_time());
  const auto changed = parse_link_faults("loss=1%,rate=0", error, *s);
  ASSERT_TRUE(changed) << error;
  EXPECT_DOUBLE_EQ(changed->loss, 0.01);
  EXPECT_EQ(changed->delay_ns, 100000u) << "keys not named keep the base's values";
  EXPECT_DOUBLE_EQ(changed->rate_bps, 0);
  EXPECT_NE(changed->text().find("delay 100us"), std::string::npos) << changed->text();
  const auto cleared = parse_link_faults("delay=0,jitter=0", error, *s);
  ASSERT_TRUE(cleared) << "0 needs no unit: " << error;
  EXPECT_EQ(cleared->delay_ns, 0u);
  for (const char* bad : {"delay=11s", "delay=5", "delay=1xs", "rate=10qbit", "rate=100", "rate=20000gbit"}) {
    error.clear();
    EXPECT_FALSE(parse_link_faults(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(LinkFaults, AReorderedFrameGoesOutRightAfterTheNextOne) {
  LinkFaults l({.reorder = 1, .seed = 5});
  const std::vector<uint8_t> a(80, 1), b(80, 2), c(80, 3);
  EXPECT_TRUE(l.carry(a).empty()) << "held back";
  EXPECT_EQ(l.last_faults(), LinkFaults::kHeldBack);
  EXPECT_EQ(l.carry(b), (std::vector<std::vector<uint8_t>>{b, a})) << "the held frame follows the next one";
  EXPECT_TRUE(l.carry(c).empty()) << "and the one after is held in turn";
  l.reconfigure({.loss = 1, .seed = 5});
  EXPECT_EQ(l.carry(a), (std::vector<std::vector<uint8_t>>{c})) << "a lost frame still releases the held one";
  EXPECT_EQ(l.last_faults(), LinkFaults::kLost);
  EXPECT_EQ(l.counters().reordered, 2u);
  EXPECT_EQ(l.counters().lost, 1u);
  EXPECT_EQ(l.counters().frames, 4u) << "counts go on across reconfigure";
}

TEST(LinkShaper, TheRateSerialisesTheDelayAddsAndJitterNeverReorders) {
  LinkShaper rate({.rate_bps = 1e9});
  // 1480 + 20 bytes at 1 Gb/s: 12 us each, back to back from the first one's arrival.
  EXPECT_EQ(rate.release_ns(1000, 1480), 1000u + 12000u);
  EXPECT_EQ(rate.release_ns(1000, 1480), 1000u + 24000u);
  EXPECT_EQ(rate.release_ns(100000, 1480), 112000u) << "an idle wire starts again at the arrival";
  LinkShaper delay({.delay_ns = 50000});
  EXPECT_EQ(delay.release_ns(7, 100), 50007u);
  LinkShaper jitter({.delay_ns = 1000, .jitter_ns = 100000, .seed = 9});
  LinkShaper again({.delay_ns = 1000, .jitter_ns = 100000, .seed = 9});
  uint64_t last = 0;
  bool varied = false;
  for (uint64_t t = 0; t < 1000000; t += 1000) {
    const uint64_t r = jitter.release_ns(t, 64);
    EXPECT_EQ(r, again.release_ns(t, 64)) << "the same seed, the same times";
    EXPECT_GE(r, last) << "never before an earlier frame";
    EXPECT_GE(r, t + 1000);
    EXPECT_LT(r, t + 1000 + 100000 + 100000);
    varied = varied || (last != 0 && r - t != 1000);
    last = r;
  }
  EXPECT_TRUE(varied);
}

}  // namespace
}  // namespace hcaemu::fabric
