#pragma once
// The walk of an Ethernet frame's headers, done once for every part of the emulator that needs
// it (the NIC's Ethernet queues and flow steering, the RoCE ICRC, the GRH of UD receives): L2/L3/L4
// parsing (802.1Q, IPv4, IPv6 without extension headers, TCP, UDP), Internet checksums (RFC 1071),
// and TCP segmentation. Lenient: a frame it cannot walk yields what it could read. The strict
// validation of a RoCEv2 packet is parse_frame's (roce_packet.h).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace hcaemu::transport {

// Where a sender's frames go: a switch vport, a link, or a test. The frame is the sender's buffer
// until transmit returns.
class EthernetPort {
 public:
  virtual ~EthernetPort() = default;
  virtual void transmit(std::span<const uint8_t> frame) = 0;
  // The same, handing the buffer over: a port that keeps frames may take it and leave another
  // (of any content) in its place, sparing a copy. By default the frame is copied.
  virtual void transmit_buffer(std::vector<uint8_t>& frame) { transmit(frame); }
  // A frame of an Ethernet SQ, sent through a TIS of transport domain `td` (never 0): when it comes
  // back to its own function (local loopback), the receiving TIRs judge it by that domain.
  virtual void transmit_from_domain(std::span<const uint8_t> frame, uint32_t /*td*/) { transmit(frame); }
  // When `frame`, taking `wire_bytes` on the wire (preamble, FCS and gap included), whose sending
  // starts at `start_ps` has left the port. By default at the full port rate; a port shared under
  // QoS (the device's transmit scheduler) may give its sender a smaller share.
  virtual uint64_t serialised_ps(std::span<const uint8_t> /*frame*/, size_t wire_bytes, uint64_t start_ps,
                                 double link_gbps) {
    return start_ps + uint64_t(double(wire_bytes) * 8.0 / link_gbps * 1000.0 + 0.5);
  }
  // True while the port's transmit scheduler shares the wire among its senders (per-VF rates or
  // traffic classes set): Ethernet frames then take their share of it too, as RDMA packets always do.
  virtual bool shared() const { return false; }
};

}  // namespace hcaemu::transport

namespace hcaemu::transport::ethernet {

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
  uint32_t l3_length = 0;       // the IP packet (header + payload) as its header says
  uint32_t l4_offset = 0;       // 0 when not TCP/UDP (or a fragment)
  uint32_t l4_length = 0;       // from the IP header, bounded by the frame
  uint8_t l4_protocol = 0;
  bool fragment = false;
  bool truncated = false;       // the IP header claims more bytes than the frame holds (lengths
                                // above are cut to the frame; steering still matches the headers)
};

Parsed parse(std::span<const uint8_t> frame);

// One's complement sum of 16-bit big-endian words (an odd tail is padded with 0), not folded to 16
// bits and not inverted.
uint32_t sum16(std::span<const uint8_t> bytes, uint32_t sum = 0);
uint16_t fold(uint32_t sum);

// A frame to a broadcast or multicast address (the I/G bit of its destination MAC).
inline bool to_group_address(std::span<const uint8_t> frame) { return !frame.empty() && (frame[0] & 0x01) != 0; }

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

}  // namespace hcaemu::transport::ethernet
