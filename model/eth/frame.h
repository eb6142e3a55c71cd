#pragma once
// What the Ethernet data path needs to know about a frame's bytes: L2/L3/L4 parsing (802.1Q,
// IPv4, IPv6 without extension headers, TCP, UDP), Internet checksums (RFC 1071) - verified on
// receive for the CQE's L3/L4-ok flags, filled in on transmit when the WQE asks for checksum
// offload - and the flow steering match key (fte_match_set_lyr_2_4 of the outer headers).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace hcaemu::model::frame {

inline constexpr uint32_t kMacSize = 6;
inline constexpr uint32_t kEthHeaderSize = 14;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800, kEtherTypeIpv6 = 0x86dd, kEtherTypeVlan = 0x8100;
inline constexpr uint8_t kProtoTcp = 6, kProtoUdp = 17;

struct Parsed {
  uint16_t ethertype = 0;       // after at most one 802.1Q tag
  bool vlan = false;
  uint16_t vlan_tci = 0;
  uint32_t l3_offset = 0;       // 0 when not IP
  uint8_t ip_version = 0;       // 4, 6 or 0
  uint32_t l3_header_size = 0;
  uint32_t l4_offset = 0;       // 0 when not TCP/UDP (or a fragment)
  uint32_t l4_length = 0;       // from the IP header, bounded by the frame
  uint8_t l4_protocol = 0;
  bool fragment = false;
};

Parsed parse(std::span<const uint8_t> frame);

// One's complement sum of 16-bit big-endian words (an odd tail is padded with 0), not folded to 16
// bits and not inverted.
uint32_t sum16(std::span<const uint8_t> bytes, uint32_t sum = 0);
uint16_t fold(uint32_t sum);

bool ipv4_header_ok(std::span<const uint8_t> frame, const Parsed& p);
bool l4_checksum_ok(std::span<const uint8_t> frame, const Parsed& p);

// Writes the IPv4 header checksum / the TCP or UDP checksum. False when the frame has no such header.
bool fill_ipv4_checksum(std::span<uint8_t> frame, const Parsed& p);
bool fill_l4_checksum(std::span<uint8_t> frame, const Parsed& p);

// TCP segmentation offload: cuts a TCP/IP frame larger than one MSS into wire frames of at most
// `mss` payload bytes each: IP length and (IPv4) ID advanced, TCP sequence advanced, FIN/PSH only on
// the last segment, CWR only on the first, checksums filled. Empty when the frame is not TCP/IP
// or mss is 0.
std::vector<std::vector<uint8_t>> segment_tcp(std::span<const uint8_t> frame, uint16_t mss);

// fte_match_set_lyr_2_4 (0x40 bytes) of the frame's outer headers.
std::array<uint8_t, 0x40> outer_match_key(std::span<const uint8_t> frame, const Parsed& p);

}  // namespace hcaemu::model::frame
