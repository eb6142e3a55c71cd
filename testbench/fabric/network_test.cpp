// The switched network of hcareplay on its own: store-and-forward timing, queues under incast,
// RED marking of ECN-capable packets only, PFC pausing instead of dropping (and dropping without
// it), ECMP spreading by UDP source port, and frames nobody owns counted.
#include "fabric/network.h"

#include <array>

#include <gtest/gtest.h>

#include "common/endian.h"
#include "fabric/frame_fields.h"

namespace hcaemu::fabric {
namespace {

Mac host_mac(uint32_t h) { return {0x02, 0, 0, 0, 0, uint8_t(h + 1)}; }

// Ethernet + IPv4 + UDP to port 4791, `bytes` long in all.
std::vector<uint8_t> frame(uint32_t to, uint8_t ecn, uint16_t sport = 49152, size_t bytes = 1000) {
  std::vector<uint8_t> f(bytes, 0);
  const Mac dst = host_mac(to);
  std::copy(dst.begin(), dst.end(), f.begin());
  store_be16(&f[12], 0x0800);
  f[14] = 0x45;
  f[15] = uint8_t((26 << 2) | ecn);  // DSCP 26: priority 3
  store_be16(&f[16], uint16_t(bytes - 14));
  f[22] = 64;
  f[23] = 17;
  store_be16(&f[34], sport);
  store_be16(&f[36], 4791);
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += load_be16(&f[i]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  store_be16(&f[24], uint16_t(~sum));
  return f;
}

uint16_t ipv4_checksum_residue(const std::vector<uint8_t>& f) {
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += load_be16(&f[i]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

struct Arrival {
  uint32_t host;
  uint64_t at;
  std::vector<uint8_t> frame;
};

struct Harness {
  explicit Harness(const Topology& t, uint64_t bin_ps = 10'000'000) {
    std::vector<Mac> macs;
    for (uint32_t h = 0; h < t.hosts; ++h) macs.push_back(host_mac(h));
    net = std::make_unique<Network>(
        t, macs, 7, bin_ps,
        Network::Hooks{.deliver = [this](uint32_t h, std::vector<uint8_t>& f, uint64_t at) { arrivals.push_back({h, at, f}); },
                       .capture = [this](uint64_t, std::span<const uint8_t> f) { captured.emplace_back(f.begin(), f.end()); },
                       .taken = {}});
  }
  void drain() {
    while (auto next = net->next_event_ps()) net->run_until(*next);
  }
  // Hosts 0 and 1 each send `frames` 1000-byte frames to host 2 back to back at 100 Gb/s (two
  // into one: the port toward host 2 gets twice what it can send), `ecn` in their IP header and
  // a UDP source port each; then everything runs out.
  void incast(int frames, uint8_t ecn0 = 0, uint8_t ecn1 = 0) {
    for (int i = 0; i < frames; ++i) {
      net->send(0, frame(2, ecn0), uint64_t(i) * 81'920);
      net->send(1, frame(2, ecn1, 49153), uint64_t(i) * 81'920);
    }
    drain();
  }
  std::unique_ptr<Network> net;
  std::vector<Arrival> arrivals;
  std::vector<std::vector<uint8_t>> captured;
};

TEST(FabricNetwork, StoreAndForwardThroughOneSwitch) {
  Harness h(single_switch(2, 100.0, 100.0));
  h.net->send(0, frame(1, 0), 1'000'000);
  h.drain();
  ASSERT_EQ(h.arrivals.size(), 1u);
  EXPECT_EQ(h.arrivals[0].host, 1u);
  // 100 ns to the switch, 1024 bytes on the wire at 100 Gb/s (81.92 ns), 100 ns to the host.
  EXPECT_EQ(h.arrivals[0].at, 1'000'000u + 100'000 + 81'920 + 100'000);
}

// A frame goes to its host as soon as it is on its last link, stamped with its arrival: the run
// that put it there hands it over, and no event of the network is left for it.
TEST(FabricNetwork, AFrameOnItsLastLinkGoesToItsHostAtOnceWithItsArrivalTime) {
  Harness h(single_switch(2, 100.0, 100.0));
  h.net->send(0, frame(1, 0), 1'000'000);
  ASSERT_EQ(h.net->next_event_ps(), 1'100'000u) << "at the switch";
  h.net->run_until(1'100'000);  // the switch's port is free: the frame goes on at once
  ASSERT_EQ(h.arrivals.size(), 0u) << "still being sent by the switch";
  ASSERT_EQ(h.net->next_event_ps(), 1'181'920u) << "its last bit leaves the switch";
  h.net->run_until(1'181'920);
  ASSERT_EQ(h.arrivals.size(), 1u);
  EXPECT_EQ(h.arrivals[0].at, 1'281'920u) << "100 ns of propagation still ahead";
  EXPECT_EQ(h.net->next_event_ps(), std::nullopt);
  EXPECT_EQ(h.net->totals().frames_delivered, 1u);
}

TEST(FabricNetwork, IncastQueuesAtTheEgressPort) {
  Topology t = single_switch(3, 100.0, 0.0);
  t.switch_config.pfc.enabled = false;
  Harness h(t);
  h.incast(10);
  ASSERT_EQ(h.arrivals.size(), 20u);
  for (size_t i = 1; i < h.arrivals.size(); ++i) EXPECT_EQ(h.arrivals[i].at - h.arrivals[i - 1].at, 81'920u);
  const LinkStats& to_host2 = h.net->links()[5];  // links in order: h0-s, h1-s, h2-s; each two ways
  EXPECT_EQ(to_host2.name, "switch0->host2");
  EXPECT_EQ(to_host2.frames, 20u);
  EXPECT_GE(to_host2.max_queue_frames, 10u);
  EXPECT_EQ(h.net->totals().drops, 0u);
}

// Eight hosts send one frame each at the same picosecond, 200 times: the switch queues them in a
// seeded random order, not by host number (which made the last host's packets always find the
// longest queue and the most ECN marks in a synchronised incast).
TEST(FabricNetwork, FramesArrivingTogetherQueueInRandomOrder) {
  Topology t = single_switch(9, 100.0, 50.0);  // on the links together, at the switch together
  t.switch_config.pfc.enabled = false;
  Harness h(t);
  std::array<uint32_t, 8> first{};
  for (uint64_t round = 0; round < 200; ++round) {
    h.arrivals.clear();
    const uint64_t at = round * 1'000'000;
    for (uint32_t host = 0; host < 8; ++host) {
      std::vector<uint8_t> f = frame(8, 0, uint16_t(49152 + host));
      h.net->send(host, std::move(f), at);
    }
    h.drain();
    ASSERT_EQ(h.arrivals.size(), 8u);
    ++first[load_be16(&h.arrivals[0].frame[34]) - 49152];
  }
  for (uint32_t host = 0; host < 8; ++host) {
    EXPECT_GT(first[host], 10u) << "host " << host << " is first in about 1 of 8 rounds";
    EXPECT_LT(first[host], 45u) << "host " << host;
  }
}

TEST(FabricNetwork, RedMarksOnlyEcnCapablePacketsAboveKmin) {
  Topology t = single_switch(3, 100.0, 0.0);
  t.switch_config.ecn = {.enabled = true, .kmin_bytes = 2000, .kmax_bytes = 4000, .pmax = 0.5};
  t.switch_config.pfc.enabled = false;
  Harness h(t);
  h.incast(20, 2, 0);  // host 0's ECT(0), host 1's not ECN-capable
  size_t marked = 0;
  for (const Arrival& a : h.arrivals) {
    const uint8_t ecn = a.frame[15] & 3;
    if (ecn == 3) ++marked;
    EXPECT_EQ(ipv4_checksum_residue(a.frame), 0u) << "checksum must stay right after marking";  // sum over a valid header is 0
  }
  EXPECT_GT(marked, 3u);  // the queue passes Kmax (4000 bytes) quickly: marked for sure beyond it
  EXPECT_LT(marked, 20u);
  EXPECT_EQ(h.net->totals().ecn_marks, marked);
  for (const Arrival& a : h.arrivals)
    if (load_be16(&a.frame[34]) == 49153) {
      EXPECT_EQ(a.frame[15] & 3, 0) << "not ECN-capable: never marked";
    }
}

TEST(FabricNetwork, PfcPausesTheSendersInsteadOfDropping) {
  Topology t = single_switch(3, 100.0, 100.0);
  t.switch_config.buffer_bytes = 20'000;
  t.switch_config.shared_buffer = true;
  t.switch_config.pfc = {.enabled = true, .xoff_bytes = 5'000, .xon_bytes = 3'000, .pause_quanta = 0xffff, .priorities = 0xff};
  Harness h(t);
  h.incast(100);
  EXPECT_EQ(h.arrivals.size(), 200u) << "lossless: every frame arrives";
  EXPECT_EQ(h.net->totals().drops, 0u);
  EXPECT_GT(h.net->totals().pause_frames, 0u);
  ASSERT_FALSE(h.captured.empty());
  EXPECT_TRUE(is_pfc_frame(h.captured.front()));
  EXPECT_EQ(load_be16(&h.captured.front()[16]), 1u << 3) << "the pause names the frames' priority";
  uint64_t paused = 0;
  for (const LinkStats& s : h.net->links()) paused += s.paused_ps;
  EXPECT_GT(paused, 0u);
  // Every pause was resumed: the last PFC frame of each sender's port carries quanta 0.
  EXPECT_EQ(load_be16(&h.captured.back()[18 + 2 * 3]), 0u);
}

TEST(FabricNetwork, WithoutPfcAFullBufferDrops) {
  Topology t = single_switch(3, 100.0, 100.0);
  t.switch_config.buffer_bytes = 20'000;
  t.switch_config.pfc.enabled = false;
  Harness h(t);
  h.incast(100);
  EXPECT_GT(h.net->totals().drops, 0u);
  EXPECT_EQ(h.arrivals.size() + h.net->totals().drops, 200u);
  EXPECT_EQ(h.net->totals().pause_frames, 0u);
  EXPECT_LE(h.net->links()[5].max_queue_bytes, 20'000u);
}

TEST(FabricNetwork, EcmpSpreadsBySourcePortAndKeepsAFlowOnOnePath) {
  Harness h(leaf_spine(2, 2, 1, 100.0, 100.0, 0.0));
  for (uint16_t sport = 49152; sport < 49152 + 64; ++sport) h.net->send(0, frame(1, 0, sport), 0);
  h.drain();
  EXPECT_EQ(h.arrivals.size(), 64u);
  uint64_t via_spine0 = 0, via_spine1 = 0;
  for (const LinkStats& s : h.net->links()) {
    if (s.name == "leaf0->spine0") via_spine0 = s.frames;
    if (s.name == "leaf0->spine1") via_spine1 = s.frames;
  }
  EXPECT_EQ(via_spine0 + via_spine1, 64u);
  EXPECT_GT(via_spine0, 16u);
  EXPECT_GT(via_spine1, 16u);
  Harness again(leaf_spine(2, 2, 1, 100.0, 100.0, 0.0));
  for (int i = 0; i < 10; ++i) again.net->send(0, frame(1, 0, 50000), uint64_t(i) * 100'000);
  again.drain();
  uint64_t a = 0, b = 0;
  for (const LinkStats& s : again.net->links()) {
    if (s.name == "leaf0->spine0") a = s.frames;
    if (s.name == "leaf0->spine1") b = s.frames;
  }
  EXPECT_TRUE((a == 10 && b == 0) || (a == 0 && b == 10)) << "one flow, one path";
}

TEST(FabricNetwork, FramesToNobodyAreCounted) {
  Harness h(single_switch(2, 100.0, 100.0));
  h.net->send(0, frame(7, 0), 0);
  h.net->send(0, std::vector<uint8_t>(5, 0), 0);
  h.drain();
  EXPECT_TRUE(h.arrivals.empty());
  EXPECT_EQ(h.net->totals().unroutable, 2u);
}

TEST(FabricNetwork, TheSameInputGivesTheSameMarks) {
  const auto run = [] {
    Topology t = single_switch(3, 100.0, 0.0);
    t.switch_config.ecn = {.enabled = true, .kmin_bytes = 1000, .kmax_bytes = 50000, .pmax = 0.3};
    Harness h(t);
    h.incast(200, 2, 2);
    std::vector<uint8_t> marks;
    for (const Arrival& a : h.arrivals) marks.push_back(a.frame[15] & 3);
    return marks;
  };
  EXPECT_EQ(run(), run());
}

// A host running ahead of the network hands its frame in early (send_at): the network takes it at
// its time, after its own events of that time, as send() then would, and tells the caller.
TEST(FabricNetwork, AFrameHandedInAheadIsTakenAtItsTime) {
  Harness h(single_switch(2, 100.0, 100.0));
  std::vector<std::pair<uint32_t, uint64_t>> taken;
  h.net = std::make_unique<Network>(
      single_switch(2, 100.0, 100.0), std::vector<Mac>{host_mac(0), host_mac(1)}, 7, 10'000'000,
      Network::Hooks{.deliver = [&](uint32_t host, std::vector<uint8_t>& f, uint64_t at) { h.arrivals.push_back({host, at, f}); },
                     .capture = {},
                     .taken = [&](uint32_t host, std::span<const uint8_t>, uint64_t at) { taken.push_back({host, at}); }});
  h.net->send_at(0, frame(1, 0), 1'000'000);
  EXPECT_EQ(h.net->next_event_ps(), 1'000'000u);
  EXPECT_EQ(h.net->next_handed_in_ps(), 1'000'000u);
  EXPECT_EQ(h.net->next_own_event_ps(), std::nullopt);
  h.net->run_until(999'999);
  EXPECT_TRUE(taken.empty()) << "not before its time";
  h.drain();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0], std::make_pair(0u, uint64_t(1'000'000)));
  ASSERT_EQ(h.arrivals.size(), 1u);
  EXPECT_EQ(h.arrivals[0].at, 1'000'000u + 100'000 + 81'920 + 100'000) << "timed as send() at that time";
  EXPECT_EQ(h.net->totals().frames_in, 1u);
}

// Frames handed in for one picosecond go host by host whatever the order they came in, and the
// switch's turns for frames arriving together are drawn from the time and the link, not from the
// order the network happened to be handed them: the result does not depend on which host's thread
// ran first.
TEST(FabricNetwork, FramesOfOneTimeDoNotDependOnTheOrderTheyWereHandedIn) {
  Topology t = single_switch(9, 100.0, 50.0);
  t.switch_config.pfc.enabled = false;
  const auto run = [&](bool reversed, bool handed_in) {
    Harness h(t);
    for (uint64_t round = 0; round < 20; ++round)
      for (uint32_t i = 0; i < 8; ++i) {
        const uint32_t host = reversed ? 7 - i : i;
        if (handed_in)
          h.net->send_at(host, frame(8, 0, uint16_t(49152 + host)), round * 1'000'000);
        else
          h.net->send(host, frame(8, 0, uint16_t(49152 + host)), round * 1'000'000);
      }
    h.drain();
    std::vector<uint16_t> order;
    for (const Arrival& a : h.arrivals) order.push_back(load_be16(&a.frame[34]));
    return order;
  };
  const std::vector<uint16_t> in_host_order = run(false, false);
  ASSERT_EQ(in_host_order.size(), 160u);
  EXPECT_EQ(in_host_order, run(true, false)) << "taken in the other order";
  EXPECT_EQ(in_host_order, run(true, true)) << "handed in, in the other order";
}

// How long a lazy caller may leave a handed-in frame: one host link more when the hosts' links end
// at switches, nothing more when hosts are linked to each other.
TEST(FabricNetwork, AHandedInFrameMayWaitOneHostLinkWhenHostsHangOffSwitches) {
  EXPECT_EQ(Harness(single_switch(3, 100.0, 250.0)).net->handed_in_grace_ps(), 250'000u);
  EXPECT_EQ(Harness(direct(2, 100.0, 250.0)).net->handed_in_grace_ps(), 0u);
}

}  // namespace
}  // namespace hcaemu::fabric
