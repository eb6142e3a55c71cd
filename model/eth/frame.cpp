// The flow steering match key of a frame (frame.h).
#include "model/eth/frame.h"

#include <algorithm>

#include "common/endian.h"

namespace hcaemu::model::frame {

std::array<uint8_t, 0x40> outer_match_key(std::span<const uint8_t> frame, const Parsed& p) {
  std::array<uint8_t, 0x40> key{};
  if (frame.size() < kEthHeaderSize) return key;
  // smac 0x00..0x05, ethertype 0x06; dmac 0x08..0x0d, first_prio/cfi/vid 0x0e.
  std::copy_n(&frame[kMacSize], kMacSize, &key[0x00]);
  store_be16(&key[0x06], p.ethertype);
  std::copy_n(&frame[0], kMacSize, &key[0x08]);
  if (p.vlan) store_be16(&key[0x0e], p.vlan_tci);
  // 0x10: ip_protocol [31:24], ip_dscp [23:18], ip_ecn [17:16], cvlan_tag [15], frag [13],
  // ip_version [12:9], tcp_flags [8:0].
  uint32_t dw = (p.vlan ? 1u << 15 : 0) | (uint32_t(p.ip_version) << 9) | (p.fragment ? 1u << 13 : 0);
  if (p.ip_version != 0) {
    const uint8_t* ip = &frame[p.l3_offset];
    const uint8_t tclass = p.ip_version == 4 ? ip[1] : uint8_t((load_be16(ip) >> 4) & 0xff);
    dw |= (uint32_t(p.l4_protocol) << 24) | (uint32_t(tclass >> 2) << 18) | (uint32_t(tclass & 3) << 16);
    key[0x1b] = p.ip_version == 4 ? ip[8] : ip[7];  // ttl_hoplimit
    if (p.ip_version == 4) {
      std::copy_n(ip + 12, 4, &key[0x2c]);
      std::copy_n(ip + 16, 4, &key[0x3c]);
    } else {
      std::copy_n(ip + 8, 16, &key[0x20]);
      std::copy_n(ip + 24, 16, &key[0x30]);
    }
  }
  if (p.l4_offset != 0) {
    const uint8_t* l4 = &frame[p.l4_offset];
    if (p.l4_protocol == kProtoTcp) {
      std::copy_n(l4, 4, &key[0x14]);  // tcp_sport, tcp_dport
      dw |= load_be16(l4 + 12) & 0x1ff;
    } else {
      std::copy_n(l4, 4, &key[0x1c]);  // udp_sport, udp_dport
    }
  }
  store_be32(&key[0x10], dw);
  return key;
}

void encapsulate(std::span<const uint8_t> outer, std::span<const uint8_t> inner, std::vector<uint8_t>& out) {
  out.assign(outer.begin(), outer.end());
  out.insert(out.end(), inner.begin(), inner.end());
  // The outer headers' lengths are the template's, so they are walked by position, not by them.
  if (outer.size() < kEthHeaderSize) return;
  uint32_t l3 = kEthHeaderSize, l4 = 0;
  uint16_t ethertype = load_be16(&out[12]);
  if (ethertype == kEtherTypeVlan && outer.size() >= kEthHeaderSize + 4) {
    l3 += 4;
    ethertype = load_be16(&out[16]);
  }
  const uint32_t ipv4_header = outer.size() > l3 ? (out[l3] & 0x0fu) * 4 : 0;
  const bool ipv4 = ethertype == kEtherTypeIpv4 && ipv4_header >= 20 && outer.size() >= l3 + ipv4_header;
  if (ipv4) {
    store_be16(&out[l3 + 2], uint16_t(out.size() - l3));  // total length
    if (out[l3 + 9] == kProtoUdp) l4 = l3 + ipv4_header;
  } else if (ethertype == kEtherTypeIpv6 && outer.size() >= l3 + 40) {
    store_be16(&out[l3 + 4], uint16_t(out.size() - l3 - 40));  // payload length
    if (out[l3 + 6] == kProtoUdp) l4 = l3 + 40;
  }
  if (l4 != 0 && outer.size() >= l4 + 8) {
    store_be16(&out[l4 + 4], uint16_t(out.size() - l4));
    store_be16(&out[l4 + 6], 0);
  }
  if (ipv4) fill_ipv4_checksum(out, parse(out));
}

}  // namespace hcaemu::model::frame
