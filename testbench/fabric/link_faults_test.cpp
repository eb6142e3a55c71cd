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

}  // namespace
}  // namespace hcaemu::fabric
