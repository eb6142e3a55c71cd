// The learning switch hcafabric runs (fabric/learning_switch.h), through forward() as the sockets
// drive it: learning, flooding, drops by cause, moves, ageing, links going down, the table's bound.
// The suite is named after the file so that `ctest -R learning_switch` finds it.
#include "fabric/learning_switch.h"

#include <gtest/gtest.h>

namespace hcaemu::fabric {
namespace {

using Ports = std::vector<size_t>;

constexpr uint64_t kSecond = 1'000'000'000;
const MacAddress kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

MacAddress station(uint32_t n) { return {0x02, 0x00, uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)}; }

std::vector<uint8_t> frame(const MacAddress& destination, const MacAddress& source, size_t size = 64) {
  std::vector<uint8_t> f(size);
  std::copy(destination.begin(), destination.end(), f.begin());
  std::copy(source.begin(), source.end(), f.begin() + 6);
  f[12] = 0x08;  // IPv4
  return f;
}

TEST(learning_switch, UnknownUnicastIsFloodedAndTheAnswerGoesOnlyToTheLearnedPort) {
  LearningSwitch sw(4);
  EXPECT_EQ(sw.forward(0, frame(station(2), station(1)), 0), (Ports{1, 2, 3}));
  EXPECT_EQ(sw.port_of(station(1), 0), 0u);
  EXPECT_EQ(sw.forward(2, frame(station(1), station(2)), 1), (Ports{0}));
  EXPECT_EQ(sw.forward(0, frame(station(2), station(1)), 2), (Ports{2})) << "both learned now";
  EXPECT_EQ(sw.counters().learned, 2u);
  EXPECT_EQ(sw.port_counters(0).flooded, 1u);
  EXPECT_EQ(sw.port_counters(0).rx_frames, 2u);
  EXPECT_EQ(sw.port_counters(0).rx_bytes, 128u);
  EXPECT_EQ(sw.port_counters(2).tx_frames, 2u);
  EXPECT_EQ(sw.port_counters(1).tx_frames, 1u);
  EXPECT_EQ(sw.port_counters(0).tx_frames, 1u);
}

TEST(learning_switch, BroadcastAndMulticastAreFloodedEvenToALearnedAddressesPort) {
  LearningSwitch sw(3);
  sw.forward(1, frame(kBroadcast, station(1)), 0);
  EXPECT_EQ(sw.forward(0, frame(kBroadcast, station(2)), 1), (Ports{1, 2}));
  const MacAddress ipv6_multicast = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
  EXPECT_EQ(sw.forward(2, frame(ipv6_multicast, station(3)), 2), (Ports{0, 1}));
  EXPECT_EQ(sw.port_counters(2).flooded, 1u);
}

TEST(learning_switch, AFrameForAnAddressOnItsOwnPortIsDroppedAndCounted) {
  LearningSwitch sw(3);
  sw.forward(1, frame(kBroadcast, station(1)), 0);
  sw.forward(1, frame(kBroadcast, station(2)), 0);  // two stations behind port 1 (a hub, a VM's host)
  EXPECT_EQ(sw.forward(1, frame(station(1), station(2)), 1), Ports{});
  EXPECT_EQ(sw.port_counters(1).dropped_same_port, 1u);
  EXPECT_EQ(sw.port_counters(0).tx_frames + sw.port_counters(2).tx_frames, 4u) << "only the two broadcasts";
}

TEST(learning_switch, AnAddressSeenOnAnotherPortMovesThere) {
  LearningSwitch sw(3);
  sw.forward(0, frame(kBroadcast, station(1)), 0);
  sw.forward(2, frame(kBroadcast, station(1)), 1);
  EXPECT_EQ(sw.counters().moved, 1u);
  EXPECT_EQ(sw.counters().learned, 1u);
  EXPECT_EQ(sw.port_of(station(1), 1), 2u);
  EXPECT_EQ(sw.forward(1, frame(station(1), station(9)), 2), (Ports{2}));
}

TEST(learning_switch, AnEntryAgesOutUnlessItsStationSendsAgain) {
  LearningSwitch sw(3);
  sw.forward(0, frame(kBroadcast, station(1)), 0);
  sw.forward(0, frame(kBroadcast, station(2)), 0);
  sw.forward(0, frame(kBroadcast, station(2)), 200 * kSecond);  // station 2 is heard again
  EXPECT_EQ(sw.forward(1, frame(station(1), station(9)), 299 * kSecond), (Ports{0})) << "299 s: still known";
  EXPECT_EQ(sw.forward(1, frame(station(1), station(9)), 300 * kSecond), (Ports{0, 2})) << "300 s: aged, flooded";
  EXPECT_EQ(sw.port_of(station(2), 300 * kSecond), 0u);
  EXPECT_EQ(sw.counters().aged, 1u);
  EXPECT_EQ(sw.table_size(), 2u) << "station 2 and station 9";

  LearningSwitch quick(2, {.ageing_ns = 10 * kSecond});
  quick.forward(0, frame(kBroadcast, station(1)), 0);
  EXPECT_EQ(quick.port_of(station(1), 9 * kSecond), 0u);
  EXPECT_EQ(quick.port_of(station(1), 10 * kSecond), std::nullopt);
  quick.set_ageing_ns(0);
  EXPECT_EQ(quick.port_of(station(1), 1000 * kSecond), 0u) << "0: never ages";
}

TEST(learning_switch, APortGoingDownForgetsItsAddressesAndIsNotFloodedTo) {
  LearningSwitch sw(3);
  sw.forward(1, frame(kBroadcast, station(1)), 0);
  sw.forward(1, frame(kBroadcast, station(2)), 0);
  sw.forward(2, frame(kBroadcast, station(3)), 0);
  EXPECT_EQ(sw.set_port_up(1, false), 2u);
  EXPECT_EQ(sw.counters().forgotten, 2u);
  EXPECT_EQ(sw.port_of(station(1), 1), std::nullopt);
  EXPECT_EQ(sw.forward(0, frame(station(1), station(4)), 1), (Ports{2})) << "unknown again, flooded but not to 1";
  EXPECT_EQ(sw.forward(0, frame(kBroadcast, station(4)), 1), (Ports{2}));
  EXPECT_EQ(sw.forward(1, frame(kBroadcast, station(5)), 1), Ports{});
  EXPECT_EQ(sw.port_counters(1).dropped_port_down, 1u);
  EXPECT_EQ(sw.port_of(station(5), 1), std::nullopt) << "nothing is learned on a down port";
  sw.set_port_up(1, true);
  EXPECT_EQ(sw.forward(0, frame(kBroadcast, station(4)), 2), (Ports{1, 2}));
}

TEST(learning_switch, AFullTableLearnsNoNewAddressesAndFloodsTheirFrames) {
  LearningSwitch sw(3, {.max_entries = 4});
  for (uint32_t n = 1; n <= 10; ++n) sw.forward(0, frame(kBroadcast, station(n)), 0);
  EXPECT_EQ(sw.table_size(), 4u);
  EXPECT_EQ(sw.counters().learned, 4u);
  EXPECT_EQ(sw.counters().table_full, 6u);
  EXPECT_EQ(sw.forward(1, frame(station(4), station(99)), 1), (Ports{0})) << "a learned address is still switched";
  EXPECT_EQ(sw.forward(1, frame(station(5), station(99)), 1), (Ports{0, 2})) << "one not learned is flooded";
  sw.forward(2, frame(kBroadcast, station(1)), 1);
  EXPECT_EQ(sw.port_of(station(1), 1), 2u) << "a known address still moves when the table is full";
  EXPECT_EQ(sw.forward(0, frame(kBroadcast, station(7)), 301 * kSecond), (Ports{1, 2}));
  EXPECT_EQ(sw.port_of(station(7), 301 * kSecond), 0u) << "aged entries make room";
}

TEST(learning_switch, RuntsAreDroppedAndCounted) {
  LearningSwitch sw(2);
  const auto whole = frame(kBroadcast, station(1), 64);
  EXPECT_EQ(sw.forward(0, std::span(whole).first(13), 0), Ports{});
  EXPECT_EQ(sw.forward(0, {}, 0), Ports{});
  EXPECT_EQ(sw.port_counters(0).dropped_runt, 2u);
  EXPECT_EQ(sw.table_size(), 0u);
  EXPECT_EQ(sw.forward(0, std::span(whole).first(14), 0), (Ports{1})) << "a bare header is a frame";
}

TEST(learning_switch, AGroupOrZeroSourceIsNeverLearnedAndItsFrameDropped) {
  LearningSwitch sw(3);
  const MacAddress multicast = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}, zero{};
  EXPECT_EQ(sw.forward(0, frame(station(1), multicast), 0), Ports{});
  EXPECT_EQ(sw.forward(0, frame(station(1), kBroadcast), 0), Ports{});
  EXPECT_EQ(sw.forward(0, frame(station(1), zero), 0), Ports{});
  EXPECT_EQ(sw.port_counters(0).dropped_bad_source, 3u);
  EXPECT_EQ(sw.table_size(), 0u);
  EXPECT_EQ(sw.forward(1, frame(multicast, station(2)), 1), (Ports{0, 2})) << "the group is still flooded to";
}

TEST(learning_switch, APortItLacksIsRefused) {
  LearningSwitch sw(2);
  EXPECT_THROW(sw.forward(2, frame(kBroadcast, station(1)), 0), std::out_of_range);
  EXPECT_THROW(sw.set_port_up(5, false), std::out_of_range);
}

}  // namespace
}  // namespace hcaemu::fabric
