// An 8-to-1 incast of 64 KiB WRITEs with DCQCN (the paper's parameters, ECN thresholds scaled to
// 100 Gb/s): the receiver answers marked packets with CNPs, the senders' rates come down from the
// line rate, the eight share the receiver's link roughly evenly and the switch queue stays below
// Kmax most of the time. The figures in docs/replay.md come from the same run (300 WRITEs each).
// How evenly they share over that short run depends on the first burst: the flows whose packets
// led the queue are cut less and stay ahead for milliseconds (additive increase is slow, CNPs come
// about once a QP per millisecond), so its shares are held to a fairness index; over a longer run
// they converge to within 10% of the fair share.
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "replay/replayer.h"
#include "testbench/replay/incast_workload.h"

namespace hcaemu::replay {
namespace {

// Eight senders WRITE `messages` x 64 KiB each to a ninth through one 100 Gb/s switch that marks
// ECN between 12.5 KB and 500 KB (Kmin and Kmax scaled to 100 Gb/s), with DCQCN's `profile`.
struct IncastRun {
  std::optional<ReplayResult> result;
  std::string why;
  explicit operator bool() const { return result.has_value(); }
  const ReplayResult* operator->() const { return &*result; }
  const std::string& error() const { return why; }
};
IncastRun run_incast(int messages, const char* profile, uint64_t bin_us) {
  IncastRun run;
  const auto w = parse_workload(incast_workload_json(8, messages, 65536), &run.why);
  if (!w) return run;
  ReplayOptions o;
  o.timing = TimingMode::kAsap;
  o.dcqcn = *model::dcqcn_profile(profile);
  fabric::Topology t = fabric::single_switch(9, 100.0, 50.0);
  t.switch_config.ecn = {.enabled = true, .kmin_bytes = 12'500, .kmax_bytes = 500'000, .pmax = 0.01};
  o.topology = t;
  o.bin_ps = bin_us * 1'000'000;
  run.result = replay(*w, o, &run.why);
  return run;
}

TEST(ReplayDcqcn, EightSendersConvergeAndTheQueueStaysBelowKmax) {
  const auto r = run_incast(300, "paper", 100);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->incomplete, 0u);
  EXPECT_GT(r->cc.np_cnp_sent, 50u);
  EXPECT_GT(r->cc.rp_cnp_handled, 50u);
  EXPECT_EQ(r->network.drops, 0u);
  // Every sender was slowed below the line rate at some point.
  for (size_t qp = 0; qp < 8; ++qp) {
    double lowest = 100.0;
    for (const auto& [bin, b] : r->congestion[qp].timeline) lowest = std::min(lowest, b.rate_gbps);
    EXPECT_LT(lowest, 50.0) << "qp " << qp;
  }
  // Their shares of the receiver's link over the middle of the run: Jain's fairness index at least
  // 0.95 (measured 0.977-0.986 with seeds 0 and 2 to 4, 1.000 with seed 1) and none starved (each
  // at least 70% of the mean; measured 91-100%).
  std::vector<uint64_t> bytes(8, 0);
  const uint64_t from = r->end_ps / 4, to = 3 * r->end_ps / 4;
  for (const OpResult& op : r->ops)
    if (op.done_ps >= from && op.done_ps < to) bytes[op.qp] += op.bytes;
  const double mean = double(std::accumulate(bytes.begin(), bytes.end(), uint64_t(0))) / 8.0;
  ASSERT_GT(mean, 0);
  double squares = 0;
  for (size_t qp = 0; qp < 8; ++qp) {
    const double share = double(bytes[qp]) / mean;
    squares += share * share;
    EXPECT_GT(share, 0.7) << "qp " << qp;
  }
  EXPECT_GT(64.0 / (8.0 * squares), 0.95) << "Jain's index of the shares";
  // The queue toward the receiver: below Kmax in most bins.
  const fabric::LinkStats* port = nullptr;
  for (const fabric::LinkStats& l : r->links)
    if (l.name == "switch0->host8") port = &l;
  ASSERT_NE(port, nullptr);
  const size_t below = size_t(std::count_if(port->timeline.begin(), port->timeline.end(),
                                            [](const auto& b) { return b.second.max_queue_bytes < 500'000; }));
  EXPECT_GT(double(below), 0.8 * double(port->timeline.size()));
}

// Past the first burst's recovery the shares converge: from 20 ms of model time until the first
// sender is done (about 168 ms), each sender's share of the delivered bytes is within 10% of the
// fair share, the bound of the DCQCN paper's figures (measured 0.93-1.07 with seeds 1 to 8 but
// 6, which has one flow at 0.892; over 20 ms windows the shares still swing between 0.78 and 1.27). A run of 1,500 WRITEs is too short
// for this: a flow the first burst cut once more can still be at 0.79 of the mean at its end. When
// the rate limiter spaced whole messages the shares locked in at 0.80-1.19 of the mean.
TEST(ReplayDcqcn, OverALongRunTheSharesConvergeToTheFairShare) {
  const auto r = run_incast(4000, "paper", 1000);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->incomplete, 0u);
  std::vector<uint64_t> last_done(8, 0), bytes(8, 0);
  for (const OpResult& op : r->ops) last_done[op.qp] = std::max(last_done[op.qp], op.done_ps);
  const uint64_t from = 20'000'000'000, to = *std::min_element(last_done.begin(), last_done.end());
  ASSERT_GT(to, from + 100'000'000'000) << "a steady state of at least 100 ms";
  for (const OpResult& op : r->ops)
    if (op.done_ps >= from && op.done_ps < to) bytes[op.qp] += op.bytes;
  const double mean = double(std::accumulate(bytes.begin(), bytes.end(), uint64_t(0))) / 8.0;
  for (size_t qp = 0; qp < 8; ++qp) {
    EXPECT_GT(double(bytes[qp]) / mean, 0.90) << "qp " << qp;
    EXPECT_LT(double(bytes[qp]) / mean, 1.10) << "qp " << qp;
  }
}

// With ConnectX's firmware values (CNPs every 4 us, a cut every 4 us down to half each time) the
// first burst's backlog cuts every rate to the floor. When the limiter paced whole messages, each
// 64 KiB message still left as a burst at the line rate, the bursts kept the queue above Kmax and
// the rates at 1 Mb/s: no WRITE completed for 200 ms and the run stalled. Paced packet by packet,
// the queue drains, the rates climb back and every WRITE completes.
TEST(ReplayDcqcn, ConnectxValuesSlowTheIncastButNeverStallIt) {
  const auto r = run_incast(300, "connectx", 100);
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->stalled);
  EXPECT_EQ(r->incomplete, 0u);
  EXPECT_EQ(r->network.drops, 0u);
  EXPECT_GT(r->cc.rp_cnp_handled, 1000u) << "many cuts, at most one per QP every 4 us";
}

}  // namespace
}  // namespace hcaemu::replay

int sc_main(int, char**) { return 0; }
