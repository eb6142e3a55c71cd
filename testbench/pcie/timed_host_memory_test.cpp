// TimedHostMemory's pipelined reads: the data moves at once and no model time is spent; the
// arrival time follows the link model (a lone read pays its round trip, reads issued together
// queue on the completion stream), and PipelinedReads keeps the latest arrival.
#include "pcie/timed_host_memory.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "testbench/host/sim_host_memory.h"

namespace hcaemu::pcie {
namespace {

constexpr uint64_t kBase = 0x10000;

uint64_t ps(Nanos t) { return uint64_t(t.count() * 1e3); }

struct Fixture {
  LinkConfig link{.gen = 4, .width = 16, .one_way_latency_ns = 250};
  testbench::SimHostMemory host{kBase, 1 << 20};
  TimedHostMemory dma{link};
  Fixture() { dma.attach(&host); }
};

TEST(TimedHostMemoryPipelined, LoneReadPaysItsRoundTripAndSpendsNoModelTime) {
  Fixture f;
  std::vector<uint8_t> src(1024);
  std::iota(src.begin(), src.end(), uint8_t(0));
  ASSERT_TRUE(f.host.write(kBase + 64, src));
  std::vector<uint8_t> dst(1024);
  uint64_t ready = 0;
  ASSERT_TRUE(f.dma.read_pipelined(kBase + 64, dst, 5'000'000, ready));
  EXPECT_EQ(dst, src);
  EXPECT_NEAR(double(ready), double(5'000'000 + ps(f.dma.timing().dma_read_time(1024))), 2.0);
  EXPECT_EQ(sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME);
}

TEST(TimedHostMemoryPipelined, ReadsIssuedTogetherQueueOnTheCompletionStream) {
  Fixture f;
  std::vector<uint8_t> dst(1024);
  const uint64_t stream = ps(f.dma.timing().serialize(f.dma.timing().completion_wire_bytes(1024)));
  uint64_t first = 0, second = 0, third = 0;
  ASSERT_TRUE(f.dma.read_pipelined(kBase, dst, 0, first));
  ASSERT_TRUE(f.dma.read_pipelined(kBase + 1024, dst, 0, second));
  ASSERT_TRUE(f.dma.read_pipelined(kBase + 2048, dst, 0, third));
  // The round trip is paid once; each later read arrives one completion-stream time after the last.
  EXPECT_NEAR(double(second - first), double(stream), 2.0);
  EXPECT_NEAR(double(third - second), double(stream), 2.0);
  // Once the stream is idle again a read pays its own round trip.
  uint64_t later = 0;
  ASSERT_TRUE(f.dma.read_pipelined(kBase, dst, 1'000'000'000, later));
  EXPECT_NEAR(double(later), double(1'000'000'000 + ps(f.dma.timing().dma_read_time(1024))), 2.0);
}

TEST(TimedHostMemoryPipelined, RefusedOutsideTheMappedRangeOrDetached) {
  Fixture f;
  std::vector<uint8_t> dst(64);
  uint64_t ready = 0;
  EXPECT_FALSE(f.dma.read_pipelined(kBase + (1 << 20) - 32, dst, 0, ready));
  EXPECT_FALSE(f.dma.read_pipelined(0x10, dst, 0, ready));
  TimedHostMemory detached{f.link};
  EXPECT_FALSE(detached.read_pipelined(kBase, dst, 0, ready));
  EXPECT_EQ(f.dma.refused(), 2u);
}

TEST(PipelinedReads, KeepsTheLatestArrivalAndPassesWritesThrough) {
  Fixture f;
  PipelinedReads reads(f.dma, 1000);
  EXPECT_EQ(reads.ready_ps(), 1000u);
  std::vector<uint8_t> dst(4096);
  ASSERT_TRUE(reads.read(kBase, std::span(dst).first(64)));
  const uint64_t after_small = reads.ready_ps();
  EXPECT_GT(after_small, 1000u);
  ASSERT_TRUE(reads.read(kBase, dst));
  EXPECT_GT(reads.ready_ps(), after_small);
  const std::vector<uint8_t> word{1, 2, 3, 4};
  ASSERT_TRUE(reads.write(kBase + 8, word));
  EXPECT_EQ(*f.host.at(kBase + 10), 3);
  EXPECT_FALSE(reads.read(0x10, std::span(dst).first(4)));
  // Without a link model (the base HostMemory) the data is there at the issue time.
  PipelinedReads untimed(f.host, 777);
  ASSERT_TRUE(untimed.read(kBase, dst));
  EXPECT_EQ(untimed.ready_ps(), 777u);
}

}  // namespace
}  // namespace hcaemu::pcie

// libsystemc references sc_main; GoogleTest provides main().
int sc_main(int, char**) { return 0; }
