// The ICRC against frames from outside this project.
#include "transport/icrc.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/endian.h"
#include "transport/roce_packet.h"

namespace hcaemu::transport {
namespace {

std::vector<uint8_t> from_hex(const char* hex) {
  std::vector<uint8_t> out;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (const char* p = hex; p[0] && p[1]; p += 2) out.push_back(uint8_t(nibble(p[0]) << 4 | nibble(p[1])));
  return out;
}

// A RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx, from scapy's RoCE regression tests
// (secdev/scapy, test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx"). Hardware-made, so
// it pins down the masking: its TOS (0xc2: DSCP 48, ECN CE) and TTL are masked, its UDP checksum
// is 0, and its BTH resv8a byte is 0x40 (BECN set) - all masked - while the ICRC on the wire is
// 82 fd 00 2a.
const char* kConnectX4LxCnp =
    "e41d2dab2bc27cfe90643b32080045c2003c718c400040119161"
    "0a0011010a001201000012b700280000"
    "8100ffff4000011800000000"
    "00000000000000000000000000000000"
    "82fd002a";

// A UC SEND Only with an 18-byte payload, 2 pad bytes and a non-zero UDP checksum, from the same
// scapy test file ("an example UC packet"); the ICRC (78 f3 53 f3 on the wire) is the one that
// test asserts.
const char* kScapyUcSendOnly =
    "248a07a8fa22248a07a8fa22080045010040047840004011b4d5c0a80007c0a80007"
    "c00012b7002caca2"
    "2460ffff000000d300cf1710"
    "4630818be28935d90e9a95505401be885e500000"
    "78f353f3";

TEST(Icrc, ConnectX4LxCnp) {
  const std::vector<uint8_t> f = from_hex(kConnectX4LxCnp);
  ASSERT_EQ(f.size(), 74u);
  EXPECT_EQ(compute_icrc(f), 0x2a00fd82u);  // the value whose little-endian bytes are 82 fd 00 2a
  EXPECT_EQ(compute_icrc(f), load_le32(&f[70]));
  EXPECT_EQ(icrc_of_ip_packet(std::span(f).subspan(14)), 0x2a00fd82u);
  EXPECT_TRUE(is_roce_v2(f));
  const ParseResult r = parse_frame(f);
  ASSERT_EQ(r.error, ParseError::kNone) << parse_error_name(r.error);
  EXPECT_EQ(r.packet.opcode, opcode::kCnp);
  EXPECT_TRUE(r.packet.becn);
  EXPECT_EQ(r.packet.dest_qp, 0x118u);
  EXPECT_EQ(r.packet.payload.size(), opcode::kCnpPayloadSize);
  EXPECT_EQ(r.packet.traffic_class, 0xc2);  // DSCP 48, ECT(0)
  // The model's own CNP with the same fields is the same frame, bytes and ICRC alike (the IPv4
  // identification and UDP source port as the hardware chose them).
  RocePacket k = r.packet;
  std::vector<uint8_t> built = build_frame(k);
  ASSERT_EQ(built.size(), f.size());
  built[18] = f[18], built[19] = f[19];  // IPv4 identification
  store_be16(&built[24], 0);
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += load_be16(&built[i]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  store_be16(&built[24], uint16_t(~sum));
  store_le32(&built[built.size() - 4], compute_icrc(built));  // the identification is covered
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(int(built[i]), int(f[i])) << "byte " << i;
}

TEST(Icrc, ScapyUcSendOnly) {
  const std::vector<uint8_t> f = from_hex(kScapyUcSendOnly);
  ASSERT_EQ(f.size(), 78u);
  EXPECT_EQ(compute_icrc(f), 0xf353f378u);
  const ParseResult r = parse_frame(f);
  ASSERT_EQ(r.error, ParseError::kNone) << parse_error_name(r.error);
  const RocePacket& k = r.packet;
  EXPECT_EQ(k.opcode, opcode::kUcSendOnly);
  EXPECT_TRUE(k.mig_req);
  EXPECT_FALSE(k.solicited);
  EXPECT_FALSE(k.ack_req);
  EXPECT_EQ(k.pkey, 0xffff);
  EXPECT_EQ(k.dest_qp, 211u);
  EXPECT_EQ(k.psn, 13571856u);
  EXPECT_EQ(k.payload.size(), 18u);
  EXPECT_EQ(k.payload[0], 'F');
  EXPECT_EQ(k.traffic_class, 1);
  EXPECT_EQ(k.hop_limit, 64);
  EXPECT_EQ(k.udp_sport, 49152);
  EXPECT_EQ(k.src_gid, gid_from_ipv4(0xc0a80007));

  // Rebuilt from its fields, the frame differs only where our builder chooses differently (IPv4 ID
  // 0 instead of 1144, UDP checksum 0) - and so in the IPv4 header checksum and the ICRC, which
  // covers the ID.
  const std::vector<uint8_t> g = build_frame(k);
  ASSERT_EQ(g.size(), f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    const bool differs_by_choice =
        (i >= 18 && i < 20) || (i >= 24 && i < 26) || (i >= 40 && i < 42) || i >= 74;
    if (!differs_by_choice) {
      EXPECT_EQ(g[i], f[i]) << "byte " << i;
    }
  }
}

TEST(Icrc, RejectsWhatItCannotLocate) {
  EXPECT_EQ(compute_icrc({}), 0u);
  std::vector<uint8_t> f = from_hex(kConnectX4LxCnp);
  EXPECT_EQ(compute_icrc(std::span(f).first(73)), 0u);  // shorter than its IP length
  f[12] = 0x08;
  f[13] = 0x06;
  EXPECT_EQ(compute_icrc(f), 0u);  // ARP
  const std::vector<uint8_t> g = from_hex(kConnectX4LxCnp);
  EXPECT_EQ(icrc_of_ip_packet(std::span(g).subspan(14, 20 + 8 + 12 + 3)), 0u);  // no room for an ICRC
}

}  // namespace
}  // namespace hcaemu::transport
