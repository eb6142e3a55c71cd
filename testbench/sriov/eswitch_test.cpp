// The embedded switch alone: forwarding by destination MAC, flooding, drops and their counters.
#include "sriov/eswitch.h"

#include <gtest/gtest.h>

namespace hcaemu::sriov {
namespace {

std::vector<uint8_t> frame_to(const Mac& dst) {
  std::vector<uint8_t> f(60, 0);
  std::copy(dst.begin(), dst.end(), f.begin());
  return f;
}

struct ThreeVports {
  Eswitch sw;
  std::vector<int> got = std::vector<int>(3, 0);
  Mac mac[3] = {{2, 0xc9, 0, 0, 0, 0}, {2, 0xc9, 0, 0, 0, 1}, {2, 0xc9, 0, 0, 0, 2}};
  ThreeVports() {
    for (int i = 0; i < 3; ++i) sw.add_vport(mac[i], [this, i](std::span<const uint8_t>) { ++got[i]; });
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

TEST(Eswitch, FloodsBroadcastAndMulticastExceptToTheSender) {
  ThreeVports t;
  t.sw.transmit(1, frame_to({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  t.sw.transmit(1, frame_to({0x33, 0x33, 0, 0, 0, 1}));
  EXPECT_EQ(t.got, (std::vector<int>{2, 0, 2}));
}

TEST(Eswitch, DropsUnknownUnicastRuntsAndDownVports) {
  ThreeVports t;
  t.sw.transmit(0, frame_to({2, 1, 1, 1, 1, 1}));
  EXPECT_EQ(t.sw.counters().drop_unknown_unicast, 1u);
  t.sw.transmit(0, std::vector<uint8_t>(10, 0));
  EXPECT_EQ(t.sw.counters().drop_runt, 1u);
  t.sw.set_admin_up(2, false);
  t.sw.transmit(0, frame_to(t.mac[2]));
  t.sw.transmit(0, frame_to({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
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
  t.sw.transmit(1, frame_to({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), 9);
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
  t.sw.transmit(1, from({2, 0, 0, 0, 0, 0x99}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));  // made-up source, broadcast
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

}  // namespace
}  // namespace hcaemu::sriov
