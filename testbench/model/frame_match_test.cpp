// The flow steering match key of a frame (model/eth/frame.h match_key): outer headers, the misc
// parameters of GRE, VXLAN, Geneve and RoCEv2 headers, and the tunnelled frame's inner headers,
// at the offsets of mlx5's fte_match_param, and a flow table steering by them.
#include <gtest/gtest.h>

#include "common/endian.h"
#include "model/eth/flow_index.h"
#include "model/eth/frame.h"

namespace hcaemu::model::test {
namespace {

constexpr uint32_t kMisc = 0x40, kInner = 0x80;

// An Ethernet frame with an IPv4 header of protocol `protocol` and `l4` after it.
std::vector<uint8_t> ipv4_frame(uint8_t protocol, const std::vector<uint8_t>& l4, uint8_t last_dmac = 2) {
  std::vector<uint8_t> f(14 + 20, 0);
  f[5] = last_dmac;
  f[11] = 1;
  store_be16(&f[12], 0x0800);
  f[14] = 0x45;
  store_be16(&f[16], uint16_t(20 + l4.size()));
  f[22] = 64;
  f[23] = protocol;
  f[26] = 10, f[29] = 1, f[30] = 10, f[33] = 2;
  f.insert(f.end(), l4.begin(), l4.end());
  return f;
}

std::vector<uint8_t> udp(uint16_t dport, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> u(8, 0);
  store_be16(&u[0], 50000);
  store_be16(&u[2], dport);
  store_be16(&u[4], uint16_t(8 + payload.size()));
  u.insert(u.end(), payload.begin(), payload.end());
  return u;
}

frame::MatchKey key_of(const std::vector<uint8_t>& f) { return frame::match_key(f, frame::parse(f)); }

TEST(FrameMatchKey, VxlanGivesItsVniAndTheInnerFrame) {
  const auto inner = ipv4_frame(17, udp(7777, std::vector<uint8_t>(20)), 0x42);
  std::vector<uint8_t> vxlan{0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0};
  vxlan.insert(vxlan.end(), inner.begin(), inner.end());
  const auto key = key_of(ipv4_frame(17, udp(4789, vxlan)));
  EXPECT_EQ(load_be32(&key[kMisc + 0x14]) >> 8, 0x123456u) << "vxlan_vni";
  EXPECT_EQ(key[kInner + 0x0d], 0x42) << "inner dmac";
  EXPECT_EQ(load_be16(&key[kInner + 0x1e]), 7777) << "inner udp_dport";
  EXPECT_EQ(load_be16(&key[0x1e]), 4789) << "outer udp_dport";
}

TEST(FrameMatchKey, GeneveGivesVniOamOptionLengthAndProtocol) {
  const auto inner = ipv4_frame(6, std::vector<uint8_t>(20), 0x43);
  std::vector<uint8_t> geneve{0x01, 0x80, 0x65, 0x58, 0xab, 0xcd, 0xef, 0};  // one option word, OAM
  geneve.insert(geneve.end(), {0, 0, 0, 0});                                 // the option
  geneve.insert(geneve.end(), inner.begin(), inner.end());
  const auto key = key_of(ipv4_frame(17, udp(6081, geneve)));
  EXPECT_EQ(load_be32(&key[kMisc + 0x18]) >> 8, 0xabcdefu) << "geneve_vni";
  EXPECT_EQ(key[kMisc + 0x1b] & 1, 1) << "geneve_oam";
  EXPECT_EQ(key[kMisc + 0x25] & 0x3f, 1) << "geneve_opt_len";
  EXPECT_EQ(load_be16(&key[kMisc + 0x26]), 0x6558) << "geneve_protocol_type";
  EXPECT_EQ(key[kInner + 0x0d], 0x43) << "inner dmac, after the option";
  EXPECT_EQ(key[kInner + 0x10], 6) << "inner ip_protocol";
}

TEST(FrameMatchKey, GreGivesItsFlagsProtocolKeyAndTheInnerPacket) {
  const auto inner = ipv4_frame(17, udp(53, std::vector<uint8_t>(8)));
  std::vector<uint8_t> gre{0x20, 0, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef};  // K, IPv4, key
  gre.insert(gre.end(), inner.begin() + 14, inner.end());                  // an IP packet inside
  const auto key = key_of(ipv4_frame(47, gre));
  EXPECT_EQ(key[kMisc + 0x00], 0x20) << "gre_k_present";
  EXPECT_EQ(load_be16(&key[kMisc + 0x0e]), 0x0800) << "gre_protocol";
  EXPECT_EQ(load_be32(&key[kMisc + 0x10]), 0xdeadbeefu) << "gre_key";
  EXPECT_EQ(load_be16(&key[kInner + 0x06]), 0x0800) << "inner ethertype";
  EXPECT_EQ(load_be16(&key[kInner + 0x1e]), 53) << "inner udp_dport";
}

TEST(FrameMatchKey, RoceGivesTheBthOpcodeAndDestinationQp) {
  std::vector<uint8_t> bth{0x0a, 0, 0xff, 0xff, 0, 0x00, 0x01, 0x23, 0, 0, 0, 1};
  const auto key = key_of(ipv4_frame(17, udp(4791, bth)));
  EXPECT_EQ(key[kMisc + 0x17], 0x0a) << "bth_opcode";
  EXPECT_EQ(load_be32(&key[kMisc + 0x28]) & 0xffffff, 0x123u) << "bth_dst_qp";
  EXPECT_EQ(std::count(key.begin() + kInner, key.end(), 0), 0x40) << "nothing tunnelled";
}

TEST(FrameMatchKey, CutTunnelsGiveWhatTheyHold) {
  auto f = ipv4_frame(17, udp(6081, {0x3f, 0, 0x65, 0x58, 1, 2, 3, 0}));  // 252 option bytes announced
  const auto key = key_of(f);
  EXPECT_EQ(load_be32(&key[kMisc + 0x18]) >> 8, 0x010203u);
  EXPECT_EQ(std::count(key.begin() + kInner, key.end(), 0), 0x40) << "no inner frame past the end";
  f.resize(f.size() - 4);
  EXPECT_EQ(load_be32(&key_of(f)[kMisc + 0x18]), 0u) << "a header cut short gives nothing";
  const auto gre = key_of(ipv4_frame(47, {0xb0, 0, 0x65, 0x58}));  // C, K, S announced, none there
  EXPECT_EQ(std::count(gre.begin() + kMisc, gre.end(), 0), 0x80);
}

TEST(FrameMatchKey, AFlowGroupOnMiscParametersSteers) {
  ObjectTable<FlowGroup> groups{1, 0xffffff, 16};
  FlowGroup group;
  group.start = 0, group.end = 0;
  group.criteria_enable = 1u << 1;  // misc parameters
  group.criteria.assign(kMatchParamSize, 0);
  store_be32(&group.criteria[kMisc + 0x18], 0xffffff01);  // geneve_vni, geneve_oam
  const uint32_t g = groups.insert(std::move(group), 0);
  FlowTable table;
  FlowEntry entry;
  entry.group = g;
  entry.match_value.assign(kMatchParamSize, 0);
  store_be32(&entry.match_value[kMisc + 0x18], 0xabcdef00);
  index_flow_entry(table, *groups.find(g), 0, entry);
  table.entries[0] = std::move(entry);
  std::vector<uint8_t> geneve{0, 0, 0x65, 0x58, 0xab, 0xcd, 0xef, 0};
  EXPECT_EQ(match_flow(table, groups, key_of(ipv4_frame(17, udp(6081, geneve)))), 0u);
  geneve[1] = 0x80;  // OAM
  EXPECT_FALSE(match_flow(table, groups, key_of(ipv4_frame(17, udp(6081, geneve)))));
  geneve[1] = 0, geneve[6] = 0xee;
  EXPECT_FALSE(match_flow(table, groups, key_of(ipv4_frame(17, udp(6081, geneve))))) << "another VNI";
}

}  // namespace
}  // namespace hcaemu::model::test
