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

namespace {

constexpr uint16_t kVxlanPort = 4789, kGenevePort = 6081, kRoceV2Port = 4791;
constexpr uint16_t kTransparentEthernet = 0x6558;  // a tunnel's protocol type for an Ethernet frame
constexpr uint8_t kProtoGre = 47;

// What a tunnel carries, by its protocol type: an Ethernet frame (a view of `rest`), or an IP packet,
// which gets an Ethernet header without addresses in `scratch`.
std::span<const uint8_t> tunnelled(std::span<const uint8_t> rest, uint16_t protocol, std::vector<uint8_t>& scratch) {
  if (protocol == kTransparentEthernet) return rest;
  if (protocol != kEtherTypeIpv4 && protocol != kEtherTypeIpv6) return {};
  scratch.assign(kEthHeaderSize, 0);
  store_be16(&scratch[12], protocol);
  scratch.insert(scratch.end(), rest.begin(), rest.end());
  return scratch;
}

// misc parameters (fte_match_set_misc) of a frame's tunnel or RoCE header. Returns the tunnelled
// frame, a view into `frame`, or into `scratch` for an IP packet inside GRE, which gets an Ethernet
// header without addresses; empty when nothing is tunnelled.
std::span<const uint8_t> tunnel_fields(std::span<const uint8_t> frame, const Parsed& p, uint8_t* misc,
                                       std::vector<uint8_t>& scratch) {
  if (p.ip_version == 6)
    store_be32(&misc[0x1c], load_be32(&frame[p.l3_offset]) & 0xfffff);  // outer_ipv6_flow_label
  if (p.l4_protocol == kProtoGre && !p.fragment && p.l3_offset != 0) {
    const uint32_t gre = p.l3_offset + p.l3_header_size;
    if (frame.size() < gre + 4) return {};
    const uint16_t flags = load_be16(&frame[gre]), protocol = load_be16(&frame[gre + 2]);
    const bool c = flags & 0x8000, k = flags & 0x2000, sq = flags & 0x1000;
    const uint32_t length = 4 + (c ? 4 : 0) + (k ? 4 : 0) + (sq ? 4 : 0);
    if (frame.size() < gre + length) return {};
    misc[0x00] = uint8_t((c ? 0x80 : 0) | (k ? 0x20 : 0) | (sq ? 0x10 : 0));
    store_be16(&misc[0x0e], protocol);
    if (k) std::copy_n(&frame[gre + 4 + (c ? 4 : 0)], 4, &misc[0x10]);
    return tunnelled(frame.subspan(gre + length), protocol, scratch);
  }
  if (p.l4_protocol != kProtoUdp || p.l4_offset == 0 || frame.size() < p.l4_offset + 16) return {};
  const uint32_t header = p.l4_offset + 8;
  const uint16_t dport = load_be16(&frame[p.l4_offset + 2]);
  if (dport == kVxlanPort) {
    std::copy_n(&frame[header + 4], 3, &misc[0x14]);  // vxlan_vni
    return frame.subspan(header + 8);
  }
  if (dport == kGenevePort) {
    const uint32_t options = (frame[header] & 0x3fu) * 4;
    const uint16_t protocol = load_be16(&frame[header + 2]);
    std::copy_n(&frame[header + 4], 3, &misc[0x18]);  // geneve_vni
    misc[0x1b] = uint8_t((frame[header + 1] >> 7) & 1);  // geneve_oam
    misc[0x25] = uint8_t(frame[header] & 0x3f);          // geneve_opt_len
    store_be16(&misc[0x26], protocol);                   // geneve_protocol_type
    if (frame.size() < header + 8 + options) return {};
    return tunnelled(frame.subspan(header + 8 + options), protocol, scratch);
  }
  if (dport == kRoceV2Port) {
    misc[0x17] = frame[header];                         // bth_opcode
    std::copy_n(&frame[header + 5], 3, &misc[0x29]);    // bth_dst_qp
  }
  return {};
}

}  // namespace

MatchKey match_key(std::span<const uint8_t> frame, const Parsed& p) {
  MatchKey key{};
  const auto outer = outer_match_key(frame, p);
  std::copy(outer.begin(), outer.end(), key.begin());
  std::vector<uint8_t> scratch;
  const auto inner = tunnel_fields(frame, p, &key[0x40], scratch);
  if (inner.size() >= kEthHeaderSize) {
    const auto headers = outer_match_key(inner, parse(inner));
    std::copy(headers.begin(), headers.end(), key.begin() + 0x80);
  }
  return key;
}

std::optional<TunnelPayload> tunnel_payload(std::span<const uint8_t> frame, const Parsed& p) {
  MatchKey key{};
  std::vector<uint8_t> scratch;
  const auto inner = tunnel_fields(frame, p, &key[0x40], scratch);
  if (inner.empty()) return std::nullopt;
  if (inner.data() != scratch.data()) return TunnelPayload{uint32_t(inner.data() - frame.data()), true};
  return TunnelPayload{uint32_t(frame.size() - (scratch.size() - kEthHeaderSize)), false};
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
