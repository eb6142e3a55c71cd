// The embedded switch alone: forwarding by destination MAC, group frames to subscribers, drops and
// their counters.
#include "sriov/eswitch.h"

#include <gtest/gtest.h>

namespace hcaemu::sriov {
namespace {

std::vector<uint8_t> frame_to(const Mac& dst) {
  std::vector<uint8_t> f(60, 0);
  std::copy(dst.begin(), dst.end(), f.begin());
  return f;
}

constexpr Mac kBroadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr Mac kAllNodes{0x33, 0x33, 0, 0, 0, 1};

// Three vports whose drivers subscribed to broadcast and the IPv6 all-nodes group (what mlx5e
// programs once its netdev is open).
struct ThreeVports {
  Eswitch sw;
  std::vector<int> got = std::vector<int>(3, 0);
  Mac mac[3] = {{2, 0xc9, 0, 0, 0, 0}, {2, 0xc9, 0, 0, 0, 1}, {2, 0xc9, 0, 0, 0, 2}};
  ThreeVports() {
    const std::vector<Mac> groups{kBroadcast, kAllNodes};
    for (int i = 0; i < 3; ++i) {
      sw.add_vport(mac[i], [this, i](std::span<const uint8_t>) { ++got[i]; });
      sw.set_group_filter(uint16_t(i), groups, false);
    }
  }
};

TEST(Eswitch, ForwardsUnicastToTheOwnerOnly) {
  ThreeVports t;
  t.sw.transmit(0, frame_to(t.mac[2]));
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 1}));
  const std::vector<Mac> extra{{2, 0, 0, 0, 0, 0x77}};
  t.sw.set_unicast_list(1, extra);
  t.sw.transmit(2, frame_to({2, 0, 0, 0, 0, 0x77}));
  EXPECT_EQ(t.got, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(t.sw.counters().forwarded, 2u);
}

TEST(Eswitch, FloodsBroadcastAndMulticastToSubscribersExceptTheSender) {
  ThreeVports t;
  t.sw.transmit(1, frame_to(kBroadcast));
  t.sw.transmit(1, frame_to(kAllNodes));
  EXPECT_EQ(t.got, (std::vector<int>{2, 0, 2}));
}

// Issue 14: group frames were flooded to every vport, so one VF saw every multicast stream of the
// others (IPv6 neighbour solicitations, a RoCE multicast group it never joined). A vport now
// receives only the groups its driver listed (MODIFY_NIC_VPORT_CONTEXT's multicast list), or all of
// them when the switch honours its allmulti/promiscuous mode (trusted vports only: the PF, and a VF
// the admin trusts).
TEST(Eswitch, GroupFramesReachOnlySubscribedVports) {
  ThreeVports t;
  const Mac stream{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03};
  const std::vector<Mac> joined{kBroadcast, stream};
  t.sw.set_group_filter(2, joined, false);
  t.sw.transmit(0, frame_to(stream));
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 1})) << "vport 1 never joined the group";
  EXPECT_EQ(t.sw.counters().group_unsubscribed, 1u);
  t.sw.transmit(0, frame_to(kAllNodes));
  EXPECT_EQ(t.got, (std::vector<int>{0, 1, 1})) << "vport 2 left the all-nodes group";
  t.sw.set_group_filter(1, {}, false);  // a closed netdev lists nothing, broadcast included
  t.sw.transmit(2, frame_to(kBroadcast));
  EXPECT_EQ(t.got, (std::vector<int>{1, 1, 1}));
  t.sw.set_group_filter(1, {}, true);  // all groups
  t.sw.transmit(0, frame_to(stream));
  t.sw.transmit(0, frame_to(kBroadcast));
  EXPECT_EQ(t.got, (std::vector<int>{1, 3, 3}));
  ASSERT_TRUE(t.sw.set_trusted(1, false));  // an untrusted vport asks for all groups in vain
  t.sw.transmit(0, frame_to(stream));
  EXPECT_EQ(t.got, (std::vector<int>{1, 3, 4}));
  EXPECT_FALSE(t.sw.set_group_filter(9, {}, true));
  EXPECT_FALSE(t.sw.set_trusted(9, true));
}

TEST(Eswitch, DropsUnknownUnicastRuntsAndDownVports) {
  ThreeVports t;
  t.sw.transmit(0, frame_to({2, 1, 1, 1, 1, 1}));
  EXPECT_EQ(t.sw.counters().drop_unknown_unicast, 1u);
  t.sw.transmit(0, std::vector<uint8_t>(10, 0));
  EXPECT_EQ(t.sw.counters().drop_runt, 1u);
  t.sw.set_admin_up(2, false);
  t.sw.transmit(0, frame_to(t.mac[2]));
  t.sw.transmit(0, frame_to(kBroadcast));
  EXPECT_EQ(t.got, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(t.sw.counters(2).drop_vport_down, 2u);
  t.sw.transmit(2, frame_to(t.mac[0]));
  EXPECT_EQ(t.sw.counters().drop_sender_down, 1u);
  t.sw.transmit(7, frame_to(t.mac[0]));
  EXPECT_EQ(t.sw.counters().drop_bad_vport, 1u);
  EXPECT_EQ(t.got[0], 0);
}

// Issue 16: two QPs of one function talk through the NIC's local loopback, so a unicast frame to
// the sender's own address (permanent or programmed) comes back to it, and to no other vport; its
// broadcasts and multicasts come back too (the function's loopback switches and TIRs judge them),
// each with the transport domain the sender named.
TEST(Eswitch, LoopsTheSendersOwnFramesBackWithTheirDomain) {
  ThreeVports t;
  std::vector<int> looped(3, 0);
  std::vector<uint32_t> domains;
  t.sw.transmit(1, frame_to(t.mac[1]));
  EXPECT_EQ(t.sw.counters().drop_to_self, 1u) << "a vport without a loopback path drops it";
  for (int i = 0; i < 3; ++i)
    t.sw.set_loopback(uint16_t(i), [&looped, &domains, i](std::span<const uint8_t>, uint32_t td) {
      ++looped[i];
      domains.push_back(td);
    });
  t.sw.transmit(1, frame_to(t.mac[1]), 7);
  const std::vector<Mac> extra{{2, 0, 0, 0, 0, 0x42}};
  t.sw.set_unicast_list(1, extra);
  t.sw.transmit(1, frame_to(extra[0]));
  EXPECT_EQ(looped, (std::vector<int>{0, 2, 0}));
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 0})) << "the normal delivery path sees none of it";
  EXPECT_EQ(t.sw.counters().looped_back, 2u);
  t.sw.transmit(1, frame_to(kBroadcast), 9);
  EXPECT_EQ(looped, (std::vector<int>{0, 3, 0})) << "a broadcast comes back to its sender";
  EXPECT_EQ(t.got, (std::vector<int>{1, 0, 1})) << "and reaches the others as before";
  EXPECT_EQ(domains, (std::vector<uint32_t>{7, 0, 9}));
}

// Issue 14: a VF could send frames with another function's source MAC; with its spoof check on
// (a VF's default, hcaemu's "vfs" setting `spoofchk`) they are dropped and counted.
TEST(Eswitch, SpoofCheckDropsAForeignSourceMac) {
  ThreeVports t;
  ASSERT_TRUE(t.sw.set_spoof_check(1, true));
  auto from = [&](const Mac& src, const Mac& dst) {
    std::vector<uint8_t> f = frame_to(dst);
    std::copy(src.begin(), src.end(), f.begin() + 6);
    return f;
  };
  t.sw.transmit(1, from(t.mac[0], t.mac[2]));  // VF posing as the PF
  t.sw.transmit(1, from({2, 0, 0, 0, 0, 0x99}, kBroadcast));  // made-up source, broadcast
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(t.sw.counters().drop_spoofed, 2u);
  EXPECT_EQ(t.sw.counters(1).drop_spoofed, 2u);
  t.sw.transmit(1, from(t.mac[1], t.mac[2]));  // its own address goes through
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 1}));
  ASSERT_TRUE(t.sw.set_spoof_check(1, false));  // spoofchk off: the admin allows it
  t.sw.transmit(1, from(t.mac[0], t.mac[2]));
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 2}));
  t.sw.transmit(0, from({2, 0, 0, 0, 0, 0x99}, t.mac[2]));  // vports without the check are not touched
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 3}));
  EXPECT_FALSE(t.sw.set_spoof_check(7, true));
}


// Issue 15: the physical port. What no vport owns leaves through the uplink, group frames too; what
// comes in goes to its owner (group frames to subscribers), never back out, and a frame posing with
// a local function's address as its source is dropped.
std::vector<uint8_t> frame_from(const Mac& dst, const Mac& src) {
  std::vector<uint8_t> f = frame_to(dst);
  std::copy(src.begin(), src.end(), f.begin() + 6);
  return f;
}

TEST(Eswitch, TheUplinkTakesUnknownUnicastAndGroupsAndDeliversWhatArrives) {
  ThreeVports t;
  const Mac outside{0x52, 0x54, 0, 9, 0, 2};
  std::vector<std::vector<uint8_t>> wire;
  t.sw.set_uplink([&](std::span<const uint8_t> f) { wire.emplace_back(f.begin(), f.end()); });
  t.sw.transmit(1, frame_from(outside, t.mac[1]));
  t.sw.transmit(1, frame_from(kBroadcast, t.mac[1]));
  t.sw.transmit(1, frame_from(t.mac[2], t.mac[1]));
  ASSERT_EQ(wire.size(), 2u) << "unknown unicast and the broadcast, not the frame for a local vport";
  EXPECT_EQ(wire[0], frame_from(outside, t.mac[1]));
  EXPECT_EQ(t.got, (std::vector<int>{1, 0, 2}));

  t.sw.receive_from_uplink(frame_from(t.mac[0], outside));
  t.sw.receive_from_uplink(frame_from(kBroadcast, outside));
  EXPECT_EQ(t.got, (std::vector<int>{3, 1, 3}));
  EXPECT_EQ(wire.size(), 2u) << "nothing from the uplink goes back out";
  t.sw.receive_from_uplink(frame_from({2, 0, 0, 0, 0, 0x99}, outside));
  t.sw.receive_from_uplink(frame_from(t.mac[0], t.mac[2]));
  t.sw.receive_from_uplink(std::vector<uint8_t>(10, 0));
  EXPECT_EQ(t.got, (std::vector<int>{3, 1, 3}));
  EXPECT_EQ(t.sw.counters().uplink_tx, 2u);
  EXPECT_EQ(t.sw.counters().uplink_rx, 3u);
  EXPECT_EQ(t.sw.counters().drop_uplink_unknown, 1u);
  EXPECT_EQ(t.sw.counters().drop_uplink_local_source, 1u);
  EXPECT_EQ(t.sw.counters().drop_uplink_runt, 1u);

  t.sw.set_uplink_up(false);
  t.sw.transmit(1, frame_from(outside, t.mac[1]));
  t.sw.receive_from_uplink(frame_from(t.mac[0], outside));
  EXPECT_EQ(wire.size(), 2u);
  EXPECT_EQ(t.got, (std::vector<int>{3, 1, 3}));
  EXPECT_EQ(t.sw.counters().drop_uplink_down, 2u);
}

TEST(Eswitch, WithoutAnUplinkUnknownUnicastIsDropped) {
  ThreeVports t;
  t.sw.transmit(0, frame_from({0x52, 0x54, 0, 9, 0, 2}, t.mac[0]));
  EXPECT_EQ(t.sw.counters().drop_unknown_unicast, 1u);
  t.sw.receive_from_uplink(frame_from(t.mac[0], {0x52, 0x54, 0, 9, 0, 2}));
  EXPECT_EQ(t.got, (std::vector<int>{0, 0, 0}));
}

}  // namespace
}  // namespace hcaemu::sriov
