#include "transport/roce_packet.h"

#include "transport/ethernet.h"

#include <cstring>

#include "common/endian.h"
#include "transport/icrc.h"

namespace hcaemu::transport {
namespace {

// ---- Layout constants: Ethernet II / 802.1Q, IPv4 (RFC 791), IPv6 (RFC 8200), UDP (RFC 768) ----
constexpr uint32_t kEthHeaderSize = 14;
constexpr uint32_t kEthTypeOffset = 12;
constexpr uint32_t kVlanTagSize = 4;
constexpr uint16_t kEtherTypeIpv4 = 0x0800, kEtherTypeIpv6 = 0x86dd, kEtherTypeVlan = 0x8100;
constexpr uint32_t kIpv4HeaderSize = 20;  // what we send: no options
constexpr uint32_t kIpv6HeaderSize = 40;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint16_t kIpv4FlagDf = 0x4000, kIpv4FlagMf = 0x2000, kIpv4FragOffsetMask = 0x1fff;
constexpr uint32_t kUdpHeaderSize = 8;
constexpr uint32_t kMaxIpLength = 0xffff;

inline void store_be24(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 16);
  p[1] = uint8_t(v >> 8);
  p[2] = uint8_t(v);
}
inline uint32_t load_be24(const uint8_t* p) {
  return (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | uint32_t(p[2]);
}

// ---- Internet checksum (RFC 1071): ethernet.h's, over a pointer and a length ----
uint32_t sum16(const uint8_t* p, size_t n, uint32_t sum = 0) { return ethernet::sum16({p, n}, sum); }
using ethernet::fold;

// ---- BTH (IBA 9.2): one writer and one reader ----
//  0 opcode | 1 SE M PadCnt(2) TVer(4) | 2-3 P_Key | 4 resv8a | 5-7 DestQP | 8 A resv7 | 9-11 PSN
void write_bth(uint8_t* p, const RocePacket& k, uint8_t pad) {
  p[0] = k.opcode;
  p[1] = uint8_t((k.solicited ? 0x80 : 0) | (k.mig_req ? 0x40 : 0) | ((pad & 0x3) << 4));  // TVer 0
  store_be16(p + 2, k.pkey);
  p[4] = k.becn ? 0x40 : 0;  // FECN 0, BECN, 6 reserved bits
  store_be24(p + 5, k.dest_qp & kPsnMask);
  p[8] = k.ack_req ? 0x80 : 0;
  store_be24(p + 9, k.psn & kPsnMask);
}
struct BthExtras { uint8_t pad; uint8_t tver; };
BthExtras read_bth(const uint8_t* p, RocePacket& k) {
  k.opcode = p[0];
  k.solicited = p[1] & 0x80;
  k.mig_req = p[1] & 0x40;
  k.pkey = load_be16(p + 2);
  k.becn = p[4] & 0x40;
  k.dest_qp = load_be24(p + 5);
  k.ack_req = p[8] & 0x80;
  k.psn = load_be24(p + 9);
  return {uint8_t((p[1] >> 4) & 0x3), uint8_t(p[1] & 0x0f)};
}

// ---- Extension headers (IBA 9.3), in the order they follow the BTH ----
void write_deth(uint8_t* p, const RocePacket& k) {
  store_be32(p, k.deth.qkey);
  p[4] = 0;
  store_be24(p + 5, k.deth.src_qp & kPsnMask);
}
void read_deth(const uint8_t* p, RocePacket& k) {
  k.deth.qkey = load_be32(p);
  k.deth.src_qp = load_be24(p + 5);
}
void write_xrceth(uint8_t* p, const RocePacket& k) { store_be32(p, k.xrc_srqn & kPsnMask); }
void read_xrceth(const uint8_t* p, RocePacket& k) { k.xrc_srqn = load_be32(p) & kPsnMask; }
void write_dceth(uint8_t* p, const RocePacket& k) {
  store_be64(p, k.dceth.access_key);
  p[8] = k.dceth.connect ? 0x80 : 0;
  store_be24(p + 9, k.dceth.initiator & kPsnMask);
}
void read_dceth(const uint8_t* p, RocePacket& k) {
  k.dceth.access_key = load_be64(p);
  k.dceth.connect = (p[8] & 0x80) != 0;
  k.dceth.initiator = load_be24(p + 9);
}
void write_reth(uint8_t* p, const RocePacket& k) {
  store_be64(p, k.reth.va);
  store_be32(p + 8, k.reth.rkey);
  store_be32(p + 12, k.reth.dma_length);
}
void read_reth(const uint8_t* p, RocePacket& k) {
  k.reth.va = load_be64(p);
  k.reth.rkey = load_be32(p + 8);
  k.reth.dma_length = load_be32(p + 12);
}
void write_atomic_eth(uint8_t* p, const RocePacket& k) {
  store_be64(p, k.atomic.va);
  store_be32(p + 8, k.atomic.rkey);
  store_be64(p + 12, k.atomic.swap_add);
  store_be64(p + 20, k.atomic.compare);
}
void read_atomic_eth(const uint8_t* p, RocePacket& k) {
  k.atomic.va = load_be64(p);
  k.atomic.rkey = load_be32(p + 8);
  k.atomic.swap_add = load_be64(p + 12);
  k.atomic.compare = load_be64(p + 20);
}
void write_aeth(uint8_t* p, const RocePacket& k) {
  p[0] = k.aeth.syndrome;
  store_be24(p + 1, k.aeth.msn & kPsnMask);
}
void read_aeth(const uint8_t* p, RocePacket& k) {
  k.aeth.syndrome = p[0];
  k.aeth.msn = load_be24(p + 1);
}
void write_atomic_ack_eth(uint8_t* p, const RocePacket& k) { store_be64(p, k.atomic_ack); }
void read_atomic_ack_eth(const uint8_t* p, RocePacket& k) { k.atomic_ack = load_be64(p); }
void write_immdt(uint8_t* p, const RocePacket& k) { store_be32(p, k.immediate); }
void read_immdt(const uint8_t* p, RocePacket& k) { k.immediate = load_be32(p); }
void write_ieth(uint8_t* p, const RocePacket& k) { store_be32(p, k.invalidate_rkey); }
void read_ieth(const uint8_t* p, RocePacket& k) { k.invalidate_rkey = load_be32(p); }

struct ExtHeader {
  uint16_t bit;
  uint32_t size;
  void (*write)(uint8_t*, const RocePacket&);
  void (*read)(const uint8_t*, RocePacket&);
};
constexpr ExtHeader kExtHeaders[] = {
    {hdr::kDeth, kDethSize, write_deth, read_deth},
    {hdr::kXrceth, kXrcethSize, write_xrceth, read_xrceth},
    {hdr::kDceth, kDcethSize, write_dceth, read_dceth},
    {hdr::kReth, kRethSize, write_reth, read_reth},
    {hdr::kAtomicEth, kAtomicEthSize, write_atomic_eth, read_atomic_eth},
    {hdr::kAeth, kAethSize, write_aeth, read_aeth},
    {hdr::kAtomicAckEth, kAtomicAckEthSize, write_atomic_ack_eth, read_atomic_ack_eth},
    {hdr::kImmDt, kImmDtSize, write_immdt, read_immdt},
    {hdr::kIeth, kIethSize, write_ieth, read_ieth},
};

uint8_t pad_for(size_t payload_size) { return uint8_t((4 - payload_size % 4) % 4); }

// The UDP checksum over IPv6 (RFC 8200 8.1): pseudo-header (addresses, upper-layer length, next
// header) + the UDP header and data with the checksum field 0. A result of 0 is sent as 0xffff.
uint16_t udp6_checksum(const uint8_t* ip6, const uint8_t* udp, uint32_t udp_length) {
  uint32_t sum = sum16(ip6 + 8, 32);  // source + destination address
  sum += udp_length >> 16;
  sum += udp_length & 0xffff;
  sum += kIpProtoUdp;
  sum = sum16(udp, udp_length, sum);
  const uint16_t c = uint16_t(~fold(sum));
  return c == 0 ? 0xffff : c;
}


}  // namespace

size_t frame_size(const RocePacket& k) {
  const uint16_t h = headers_of(k.opcode);
  if (!(h & hdr::kKnown)) return 0;
  if (!k.payload.empty() && !(h & hdr::kPayload)) return 0;
  const size_t transport = kBthSize + extension_headers_size(k.opcode) + k.payload.size() +
                           pad_for(k.payload.size()) + kIcrcSize;
  const size_t udp = kUdpHeaderSize + transport;
  const bool v4 = is_ipv4_mapped(k.src_gid);
  // IPv4 total length counts its header; IPv6 payload length does not.
  if ((v4 ? kIpv4HeaderSize + udp : udp) > kMaxIpLength) return 0;
  return kEthHeaderSize + (k.vlan_tci ? kVlanTagSize : 0) + (v4 ? kIpv4HeaderSize : kIpv6HeaderSize) +
         udp;
}

size_t payload_offset(const RocePacket& k) {
  const bool v4 = is_ipv4_mapped(k.src_gid);
  return kEthHeaderSize + (k.vlan_tci ? kVlanTagSize : 0) + (v4 ? kIpv4HeaderSize : kIpv6HeaderSize) +
         kUdpHeaderSize + kBthSize + extension_headers_size(k.opcode);
}

std::vector<uint8_t> build_frame(const RocePacket& k) {
  std::vector<uint8_t> frame;
  build_frame_into(k, frame);
  return frame;
}

bool build_frame_into(const RocePacket& k, std::vector<uint8_t>& frame, bool with_checksums) {
  const size_t size = frame_size(k);
  if (size == 0) {
    frame.clear();
    return false;
  }
  // Everything but the payload is written below or must be zero (reserved bits, pad): only the
  // headers and the pad are cleared, the payload is copied over whatever the buffer held (not
  // cleared first: resizing an emptied buffer would zero it all).
  frame.resize(size);
  const size_t payload_at = size - kIcrcSize - pad_for(k.payload.size()) - k.payload.size();
  std::memset(frame.data(), 0, payload_at);
  std::memset(frame.data() + payload_at + k.payload.size(), 0, pad_for(k.payload.size()));
  const bool v4 = is_ipv4_mapped(k.src_gid);

  // Ethernet [+ 802.1Q]
  uint8_t* p = frame.data();
  std::memcpy(p, k.dst_mac.data(), 6);
  std::memcpy(p + 6, k.src_mac.data(), 6);
  uint32_t off = kEthTypeOffset;
  if (k.vlan_tci) {
    store_be16(p + off, kEtherTypeVlan);
    store_be16(p + off + 2, *k.vlan_tci);
    off += kVlanTagSize;
  }
  store_be16(p + off, v4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
  off += 2;

  // IP
  uint8_t* ip = p + off;
  const uint32_t ip_header = v4 ? kIpv4HeaderSize : kIpv6HeaderSize;
  const uint32_t udp_length = uint32_t(size - off - ip_header);
  if (v4) {
    ip[0] = 0x45;
    ip[1] = k.traffic_class;
    store_be16(ip + 2, uint16_t(kIpv4HeaderSize + udp_length));
    store_be16(ip + 4, 0);  // identification: never fragmented (DF)
    store_be16(ip + 6, kIpv4FlagDf);
    ip[8] = k.hop_limit;
    ip[9] = kIpProtoUdp;
    std::memcpy(ip + 12, k.src_gid.data() + 12, 4);
    std::memcpy(ip + 16, k.dst_gid.data() + 12, 4);
    store_be16(ip + 10, uint16_t(~fold(sum16(ip, kIpv4HeaderSize))));
  } else {
    store_be32(ip, (6u << 28) | (uint32_t(k.traffic_class) << 20) | (k.flow_label & 0xfffff));
    store_be16(ip + 4, uint16_t(udp_length));
    ip[6] = kIpProtoUdp;
    ip[7] = k.hop_limit;
    std::memcpy(ip + 8, k.src_gid.data(), 16);
    std::memcpy(ip + 24, k.dst_gid.data(), 16);
  }

  // UDP (checksum filled last: it covers the ICRC)
  uint8_t* udp = ip + ip_header;
  store_be16(udp, k.udp_sport);
  store_be16(udp + 2, kRoceV2UdpPort);
  store_be16(udp + 4, uint16_t(udp_length));

  // BTH, extension headers, payload, pad (already 0)
  uint8_t* t = udp + kUdpHeaderSize;
  write_bth(t, k, pad_for(k.payload.size()));
  t += kBthSize;
  const uint16_t h = headers_of(k.opcode);
  for (const ExtHeader& e : kExtHeaders) {
    if (h & e.bit) {
      e.write(t, k);
      t += e.size;
    }
  }
  if (!k.payload.empty() && k.payload.data() != t) std::memcpy(t, k.payload.data(), k.payload.size());

  const std::span<const uint8_t> ip_packet(ip, size - off);
  store_le32(frame.data() + size - kIcrcSize, with_checksums ? icrc_of_ip_packet(ip_packet) : 0);
  if (!v4 && with_checksums) store_be16(udp + 6, udp6_checksum(ip, udp, udp_length));
  return true;
}

const char* parse_error_name(ParseError e) {
  switch (e) {
    case ParseError::kNone: return "none";
    case ParseError::kNotRoce: return "not_roce";
    case ParseError::kTruncated: return "truncated";
    case ParseError::kBadIpHeader: return "bad_ip_header";
    case ParseError::kBadUdpLength: return "bad_udp_length";
    case ParseError::kBadVersion: return "bad_version";
    case ParseError::kUnknownOpcode: return "unknown_opcode";
    case ParseError::kBadPad: return "bad_pad";
    case ParseError::kBadIcrc: return "bad_icrc";
  }
  return "?";
}

namespace {

// Where the walk of a frame has got to: the IP packet ([ip, ip + ip_length), anything after it is
// Ethernet padding) and then its UDP payload (the IB transport packet).
struct Walk {
  const uint8_t* ip = nullptr;
  size_t available = 0;  // bytes from ip to the end of the frame
  uint32_t ip_header = 0, ip_length = 0;
  const uint8_t* transport = nullptr;
  uint32_t transport_size = 0;
};

// Ethernet [+ 802.1Q]: the ethertype after at most one tag, and where IP starts.
ParseError parse_ethernet(std::span<const uint8_t> frame, RocePacket& k, uint16_t& ethertype, Walk& w) {
  if (frame.size() < kEthHeaderSize) return ParseError::kTruncated;
  const uint8_t* p = frame.data();
  std::memcpy(k.dst_mac.data(), p, 6);
  std::memcpy(k.src_mac.data(), p + 6, 6);
  uint32_t off = kEthTypeOffset;
  ethertype = load_be16(p + off);
  if (ethertype == kEtherTypeVlan) {
    if (frame.size() < kEthHeaderSize + kVlanTagSize) return ParseError::kTruncated;
    k.vlan_tci = load_be16(p + off + 2);
    off += kVlanTagSize;
    ethertype = load_be16(p + off);
  }
  off += 2;
  if (ethertype != kEtherTypeIpv4 && ethertype != kEtherTypeIpv6) return ParseError::kNotRoce;
  w.ip = p + off;
  w.available = frame.size() - off;
  return ParseError::kNone;
}

ParseError parse_ipv4(RocePacket& k, Walk& w) {
  const uint8_t* ip = w.ip;
  if (w.available < kIpv4HeaderSize) return ParseError::kTruncated;
  if ((ip[0] >> 4) != 4) return ParseError::kBadIpHeader;
  w.ip_header = uint32_t(ip[0] & 0x0f) * 4;
  if (w.ip_header < kIpv4HeaderSize) return ParseError::kBadIpHeader;
  if (w.available < w.ip_header) return ParseError::kTruncated;
  w.ip_length = load_be16(ip + 2);
  if (w.ip_length < w.ip_header) return ParseError::kBadIpHeader;
  if (w.ip_length > w.available) return ParseError::kTruncated;
  if (fold(sum16(ip, w.ip_header)) != 0xffff) return ParseError::kBadIpHeader;
  const uint16_t frag = load_be16(ip + 6);
  if ((frag & kIpv4FlagMf) || (frag & kIpv4FragOffsetMask)) return ParseError::kBadIpHeader;
  if (ip[9] != kIpProtoUdp) return ParseError::kNotRoce;
  k.traffic_class = ip[1];
  k.hop_limit = ip[8];
  k.src_gid = gid_from_ipv4(load_be32(ip + 12));
  k.dst_gid = gid_from_ipv4(load_be32(ip + 16));
  return ParseError::kNone;
}

ParseError parse_ipv6(RocePacket& k, Walk& w) {
  const uint8_t* ip = w.ip;
  if (w.available < kIpv6HeaderSize) return ParseError::kTruncated;
  const uint32_t word0 = load_be32(ip);
  if ((word0 >> 28) != 6) return ParseError::kBadIpHeader;
  w.ip_header = kIpv6HeaderSize;
  w.ip_length = kIpv6HeaderSize + load_be16(ip + 4);
  if (w.ip_length > w.available) return ParseError::kTruncated;
  if (ip[6] != kIpProtoUdp) return ParseError::kNotRoce;  // extension headers: not RoCE
  k.traffic_class = uint8_t(word0 >> 20);
  k.flow_label = word0 & 0xfffff;
  k.hop_limit = ip[7];
  std::memcpy(k.src_gid.data(), ip + 8, 16);
  std::memcpy(k.dst_gid.data(), ip + 24, 16);
  // An IPv4-mapped source travels as IPv4 (RoCEv2 GID types); on IPv6 it is not a RoCE sender.
  return is_ipv4_mapped(k.src_gid) ? ParseError::kBadIpHeader : ParseError::kNone;
}

ParseError parse_udp(RocePacket& k, Walk& w) {
  const uint32_t ip_payload = w.ip_length - w.ip_header;
  const uint8_t* udp = w.ip + w.ip_header;
  if (ip_payload < kUdpHeaderSize) return ParseError::kTruncated;
  if (load_be16(udp + 2) != kRoceV2UdpPort) return ParseError::kNotRoce;
  if (load_be16(udp + 4) != ip_payload) return ParseError::kBadUdpLength;
  k.udp_sport = load_be16(udp);
  w.transport = udp + kUdpHeaderSize;
  w.transport_size = ip_payload - kUdpHeaderSize;
  return ParseError::kNone;
}

// BTH, the opcode's extension headers, payload + pad and the ICRC over the IP packet.
ParseError parse_transport(RocePacket& k, const Walk& w, bool check_icrc) {
  if (w.transport_size < kBthSize + kIcrcSize) return ParseError::kTruncated;
  const BthExtras bth = read_bth(w.transport, k);
  if (bth.tver != 0) return ParseError::kBadVersion;
  const uint16_t h = headers_of(k.opcode);
  if (!(h & hdr::kKnown)) return ParseError::kUnknownOpcode;
  const uint32_t headers = kBthSize + extension_headers_size(k.opcode);
  if (w.transport_size < headers + kIcrcSize) return ParseError::kTruncated;
  const uint32_t data = w.transport_size - headers - kIcrcSize;  // payload + pad
  if (h & hdr::kPayload) {
    if (data % 4 != 0 || bth.pad > data) return ParseError::kBadPad;
  } else if (data != 0 || bth.pad != 0) {
    return ParseError::kBadPad;
  }
  const std::span<const uint8_t> ip_packet(w.ip, w.ip_length);
  if (check_icrc && icrc_of_ip_packet(ip_packet) != load_le32(w.ip + w.ip_length - kIcrcSize)) return ParseError::kBadIcrc;
  const uint8_t* e = w.transport + kBthSize;
  for (const ExtHeader& x : kExtHeaders) {
    if (h & x.bit) {
      x.read(e, k);
      e += x.size;
    }
  }
  k.payload = std::span<const uint8_t>(e, data - bth.pad);
  return ParseError::kNone;
}

}  // namespace

ParseResult parse_frame(std::span<const uint8_t> frame, bool check_icrc) {
  ParseResult r;
  Walk w;
  uint16_t ethertype = 0;
  r.error = parse_ethernet(frame, r.packet, ethertype, w);
  if (r.error == ParseError::kNone)
    r.error = ethertype == kEtherTypeIpv4 ? parse_ipv4(r.packet, w) : parse_ipv6(r.packet, w);
  if (r.error == ParseError::kNone) r.error = parse_udp(r.packet, w);
  if (r.error == ParseError::kNone) r.error = parse_transport(r.packet, w, check_icrc);
  if (r.error != ParseError::kNone) r.packet = {};
  return r;
}

bool is_roce_v2(std::span<const uint8_t> frame) {
  if (frame.size() < kEthHeaderSize) return false;
  const uint8_t* p = frame.data();
  uint32_t off = kEthTypeOffset;
  uint16_t ethertype = load_be16(p + off);
  if (ethertype == kEtherTypeVlan) {
    if (frame.size() < kEthHeaderSize + kVlanTagSize) return false;
    off += kVlanTagSize;
    ethertype = load_be16(p + off);
  }
  off += 2;
  const uint8_t* ip = p + off;
  const size_t available = frame.size() - off;
  uint32_t udp = 0;
  if (ethertype == kEtherTypeIpv4) {
    if (available < kIpv4HeaderSize || (ip[0] >> 4) != 4 || ip[9] != kIpProtoUdp) return false;
    if (load_be16(ip + 6) & (kIpv4FlagMf | kIpv4FragOffsetMask)) return false;
    udp = uint32_t(ip[0] & 0x0f) * 4;
    if (udp < kIpv4HeaderSize) return false;
  } else if (ethertype == kEtherTypeIpv6) {
    if (available < kIpv6HeaderSize || (ip[0] >> 4) != 6 || ip[6] != kIpProtoUdp) return false;
    udp = kIpv6HeaderSize;
  } else {
    return false;
  }
  return available >= udp + 4 && load_be16(ip + udp + 2) == kRoceV2UdpPort;
}

}  // namespace hcaemu::transport
