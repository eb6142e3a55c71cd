// Frame walk, checksums and TCP segmentation (ethernet.h).
#include "transport/ethernet.h"

#include <algorithm>

#include "common/endian.h"

namespace hcaemu::transport::ethernet {
namespace {

constexpr uint32_t kIpv4MinHeader = 20, kIpv6Header = 40;
constexpr uint32_t kTcpChecksum = 16, kUdpChecksum = 6, kTcpMinHeader = 20, kUdpHeader = 8;
constexpr uint32_t kIpv4Checksum = 10;

// Pseudo-header sum of RFC 793 / RFC 8200 section 8.1.
uint32_t pseudo_header(std::span<const uint8_t> frame, const Parsed& p) {
  const uint8_t* ip = &frame[p.l3_offset];
  uint32_t sum = p.l4_protocol + p.l4_length;
  if (p.ip_version == 4) return sum16(std::span(ip + 12, 8), sum);
  return sum16(std::span(ip + 8, 32), sum);
}

uint32_t checksum_offset(const Parsed& p) { return p.l4_protocol == kProtoTcp ? kTcpChecksum : kUdpChecksum; }

}  // namespace

uint32_t sum16(std::span<const uint8_t> bytes, uint32_t sum) {
  // Four bytes at a time: a big-endian 32-bit word is its two 16-bit words modulo 0xffff, and so
  // is each fold of the 64-bit total (2^32 = 1 mod 0xffff), so the folded sum is the same.
  uint64_t total = sum;
  size_t i = 0;
  for (; i + 3 < bytes.size(); i += 4) total += load_be32(&bytes[i]);
  for (; i + 1 < bytes.size(); i += 2) total += load_be16(&bytes[i]);
  if (i < bytes.size()) total += uint32_t(bytes[i]) << 8;
  while (total >> 32) total = (total & 0xffffffff) + (total >> 32);
  return uint32_t(total);
}

uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(sum);
}

Parsed parse(std::span<const uint8_t> frame) {
  Parsed p;
  if (frame.size() < kEthHeaderSize) return p;
  uint32_t at = 2 * kMacSize;
  p.ethertype = load_be16(&frame[at]);
  at += 2;
  if (p.ethertype == kEtherTypeVlan) {
    if (frame.size() < at + 4) return p;
    p.vlan = true;
    p.vlan_tci = load_be16(&frame[at]);
    p.ethertype = load_be16(&frame[at + 2]);
    at += 4;
  }
  uint32_t payload_end = 0;
  if (p.ethertype == kEtherTypeIpv4 && frame.size() >= at + kIpv4MinHeader && (frame[at] >> 4) == 4) {
    const uint32_t ihl = (frame[at] & 0xf) * 4u;
    const uint32_t total = load_be16(&frame[at + 2]);
    if (ihl < kIpv4MinHeader || total < ihl || frame.size() < at + ihl) return p;
    p.ip_version = 4;
    p.l3_offset = at;
    p.l3_header_size = ihl;
    p.l4_protocol = frame[at + 9];
    p.fragment = (load_be16(&frame[at + 6]) & 0x3fff) != 0;  // MF or a fragment offset
    payload_end = at + total;
  } else if (p.ethertype == kEtherTypeIpv6 && frame.size() >= at + kIpv6Header && (frame[at] >> 4) == 6) {
    p.ip_version = 6;
    p.l3_offset = at;
    p.l3_header_size = kIpv6Header;
    p.l4_protocol = frame[at + 6];
    payload_end = at + kIpv6Header + load_be16(&frame[at + 4]);
  } else {
    return p;
  }
  // A NIC's parser walks the headers whatever the length fields say (rdma-core's flow tests send
  // IPv6 packets whose payload length counts the IPv6 header too); only checksums need them true.
  if (payload_end > frame.size()) {
    p.truncated = true;
    payload_end = uint32_t(frame.size());
  }
  p.l3_length = payload_end - p.l3_offset;
  const uint32_t l4 = p.l3_offset + p.l3_header_size;
  const uint32_t length = payload_end - l4;
  const bool tcp = p.l4_protocol == kProtoTcp && length >= kTcpMinHeader;
  const bool udp = p.l4_protocol == kProtoUdp && length >= kUdpHeader;
  if (!p.fragment && (tcp || udp)) {
    p.l4_offset = l4;
    p.l4_length = length;
  }
  return p;
}

bool ipv4_header_ok(std::span<const uint8_t> frame, const Parsed& p) {
  if (p.ip_version != 4 || p.truncated) return false;
  return fold(sum16(frame.subspan(p.l3_offset, p.l3_header_size))) == 0xffff;
}

bool l4_checksum_ok(std::span<const uint8_t> frame, const Parsed& p) {
  if (p.l4_offset == 0 || p.truncated) return false;
  const auto segment = frame.subspan(p.l4_offset, p.l4_length);
  if (p.l4_protocol == kProtoUdp && p.ip_version == 4 && load_be16(&segment[kUdpChecksum]) == 0) return true;  // none
  return fold(sum16(segment, pseudo_header(frame, p))) == 0xffff;
}

bool fill_ipv4_checksum(std::span<uint8_t> frame, const Parsed& p) {
  if (p.ip_version != 4) return false;
  uint8_t* header = &frame[p.l3_offset];
  store_be16(header + kIpv4Checksum, 0);
  store_be16(header + kIpv4Checksum, uint16_t(~fold(sum16(std::span<const uint8_t>(header, p.l3_header_size)))));
  return true;
}

bool fill_l4_checksum(std::span<uint8_t> frame, const Parsed& p) {
  if (p.l4_offset == 0) return false;
  uint8_t* field = &frame[p.l4_offset + checksum_offset(p)];
  store_be16(field, 0);
  uint16_t value = uint16_t(~fold(sum16(std::span<const uint8_t>(&frame[p.l4_offset], p.l4_length), pseudo_header(frame, p))));
  if (value == 0 && p.l4_protocol == kProtoUdp) value = 0xffff;  // RFC 768: 0 means "no checksum"
  store_be16(field, value);
  return true;
}

std::vector<std::vector<uint8_t>> segment_tcp(std::span<const uint8_t> in, uint16_t mss) {
  std::vector<std::vector<uint8_t>> out;
  const Parsed p = parse(in);
  if (mss == 0 || p.ip_version == 0 || p.truncated || p.l4_protocol != kProtoTcp || p.l4_offset == 0 ||
      in.size() < p.l4_offset + 20)
    return out;
  const uint32_t tcp_header = uint32_t(in[p.l4_offset + 12] >> 4) * 4;
  const uint32_t headers = p.l4_offset + tcp_header;
  if (tcp_header < 20 || headers > in.size()) return out;
  const uint32_t payload = uint32_t(in.size()) - headers;
  const uint32_t seq = load_be32(&in[p.l4_offset + 4]);
  const uint8_t flags = in[p.l4_offset + 13];
  constexpr uint8_t kFin = 0x01, kPsh = 0x08, kCwr = 0x80;
  const uint16_t ip_id = p.ip_version == 4 ? load_be16(&in[p.l3_offset + 4]) : 0;
  uint32_t index = 0;
  for (uint32_t offset = 0; offset < payload || (payload == 0 && index == 0); offset += mss, ++index) {
    const uint32_t chunk = std::min<uint32_t>(mss, payload - offset);
    std::vector<uint8_t> seg(in.begin(), in.begin() + headers);
    seg.insert(seg.end(), in.begin() + headers + offset, in.begin() + headers + offset + chunk);
    const bool last = offset + chunk >= payload;
    const uint32_t ip_bytes = uint32_t(seg.size()) - p.l3_offset;
    if (p.ip_version == 4) {
      store_be16(&seg[p.l3_offset + 2], uint16_t(ip_bytes));
      store_be16(&seg[p.l3_offset + 4], uint16_t(ip_id + index));
    } else {
      store_be16(&seg[p.l3_offset + 4], uint16_t(ip_bytes - 40));
    }
    store_be32(&seg[p.l4_offset + 4], seq + offset);
    uint8_t f = flags;
    if (!last) f &= uint8_t(~(kFin | kPsh));
    if (index != 0) f &= uint8_t(~kCwr);
    seg[p.l4_offset + 13] = f;
    const Parsed sp = parse(seg);
    if (p.ip_version == 4) fill_ipv4_checksum(seg, sp);
    fill_l4_checksum(seg, sp);
    out.push_back(std::move(seg));
    if (payload == 0) break;
  }
  return out;
}

}  // namespace hcaemu::transport::ethernet
