// build_frame()/parse_frame(): round trips of every opcode over IPv4 and IPv6, with and without an
// 802.1Q tag; pad handling; the exact layout of the L2-L4 headers; every rejection path.
#include "transport/roce_packet.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/endian.h"
#include "testbench/transport/packet_compare.h"
#include "transport/icrc.h"

namespace hcaemu::transport {
namespace {

using testing::packet_diff;

const Gid kIpv4Src = gid_from_ipv4(0xc0a80a01);  // 192.168.10.1
const Gid kIpv4Dst = gid_from_ipv4(0xc0a80a02);
const Gid kIpv6Src = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
const Gid kIpv6Dst = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6};

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(0x5a ^ (i * 7));
  return v;
}

// Every field set to something other than its default, including headers the opcode does not carry
// (those must not reach the wire).
RocePacket sample(uint8_t op, bool v4, bool vlan, std::span<const uint8_t> payload) {
  RocePacket k;
  k.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  k.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  if (vlan) k.vlan_tci = uint16_t((5u << 13) | 0x123);
  k.src_gid = v4 ? kIpv4Src : kIpv6Src;
  k.dst_gid = v4 ? kIpv4Dst : kIpv6Dst;
  k.traffic_class = 0x6a;  // DSCP 26, ECN 2
  k.hop_limit = 17;
  if (!v4) k.flow_label = 0xabcde;
  k.udp_sport = 0xd00d;
  k.opcode = op;
  k.solicited = true;
  k.mig_req = false;
  k.ack_req = true;
  k.pkey = 0x8001;
  k.dest_qp = 0xa1b2c3;
  k.psn = 0xfffffe;
  k.reth = {0x1122334455667788ull, 0xcafe0001, 0x10000};
  k.aeth = {aeth_nak(NakCode::kRemoteAccessError), 0x654321};
  k.atomic = {0x0000700000001000ull, 0xbeef, 0x0102030405060708ull, 0x1112131415161718ull};
  k.atomic_ack = 0xfedcba9876543210ull;
  k.immediate = 0xdeadbeef;
  k.invalidate_rkey = 0x00abcdef;
  k.deth = {0x80010000, 0x000123};
  k.xrc_srqn = 0x5e0042;
  k.dceth = {0x0123456789abcdefull, true, 0x00a0b1};
  if (headers_of(op) & hdr::kPayload) k.payload = payload;
  return k;
}

std::vector<uint8_t> all_known_opcodes() {
  std::vector<uint8_t> ops;
  for (int op = 0; op < 256; ++op) {
    if (is_known_opcode(uint8_t(op))) ops.push_back(uint8_t(op));
  }
  return ops;
}

uint32_t l3_of(const std::vector<uint8_t>& f) { return load_be16(f.data() + 12) == 0x8100 ? 18 : 14; }

uint16_t internet_checksum(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += load_be16(p + i);
  if (n & 1) sum += uint32_t(p[n - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(sum);
}

// Re-seals a frame edited by a test: IPv4 header checksum, then the ICRC.
void reseal(std::vector<uint8_t>& f) {
  const uint32_t l3 = l3_of(f);
  if ((f[l3] >> 4) == 4) {
    const uint32_t ihl = (f[l3] & 0xf) * 4;
    store_be16(&f[l3 + 10], 0);
    store_be16(&f[l3 + 10], uint16_t(~internet_checksum(&f[l3], ihl)));
  }
  store_le32(&f[f.size() - 4], compute_icrc(f));
}

// Inserts `n` bytes (0x00) before the ICRC, growing the IP and UDP lengths, and re-seals.
void grow_transport(std::vector<uint8_t>& f, size_t n) {
  const uint32_t l3 = l3_of(f);
  const bool v4 = (f[l3] >> 4) == 4;
  f.insert(f.end() - 4, n, 0);
  const uint32_t ihl = v4 ? (f[l3] & 0xf) * 4 : 40;
  if (v4) {
    store_be16(&f[l3 + 2], uint16_t(load_be16(&f[l3 + 2]) + n));
  } else {
    store_be16(&f[l3 + 4], uint16_t(load_be16(&f[l3 + 4]) + n));
  }
  store_be16(&f[l3 + ihl + 4], uint16_t(load_be16(&f[l3 + ihl + 4]) + n));
  reseal(f);
}

uint32_t bth_of(const std::vector<uint8_t>& f) {
  const uint32_t l3 = l3_of(f);
  return l3 + ((f[l3] >> 4) == 4 ? (f[l3] & 0xf) * 4 : 40) + 8;
}

TEST(RocePacket, RoundTripEveryOpcodeIpv4Ipv6Vlan) {
  const std::vector<uint8_t> data = pattern(1027);
  for (uint8_t op : all_known_opcodes()) {
    for (bool v4 : {true, false}) {
      for (bool vlan : {false, true}) {
        for (size_t len : {size_t(0), size_t(1), size_t(4), size_t(1027)}) {
          SCOPED_TRACE(::testing::Message() << opcode_name(op) << (v4 ? " ipv4" : " ipv6")
                                            << (vlan ? " vlan" : "") << " payload " << len);
          const RocePacket sent = sample(op, v4, vlan, std::span(data).first(len));
          const std::vector<uint8_t> frame = build_frame(sent);
          ASSERT_FALSE(frame.empty());
          EXPECT_EQ(frame.size(), frame_size(sent));
          EXPECT_TRUE(is_roce_v2(frame));
          const ParseResult r = parse_frame(frame);
          ASSERT_EQ(r.error, ParseError::kNone) << parse_error_name(r.error);
          EXPECT_EQ(packet_diff(sent, r.packet), "");
          if (!r.packet.payload.empty()) {  // a view into the frame
            EXPECT_GE(r.packet.payload.data(), frame.data());
            EXPECT_LE(r.packet.payload.data() + r.packet.payload.size(), frame.data() + frame.size());
          }
          if (!(headers_of(op) & hdr::kPayload)) break;
        }
      }
    }
  }
}

TEST(RocePacket, DefaultsRoundTrip) {
  RocePacket k;
  k.src_gid = kIpv4Src;
  k.dst_gid = kIpv4Dst;
  k.opcode = opcode::kRcAcknowledge;
  k.aeth = {aeth_ack(kAethCreditsInvalid), 7};
  const std::vector<uint8_t> frame = build_frame(k);
  ASSERT_EQ(frame.size(), 14u + 20 + 8 + 12 + 4 + 4);  // the smallest RoCEv2 frame: 62 bytes
  const ParseResult r = parse_frame(frame);
  ASSERT_EQ(r.error, ParseError::kNone);
  EXPECT_EQ(packet_diff(k, r.packet), "");
  EXPECT_TRUE(r.packet.mig_req);
  EXPECT_EQ(r.packet.udp_sport, kDefaultUdpSourcePort);
  EXPECT_EQ(r.packet.hop_limit, 64);
  EXPECT_FALSE(r.packet.vlan_tci.has_value());
}

TEST(RocePacket, PadMakesPayloadFourByteAligned) {
  const std::vector<uint8_t> data = pattern(16);
  for (bool v4 : {true, false}) {
    for (size_t len = 0; len <= 9; ++len) {
      SCOPED_TRACE(::testing::Message() << "payload " << len << (v4 ? " ipv4" : " ipv6"));
      const RocePacket sent = sample(opcode::kRcSendOnly, v4, false, std::span(data).first(len));
      const std::vector<uint8_t> f = build_frame(sent);
      const uint32_t bth = bth_of(f);
      const uint8_t pad = (f[bth + 1] >> 4) & 3;
      EXPECT_EQ(pad, (4 - len % 4) % 4);
      EXPECT_EQ(f[bth + 1] & 0x0f, 0);  // TVer 0
      EXPECT_EQ((f.size() - 4 - bth) % 4, 0u);
      EXPECT_EQ(f.size(), bth + 12 + len + pad + 4);
      for (size_t i = 0; i < pad; ++i) EXPECT_EQ(f[bth + 12 + len + i], 0) << "pad byte " << i;
      const ParseResult r = parse_frame(f);
      ASSERT_EQ(r.error, ParseError::kNone);
      EXPECT_EQ(r.packet.payload.size(), len);
      EXPECT_EQ(packet_diff(sent, r.packet), "");
    }
  }
}

// The fixed parts of the headers, byte by byte (RFC 791, RFC 8200, RFC 768, IBA 9.2).
TEST(RocePacket, Ipv4LayoutAndChecksum) {
  const std::vector<uint8_t> data = pattern(5);
  const RocePacket k = sample(opcode::kRcRdmaWriteFirst, true, true, data);
  const std::vector<uint8_t> f = build_frame(k);
  EXPECT_EQ(load_be16(&f[12]), 0x8100);
  EXPECT_EQ(load_be16(&f[14]), *k.vlan_tci);
  EXPECT_EQ(load_be16(&f[16]), 0x0800);
  const uint8_t* ip = &f[18];
  EXPECT_EQ(ip[0], 0x45);
  EXPECT_EQ(ip[1], 0x6a);
  EXPECT_EQ(load_be16(ip + 2), f.size() - 18);
  EXPECT_EQ(load_be16(ip + 4), 0);       // ID 0
  EXPECT_EQ(load_be16(ip + 6), 0x4000);  // DF
  EXPECT_EQ(ip[8], 17);                  // TTL
  EXPECT_EQ(ip[9], 17);                  // UDP
  EXPECT_EQ(internet_checksum(ip, 20), 0xffff);
  EXPECT_EQ(load_be32(ip + 12), 0xc0a80a01u);
  EXPECT_EQ(load_be32(ip + 16), 0xc0a80a02u);
  const uint8_t* udp = ip + 20;
  EXPECT_EQ(load_be16(udp), 0xd00d);
  EXPECT_EQ(load_be16(udp + 2), 4791);
  EXPECT_EQ(load_be16(udp + 4), f.size() - 18 - 20);
  EXPECT_EQ(load_be16(udp + 6), 0);  // no UDP checksum over IPv4
  const uint8_t* bth = udp + 8;
  EXPECT_EQ(bth[0], opcode::kRcRdmaWriteFirst);
  EXPECT_EQ(bth[1], 0x80 | 0x30);  // SE, MigReq 0, pad 3, TVer 0
  EXPECT_EQ(load_be16(bth + 2), 0x8001);
  EXPECT_EQ(bth[4], 0);  // resv8a
  EXPECT_EQ(load_be32(bth + 4), 0xa1b2c3u);
  EXPECT_EQ(bth[8], 0x80);
  EXPECT_EQ(load_be32(bth + 8) & 0xffffff, 0xfffffeu);
  const uint8_t* reth = bth + 12;
  EXPECT_EQ(load_be64(reth), 0x1122334455667788ull);
  EXPECT_EQ(load_be32(reth + 8), 0xcafe0001u);
  EXPECT_EQ(load_be32(reth + 12), 0x10000u);
  EXPECT_EQ(load_le32(&f[f.size() - 4]), compute_icrc(f));
}

TEST(RocePacket, Ipv6LayoutAndUdpChecksum) {
  const std::vector<uint8_t> data = pattern(7);
  const RocePacket k = sample(opcode::kUdSendOnlyImm, false, false, data);
  const std::vector<uint8_t> f = build_frame(k);
  EXPECT_EQ(load_be16(&f[12]), 0x86dd);
  const uint8_t* ip = &f[14];
  EXPECT_EQ(load_be32(ip), (6u << 28) | (0x6au << 20) | 0xabcde);
  EXPECT_EQ(load_be16(ip + 4), f.size() - 14 - 40);
  EXPECT_EQ(ip[6], 17);
  EXPECT_EQ(ip[7], 17);
  EXPECT_TRUE(std::equal(kIpv6Src.begin(), kIpv6Src.end(), ip + 8));
  EXPECT_TRUE(std::equal(kIpv6Dst.begin(), kIpv6Dst.end(), ip + 24));
  const uint8_t* udp = ip + 40;
  const uint32_t udp_length = load_be16(udp + 4);
  EXPECT_EQ(udp_length, f.size() - 14 - 40);
  EXPECT_NE(load_be16(udp + 6), 0);
  // RFC 8200 8.1: the sum over the pseudo-header and the datagram (checksum included) is 0xffff.
  uint32_t sum = internet_checksum(ip + 8, 32);
  sum += udp_length + 17;
  EXPECT_EQ(internet_checksum(udp, udp_length, sum), 0xffff);
  const uint8_t* deth = udp + 8 + 12;
  EXPECT_EQ(load_be32(deth), 0x80010000u);
  EXPECT_EQ(deth[4], 0);
  EXPECT_EQ(load_be32(deth + 4), 0x000123u);
  EXPECT_EQ(load_be32(deth + 8), 0xdeadbeefu);  // ImmDt follows the DETH
}

TEST(RocePacket, HeaderOrderForCombinedOpcodes) {
  // RETH before ImmDt; AETH before AtomicAckETH (IBA 9.3 header order).
  const std::vector<uint8_t> data = pattern(8);
  std::vector<uint8_t> f = build_frame(sample(opcode::kRcRdmaWriteOnlyImm, true, false, data));
  uint32_t e = bth_of(f) + 12;
  EXPECT_EQ(load_be64(&f[e]), 0x1122334455667788ull);
  EXPECT_EQ(load_be32(&f[e + 16]), 0xdeadbeefu);
  EXPECT_EQ(f[e + 20], 0x5a);  // payload
  f = build_frame(sample(opcode::kRcAtomicAcknowledge, true, false, {}));
  e = bth_of(f) + 12;
  EXPECT_EQ(f[e], 0x62);
  EXPECT_EQ(load_be32(&f[e]) & 0xffffff, 0x654321u);
  EXPECT_EQ(load_be64(&f[e + 4]), 0xfedcba9876543210ull);
  f = build_frame(sample(opcode::kRcCompareSwap, false, false, {}));
  e = bth_of(f) + 12;
  EXPECT_EQ(load_be64(&f[e]), 0x0000700000001000ull);
  EXPECT_EQ(load_be32(&f[e + 8]), 0xbeefu);
  EXPECT_EQ(load_be64(&f[e + 12]), 0x0102030405060708ull);
  EXPECT_EQ(load_be64(&f[e + 20]), 0x1112131415161718ull);
  EXPECT_EQ(f.size(), e + 28 + 4);
}

TEST(RocePacket, WideFieldsAreTruncatedToTheirWireWidth) {
  RocePacket k = sample(opcode::kUdSendOnly, false, false, {});
  k.dest_qp = 0xff123456;
  k.psn = 0x01000001;
  k.flow_label = 0xfff12345;
  k.deth.src_qp = 0xaa000001;
  const ParseResult r = parse_frame(build_frame(k));
  ASSERT_EQ(r.error, ParseError::kNone);
  EXPECT_EQ(r.packet.dest_qp, 0x123456u);
  EXPECT_EQ(r.packet.psn, 1u);
  EXPECT_EQ(r.packet.flow_label, 0x12345u);
  EXPECT_EQ(r.packet.deth.src_qp, 1u);
}

TEST(RocePacket, BuilderRefusesWhatTheWireCannotCarry) {
  const std::vector<uint8_t> data = pattern(4);
  RocePacket k = sample(opcode::kRcAcknowledge, true, false, {});
  k.payload = data;  // an ACK carries no payload
  EXPECT_TRUE(build_frame(k).empty());
  EXPECT_EQ(frame_size(k), 0u);
  k = sample(0x15, true, false, {});
  EXPECT_TRUE(build_frame(k).empty());
  // IPv4 total length = 44 + payload + pad <= 65535; payload + pad is a multiple of 4.
  const std::vector<uint8_t> huge(65489);  // + 3 pad = 65536
  k = sample(opcode::kRcSendOnly, true, false, huge);
  EXPECT_TRUE(build_frame(k).empty());
  k.payload = std::span(huge).first(65488);
  EXPECT_EQ(build_frame(k).size(), 14u + 65532);
}

TEST(RocePacket, EthernetPaddingAfterTheIpPacketIsIgnored) {
  for (bool v4 : {true, false}) {
    RocePacket k = sample(opcode::kRcAcknowledge, v4, false, {});
    std::vector<uint8_t> f = build_frame(k);
    f.resize(f.size() + 6, 0xee);
    const ParseResult r = parse_frame(f);
    ASSERT_EQ(r.error, ParseError::kNone);
    EXPECT_EQ(packet_diff(k, r.packet), "");
    EXPECT_EQ(compute_icrc(f), load_le32(&f[f.size() - 10]));
  }
}

TEST(RocePacket, TruncatedAtEveryByte) {
  const std::vector<uint8_t> data = pattern(9);
  for (bool v4 : {true, false}) {
    for (bool vlan : {false, true}) {
      const std::vector<uint8_t> f = build_frame(sample(opcode::kRcRdmaWriteOnlyImm, v4, vlan, data));
      for (size_t n = 0; n < f.size(); ++n) {
        const ParseResult r = parse_frame(std::span(f).first(n));
        EXPECT_EQ(r.error, ParseError::kTruncated) << "length " << n << " of " << f.size();
      }
    }
  }
}

TEST(RocePacket, NotRoce) {
  const std::vector<uint8_t> data = pattern(4);
  std::vector<uint8_t> f = build_frame(sample(opcode::kRcSendOnly, true, false, data));
  const uint32_t udp = 14 + 20;

  std::vector<uint8_t> g = f;
  store_be16(&g[udp + 2], 4790);
  EXPECT_EQ(parse_frame(g).error, ParseError::kNotRoce);
  EXPECT_FALSE(is_roce_v2(g));

  g = f;
  store_be16(&g[12], 0x0806);  // ARP
  EXPECT_EQ(parse_frame(g).error, ParseError::kNotRoce);
  EXPECT_FALSE(is_roce_v2(g));

  g = f;
  g[14 + 9] = 6;  // TCP
  reseal(g);
  EXPECT_EQ(parse_frame(g).error, ParseError::kNotRoce);
  EXPECT_FALSE(is_roce_v2(g));

  std::vector<uint8_t> h = build_frame(sample(opcode::kRcSendOnly, false, true, data));
  h[18 + 6] = 0;  // IPv6 hop-by-hop options header instead of UDP
  EXPECT_EQ(parse_frame(h).error, ParseError::kNotRoce);
  EXPECT_FALSE(is_roce_v2(h));

  EXPECT_FALSE(is_roce_v2({}));
  EXPECT_FALSE(is_roce_v2(std::span(f).first(14 + 20 + 3)));
  EXPECT_TRUE(is_roce_v2(std::span(f).first(14 + 20 + 4)));
}

TEST(RocePacket, BadIpHeader) {
  const std::vector<uint8_t> data = pattern(4);
  const std::vector<uint8_t> f = build_frame(sample(opcode::kRcSendOnly, true, false, data));
  const uint32_t ip = 14;
  auto expect = [](std::vector<uint8_t> g, ParseError e, const char* what) {
    EXPECT_EQ(parse_frame(g).error, e) << what;
  };
  std::vector<uint8_t> g = f;
  g[ip] = 0x65;  // version 6 under the IPv4 ethertype
  reseal(g);
  expect(g, ParseError::kBadIpHeader, "version");
  g = f;
  g[ip] = 0x44;  // IHL 4
  reseal(g);
  expect(g, ParseError::kBadIpHeader, "ihl");
  g = f;
  g[ip + 10] ^= 0x01;
  expect(g, ParseError::kBadIpHeader, "header checksum");
  g = f;
  store_be16(&g[ip + 6], 0x2000);  // MF
  reseal(g);
  expect(g, ParseError::kBadIpHeader, "fragment");
  g = f;
  store_be16(&g[ip + 6], 0x4001);  // DF + offset 8
  reseal(g);
  expect(g, ParseError::kBadIpHeader, "fragment offset");
  EXPECT_FALSE(is_roce_v2(g));
  g = f;
  store_be16(&g[ip + 2], 19);  // total length shorter than the header
  reseal(g);
  expect(g, ParseError::kBadIpHeader, "total length");

  const std::vector<uint8_t> v6 = build_frame(sample(opcode::kRcSendOnly, false, false, data));
  g = v6;
  g[ip] = 0x40 | (g[ip] & 0x0f);
  expect(g, ParseError::kBadIpHeader, "ipv6 version");
  g = v6;
  std::copy(kIpv4Src.begin(), kIpv4Src.end(), g.begin() + ip + 8);  // IPv4-mapped source on IPv6
  reseal(g);
  expect(g, ParseError::kBadIpHeader, "ipv4-mapped source");
}

TEST(RocePacket, Ipv4OptionsAreCoveredByTheIcrc) {
  const std::vector<uint8_t> data = pattern(6);
  const RocePacket sent = sample(opcode::kRcSendOnly, true, false, data);
  std::vector<uint8_t> f = build_frame(sent);
  const uint32_t ip = 14;
  f.insert(f.begin() + ip + 20, {0x01, 0x01, 0x01, 0x00});  // NOP NOP NOP EOL
  f[ip] = 0x46;
  store_be16(&f[ip + 2], uint16_t(load_be16(&f[ip + 2]) + 4));
  reseal(f);
  ParseResult r = parse_frame(f);
  ASSERT_EQ(r.error, ParseError::kNone) << parse_error_name(r.error);
  EXPECT_EQ(packet_diff(sent, r.packet), "");
  EXPECT_TRUE(is_roce_v2(f));
  f[ip + 21] = 0x00;  // an option byte changes, the header checksum follows, the ICRC does not
  store_be16(&f[ip + 10], 0);
  store_be16(&f[ip + 10], uint16_t(~internet_checksum(&f[ip], 24)));
  EXPECT_EQ(parse_frame(f).error, ParseError::kBadIcrc);
}

// A closed run's own wire (RdmaEngine::set_wire_checksums): frames built without their checksums
// carry ICRC 0 (and over IPv6 UDP checksum 0), differ from the checked frame only there, are
// refused by a checking parser and taken by one that does not check.
TEST(RocePacket, WithoutChecksumsOnlyTheChecksumsAreZeroAndOnlyACheckingParserRefusesThem) {
  const std::vector<uint8_t> data = pattern(1000);
  for (bool v4 : {true, false}) {
    const RocePacket sent = sample(opcode::kRcSendOnly, v4, false, data);
    const std::vector<uint8_t> checked = build_frame(sent);
    std::vector<uint8_t> unchecked;
    ASSERT_TRUE(build_frame_into(sent, unchecked, false));
    ASSERT_EQ(unchecked.size(), checked.size());
    const size_t udp_checksum = 14 + (v4 ? 20 : 40) + 6;
    for (size_t i = 0; i < checked.size(); ++i) {
      const bool icrc = i + kIcrcSize >= checked.size();
      const bool udp = !v4 && (i == udp_checksum || i == udp_checksum + 1);
      if (icrc || udp)
        EXPECT_EQ(unchecked[i], 0) << "byte " << i;
      else
        EXPECT_EQ(unchecked[i], checked[i]) << "byte " << i;
    }
    EXPECT_EQ(parse_frame(unchecked).error, ParseError::kBadIcrc);
    const ParseResult r = parse_frame(unchecked, false);
    ASSERT_EQ(r.error, ParseError::kNone) << parse_error_name(r.error);
    EXPECT_EQ(packet_diff(sent, r.packet), "");
    // The other checks still hold without the ICRC's: a broken IPv4 header is refused.
    if (v4) {
      std::vector<uint8_t> bad = unchecked;
      bad[14 + 8] ^= 1;  // TTL: the header checksum no longer matches
      EXPECT_EQ(parse_frame(bad, false).error, ParseError::kBadIpHeader);
    }
  }
}

TEST(RocePacket, BadUdpLength) {
  for (bool v4 : {true, false}) {
    std::vector<uint8_t> f = build_frame(sample(opcode::kRcAcknowledge, v4, false, {}));
    const uint32_t udp = 14 + (v4 ? 20 : 40);
    store_be16(&f[udp + 4], uint16_t(load_be16(&f[udp + 4]) - 4));
    EXPECT_EQ(parse_frame(f).error, ParseError::kBadUdpLength);
    store_be16(&f[udp + 4], uint16_t(load_be16(&f[udp + 4]) + 8));
    EXPECT_EQ(parse_frame(f).error, ParseError::kBadUdpLength);
  }
}

TEST(RocePacket, BthVersionAndOpcode) {
  const std::vector<uint8_t> data = pattern(4);
  std::vector<uint8_t> f = build_frame(sample(opcode::kRcSendOnly, true, false, data));
  const uint32_t bth = bth_of(f);
  std::vector<uint8_t> g = f;
  g[bth + 1] |= 0x01;
  reseal(g);
  EXPECT_EQ(parse_frame(g).error, ParseError::kBadVersion);
  for (uint8_t op : {uint8_t(0x15), uint8_t(0x18), uint8_t(0x2c), uint8_t(0x82), uint8_t(0xff)}) {
    g = f;
    g[bth] = op;
    reseal(g);
    EXPECT_EQ(parse_frame(g).error, ParseError::kUnknownOpcode) << int(op);
  }
}

TEST(RocePacket, TransportTooShortForTheOpcodesHeaders) {
  // A READ request (RETH, 16 bytes) cut to a BTH + 12 bytes, lengths consistent, ICRC valid.
  std::vector<uint8_t> f = build_frame(sample(opcode::kRcAcknowledge, true, false, {}));
  const uint32_t bth = bth_of(f);
  grow_transport(f, 8);  // BTH + 12 bytes
  f[bth] = opcode::kRcRdmaReadRequest;
  reseal(f);
  EXPECT_EQ(parse_frame(f).error, ParseError::kTruncated);
}

TEST(RocePacket, BadPad) {
  // Pad longer than what follows the headers.
  std::vector<uint8_t> f = build_frame(sample(opcode::kRcSendOnly, true, false, {}));
  const uint32_t bth = bth_of(f);
  f[bth + 1] |= 0x10;
  reseal(f);
  EXPECT_EQ(parse_frame(f).error, ParseError::kBadPad);
  // Payload + pad not a multiple of 4.
  const std::vector<uint8_t> data = pattern(4);
  f = build_frame(sample(opcode::kRcSendOnly, false, false, data));
  grow_transport(f, 1);
  EXPECT_EQ(parse_frame(f).error, ParseError::kBadPad);
  // A payload on an ACK; a pad count on an ACK.
  f = build_frame(sample(opcode::kRcAcknowledge, true, false, {}));
  grow_transport(f, 4);
  EXPECT_EQ(parse_frame(f).error, ParseError::kBadPad);
  f = build_frame(sample(opcode::kRcRdmaReadRequest, true, false, {}));
  f[bth_of(f) + 1] |= 0x20;
  reseal(f);
  EXPECT_EQ(parse_frame(f).error, ParseError::kBadPad);
  // The largest legal pad: 3 bytes after a 1-byte payload.
  f = build_frame(sample(opcode::kRcSendOnly, true, false, std::span(data).first(1)));
  const ParseResult r = parse_frame(f);
  ASSERT_EQ(r.error, ParseError::kNone);
  EXPECT_EQ(r.packet.payload.size(), 1u);
}

TEST(RocePacket, IcrcDetectsCorruptionOfInvariantBytes) {
  const std::vector<uint8_t> data = pattern(33);
  for (bool v4 : {true, false}) {
    const std::vector<uint8_t> f = build_frame(sample(opcode::kRcRdmaWriteOnly, v4, true, data));
    const uint32_t l3 = 18;
    const uint32_t bth = bth_of(f);
    // Every payload byte, every ICRC byte, and the invariant header bytes.
    std::vector<uint32_t> offsets;
    for (uint32_t i = bth; i < f.size(); ++i) {
      if (i != bth + 4) offsets.push_back(i);  // resv8a is variant
    }
    if (v4) {
      offsets.insert(offsets.end(), {l3 + 4, l3 + 5, l3 + 12, l3 + 19});  // ID, addresses
    } else {
      offsets.insert(offsets.end(), {l3 + 8, l3 + 39});                  // addresses
    }
    const uint32_t udp = bth - 8;
    offsets.insert(offsets.end(), {udp, udp + 1});  // source port
    for (uint32_t i : offsets) {
      std::vector<uint8_t> g = f;
      g[i] ^= (i == bth + 1) ? 0x40 : 0x04;  // in BTH byte 1 flip MigReq, not the TVer/pad bits
      if (v4 && i < udp) {  // keep the IPv4 header checksum right so only the ICRC can object
        store_be16(&g[l3 + 10], 0);
        store_be16(&g[l3 + 10], uint16_t(~internet_checksum(&g[l3], 20)));
      }
      EXPECT_EQ(parse_frame(g).error, ParseError::kBadIcrc) << "byte " << i << (v4 ? " ipv4" : " ipv6");
    }
  }
}

TEST(RocePacket, IcrcIgnoresVariantFields) {
  // What routers and switches may rewrite: DSCP/ECN, TTL/hop limit, IPv4 header checksum, IPv6
  // flow label, UDP checksum, BTH resv8a (FECN/BECN). The ICRC must still verify.
  const std::vector<uint8_t> data = pattern(12);
  for (bool v4 : {true, false}) {
    const std::vector<uint8_t> f = build_frame(sample(opcode::kRcSendOnly, v4, false, data));
    std::vector<uint8_t> g = f;
    const uint32_t l3 = 14, bth = bth_of(f), udp = bth - 8;
    if (v4) {
      g[l3 + 1] = 0x03;  // ECN CE
      g[l3 + 8] = 1;     // TTL
      store_be16(&g[l3 + 10], 0);
      store_be16(&g[l3 + 10], uint16_t(~internet_checksum(&g[l3], 20)));
    } else {
      store_be32(&g[l3], (6u << 28) | (0xffu << 20) | 0x12345);
      g[l3 + 7] = 1;
    }
    store_be16(&g[udp + 6], 0x1234);
    g[bth + 4] = 0xc0;
    const ParseResult r = parse_frame(g);
    ASSERT_EQ(r.error, ParseError::kNone) << parse_error_name(r.error) << (v4 ? " ipv4" : " ipv6");
    EXPECT_EQ(compute_icrc(g), compute_icrc(f));
  }
}

TEST(RocePacket, ParseErrorNames) {
  EXPECT_STREQ(parse_error_name(ParseError::kNone), "none");
  EXPECT_STREQ(parse_error_name(ParseError::kBadIcrc), "bad_icrc");
  EXPECT_STREQ(parse_error_name(ParseError::kNotRoce), "not_roce");
}

}  // namespace
}  // namespace hcaemu::transport
