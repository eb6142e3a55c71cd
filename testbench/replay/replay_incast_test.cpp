// Four senders WRITE to one host through the replay's switch: the port toward the receiver is the
// bottleneck (busy nearly all the run, its queue holding what the senders have in flight), the
// receiver's payload rate stays under the link rate, and the ports toward the senders carry only
// ACKs. Without a switch model the four would have reached the receiver at four times the rate.
#include <gtest/gtest.h>

#include <systemc>

#include "replay/replayer.h"
#include "testbench/replay/incast_workload.h"

namespace hcaemu::replay {
namespace {

TEST(ReplayIncast, TheReceiversPortIsTheBottleneckAndQueues) {
  const std::string json = incast_workload_json(4, 32, 65536);
  std::string error;
  const auto w = parse_workload(json, &error);
  ASSERT_TRUE(w) << error;
  ReplayOptions o;
  o.timing = TimingMode::kAsap;
  o.max_outstanding = 8;
  const auto r = replay(*w, o, &error);
  ASSERT_TRUE(r) << error;
  ASSERT_EQ(r->incomplete, 0u);
  const auto link = [&](const std::string& name) -> const fabric::LinkStats& {
    for (const fabric::LinkStats& l : r->links)
      if (l.name == name) return l;
    ADD_FAILURE() << "no link " << name;
    return r->links.front();
  };
  const fabric::LinkStats& receiver = link("switch0->host4");
  EXPECT_GT(double(receiver.busy_ps), 0.9 * double(r->end_ps)) << "the receiver's port sends nearly all the time";
  EXPECT_GT(receiver.max_queue_frames, 100u) << "frames of four senders queue toward one host";
  EXPECT_LE(receiver.max_queue_bytes, uint64_t(4 * 8 * 65536 + 4 * 8 * 4200)) << "never more than is in flight";
  for (int i = 0; i < 4; ++i)
    EXPECT_LT(link("switch0->host" + std::to_string(i)).max_queue_frames, 4u) << "sender " << i << " gets only ACKs";
  EXPECT_EQ(r->network.drops, 0u);
  // The port's timeline adds up to what it sent, and no bin carries more than the link can.
  uint64_t total = 0;
  for (const auto& [bin, b] : receiver.timeline) {
    total += b.bytes;
    const double bin_gbps = double(b.bytes) * 8 / (double(o.bin_ps) / 1e12) / 1e9;
    EXPECT_LT(bin_gbps, 1.05 * o.preset.link_gbps) << "bin " << bin;  // a frame counts whole in the bin it ends
  }
  EXPECT_EQ(total, receiver.bytes);
  const double payload_gbps = 4.0 * 32 * 65536 * 8 / (double(r->end_ps) / 1e12) / 1e9;
  EXPECT_LT(payload_gbps, o.preset.link_gbps) << "the receiver's link bounds what the four get through";
  EXPECT_GT(payload_gbps, 0.8 * o.preset.link_gbps) << "and the port is kept full";
}

}  // namespace
}  // namespace hcaemu::replay

int sc_main(int, char**) { return 0; }
