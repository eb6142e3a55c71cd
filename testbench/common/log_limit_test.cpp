// The log limiter: a burst, then powers of two, each saying how many were passed over; bounded
// output for unbounded input (issue 14: a hostile guest must not flood the log).
#include "common/log_limit.h"

#include <gtest/gtest.h>

#include <vector>

namespace hcaemu {
namespace {

TEST(LogLimiter, BurstThenPowersOfTwoWithTheSkippedCount) {
  LogLimiter limiter;
  std::vector<uint64_t> logged, skipped_counts;
  for (uint64_t i = 1; i <= 100; ++i) {
    uint64_t skipped = 0;
    if (limiter.allow(skipped)) {
      logged.push_back(i);
      skipped_counts.push_back(skipped);
    }
  }
  EXPECT_EQ(logged, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64}));
  EXPECT_EQ(skipped_counts, (std::vector<uint64_t>{0, 0, 0, 0, 0, 0, 0, 0, 7, 15, 31}));
  EXPECT_EQ(limiter.seen(), 100u);
  LogLimiter flood;
  uint64_t lines = 0;
  for (uint64_t i = 0; i < 1'000'000; ++i) lines += flood.allow();
  EXPECT_EQ(lines, 8u + 16u) << "a million events, 24 lines (8, then 2^4 .. 2^19)";
}

}  // namespace
}  // namespace hcaemu
