// The link cost model against calibration.md's derived figures.
#include "pcie/link_timing.h"

#include <gtest/gtest.h>

using namespace hcaemu::pcie;

namespace {

LinkConfig x16(uint8_t gen) {
  LinkConfig c;
  c.gen = gen;
  c.width = 16;
  c.mps = 256;
  return c;
}

TEST(LinkTiming, RawAndTlpBandwidthMatchCalibration) {
  const LinkTiming g3(x16(3)), g4(x16(4)), g5(x16(5));
  EXPECT_NEAR(g3.raw_gbps(), 126.0, 0.1);
  EXPECT_NEAR(g4.raw_gbps(), 252.1, 0.1);
  EXPECT_NEAR(g5.raw_gbps(), 504.1, 0.1);
  EXPECT_NEAR(g3.tlp_gbps(), 113.7, 0.2);
  EXPECT_NEAR(g4.tlp_gbps(), 227.4, 0.3);
  EXPECT_NEAR(g5.tlp_gbps(), 454.8, 0.5);
}

TEST(LinkTiming, EffectiveDmaWriteBandwidth) {
  EXPECT_EQ(LinkTiming(x16(3)).mwr_overhead(), 24u);
  EXPECT_NEAR(LinkTiming(x16(3)).effective_write_gbps(), 104.0, 1.0);
  EXPECT_NEAR(LinkTiming(x16(4)).effective_write_gbps(), 208.0, 2.0);
  EXPECT_NEAR(LinkTiming(x16(5)).effective_write_gbps(), 416.0, 4.0);
}

TEST(LinkTiming, BulkWriteTimeGivesTheSameBandwidth) {
  LinkConfig c = x16(4);
  c.one_way_latency_ns = 0;
  const LinkTiming t(c);
  const uint64_t bytes = 64ull << 20;
  const double gbps = double(bytes) * 8 / t.dma_write_time(bytes).count();
  EXPECT_NEAR(gbps, 208.0, 2.0);
}

TEST(LinkTiming, Gen1And2Use8b10b) {
  LinkConfig c = x16(1);
  EXPECT_NEAR(LinkTiming(c).raw_gbps(), 32.0, 0.01);
  c.gen = 2;
  EXPECT_NEAR(LinkTiming(c).raw_gbps(), 64.0, 0.01);
}

TEST(LinkTiming, ReadsAreSlowerThanWrites) {
  const LinkTiming t(x16(3));
  EXPECT_LT(t.effective_read_gbps(), LinkTiming(x16(3)).tlp_gbps());
  EXPECT_GT(t.dma_read_time(4096).count(), t.dma_write_time(4096).count());
  LinkConfig rcb = x16(3);
  rcb.completions_in_rcb = true;
  EXPECT_LT(LinkTiming(rcb).effective_read_gbps(), t.effective_read_gbps()) << "64 B completions cost more";
}

TEST(LinkTiming, LatenciesMonotonicInSize) {
  const LinkTiming t(x16(3));
  double prev_w = 0, prev_r = 0, prev_mw = 0, prev_mr = 0;
  for (uint64_t n = 1; n <= (1u << 20); n *= 2) {
    EXPECT_GT(t.dma_write_time(n).count(), prev_w);
    EXPECT_GT(t.dma_read_time(n).count(), prev_r);
    prev_w = t.dma_write_time(n).count();
    prev_r = t.dma_read_time(n).count();
    if (n <= 4096) {
      EXPECT_GT(t.mmio_write_latency(uint32_t(n)).count(), prev_mw);
      EXPECT_GT(t.mmio_read_latency(uint32_t(n)).count(), prev_mr);
      prev_mw = t.mmio_write_latency(uint32_t(n)).count();
      prev_mr = t.mmio_read_latency(uint32_t(n)).count();
    }
  }
}

TEST(LinkTiming, FixedLatencyDominatesSmallAccesses) {
  const LinkTiming t(x16(3));
  EXPECT_NEAR(t.mmio_write_latency(4).count(), 500.0, 5.0);
  EXPECT_NEAR(t.mmio_read_latency(4).count(), 1000.0, 10.0);
  EXPECT_GT(t.mmio_read_latency(4).count(), 2 * 500.0);
  EXPECT_NEAR(t.config_access_latency().count(), 1000.0, 10.0);
  LinkConfig c = x16(3);
  c.one_way_latency_ns = 100;
  EXPECT_NEAR(LinkTiming(c).mmio_write_latency(4).count(), 100.0, 5.0);
}

TEST(LinkTiming, DllpOverrideAndValidation) {
  LinkConfig c = x16(3);
  c.dllp_overhead = 0;
  EXPECT_NEAR(LinkTiming(c).tlp_gbps(), LinkTiming(c).raw_gbps(), 1e-9);
  c.dllp_overhead = -1;
  c.width = 12;
  EXPECT_THROW(LinkTiming{c}, std::invalid_argument);
  c.width = 16;
  c.gen = 0;
  EXPECT_THROW(LinkTiming{c}, std::invalid_argument);
  c.gen = 3;
  c.mps = 100;
  EXPECT_THROW(LinkTiming{c}, std::invalid_argument);
}

}  // namespace

// A posted write occupies the DMA engine only while its TLPs serialise: the landing latency is not
// waited for (the RDMA responder used to serialise every packet behind it).
TEST(LinkTimingPosted, WriteOccupancyIsTheWriteTimeWithoutTheFlight) {
  LinkConfig config;
  config.gen = 4;
  config.width = 16;
  const LinkTiming t(config);
  for (uint64_t n : {8u, 64u, 1024u, 65536u}) {
    EXPECT_NEAR(t.dma_write_time(n).count() - t.dma_write_occupancy(n).count(), config.one_way_latency_ns, 1e-6);
    EXPECT_GT(t.dma_write_occupancy(n).count(), 0.0);
  }
}
