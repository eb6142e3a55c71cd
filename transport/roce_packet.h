#pragma once
// RoCEv2 packets as whole Ethernet frames (IBA Vol 1 Annex A17): Ethernet [+ 802.1Q] + IPv4 or
// IPv6 + UDP (destination port 4791) + BTH + the extension headers the opcode carries + payload +
// pad + ICRC. No Ethernet FCS: frames are handed between ports and written to pcaps without it.
//
// build_frame() and parse_frame() are inverse: every field of RocePacket survives a round trip.
// Which extension headers are on the wire is decided by the opcode table (ib_opcodes.h), never by
// the caller; fields of headers the opcode does not carry are ignored when building and left at
// their defaults when parsing.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "transport/ib_opcodes.h"

namespace hcaemu::transport {

using Mac = std::array<uint8_t, 6>;
using Gid = std::array<uint8_t, 16>;  // IPv4 addresses as IPv4-mapped IPv6 (::ffff:a.b.c.d)

inline constexpr uint16_t kRoceV2UdpPort = 4791;
inline constexpr uint16_t kDefaultUdpSourcePort = 0xc000;

// ::ffff:a.b.c.d
constexpr bool is_ipv4_mapped(const Gid& gid) {
  for (int i = 0; i < 10; ++i) {
    if (gid[i] != 0) return false;
  }
  return gid[10] == 0xff && gid[11] == 0xff;
}
// `ipv4` in host order: 0xc0a80001 is 192.168.0.1.
constexpr Gid gid_from_ipv4(uint32_t ipv4) {
  Gid g{};
  g[10] = g[11] = 0xff;
  g[12] = uint8_t(ipv4 >> 24);
  g[13] = uint8_t(ipv4 >> 16);
  g[14] = uint8_t(ipv4 >> 8);
  g[15] = uint8_t(ipv4);
  return g;
}

struct Reth { uint64_t va = 0; uint32_t rkey = 0; uint32_t dma_length = 0; };
struct Aeth { uint8_t syndrome = 0; uint32_t msn = 0; };       // msn 24 bits
struct AtomicEth { uint64_t va = 0; uint32_t rkey = 0; uint64_t swap_add = 0; uint64_t compare = 0; };
struct Deth { uint32_t qkey = 0; uint32_t src_qp = 0; };       // src_qp 24 bits
// hcaemu's DC request header (ib_opcodes.h kDcethSize): the DCT's access key, whether this request
// opens a connection (its PSN starts the DCI's stream to that DCT), and the DCI's number.
struct Dceth { uint64_t access_key = 0; bool connect = false; uint32_t initiator = 0; };  // initiator 24 bits

struct RocePacket {
  // Ethernet
  Mac dst_mac{}, src_mac{};
  std::optional<uint16_t> vlan_tci;  // 802.1Q tag (PCP, DEI, VID) when set
  // IP: the version follows the source GID (IPv4-mapped -> IPv4, else IPv6). For IPv4 only the
  // last four bytes of dst_gid are used.
  Gid src_gid{}, dst_gid{};
  uint8_t traffic_class = 0;  // DSCP << 2 | ECN (IPv4 TOS / IPv6 traffic class)
  uint8_t hop_limit = 64;     // TTL / hop limit
  uint32_t flow_label = 0;    // IPv6 only, 20 bits
  uint16_t udp_sport = kDefaultUdpSourcePort;  // dport is always 4791
  // BTH
  uint8_t opcode = 0;
  bool solicited = false, mig_req = true, ack_req = false;
  bool becn = false;     // a CNP sets it (IBA A17)
  uint16_t pkey = 0xffff;
  uint32_t dest_qp = 0;  // 24 bits
  uint32_t psn = 0;      // 24 bits
  // Extension headers, present exactly as headers_of(opcode) says
  Reth reth;
  Aeth aeth;
  AtomicEth atomic;
  uint64_t atomic_ack = 0;  // AtomicAckETH: the original remote data
  uint32_t immediate = 0;   // ImmDt (as the 32 bits on the wire, big-endian)
  uint32_t invalidate_rkey = 0;  // IETH
  Deth deth;
  uint32_t xrc_srqn = 0;    // XRCETH: the XRC SRQ at the target (24 bits)
  Dceth dceth;              // DC requests
  // Payload: builder input / parser output (a view into the parsed frame)
  std::span<const uint8_t> payload;
};

// Size of the frame build_frame() makes for `packet` (0 when it would refuse it).
size_t frame_size(const RocePacket& packet);
// Where build_frame() puts the payload in the frame: the size of every header the packet's
// addresses and opcode call for. A sender may read the payload straight there: build_frame_into
// then leaves bytes already in place as they are.
size_t payload_offset(const RocePacket& packet);

// Builds the whole Ethernet frame:
//   Ethernet [+ 802.1Q]
//   IPv4: IHL 5, DF set, ID 0, header checksum filled  |  IPv6: no extension headers
//   UDP to 4791: checksum 0 over IPv4 (RFC 768 "no checksum", as RoCEv2 senders do); over IPv6 the
//     real checksum (RFC 8200 8.1 makes it mandatory; a zero one is only legal for tunnels that
//     opt in per RFC 6935/6936, and Wireshark flags it). Receivers ignore it: the ICRC covers the
//     transport and masks this field, so either choice interoperates (Soft-RoCE accepts both).
//   BTH (TVer 0, pad count making payload + pad a multiple of 4, resv8a 0), the extension headers
//   the opcode carries, payload, pad bytes (0), ICRC (store_le32 of compute_icrc).
// Fields wider than their wire field (dest_qp, psn, msn, src_qp: 24 bits; flow_label: 20 bits) are
// truncated. Returns an empty vector for an unknown opcode, a payload on an opcode that carries
// none, or a packet too long for the IP length field.
std::vector<uint8_t> build_frame(const RocePacket& packet);
// The same into `frame`, reusing its capacity (a sender's per-packet buffer); false (and `frame`
// empty) where build_frame would return an empty vector. With_checksums false leaves the ICRC (and
// over IPv6 the UDP checksum) 0: for a closed run's own wire, where no receiver checks them and
// nothing records the frame (a CRC over every byte of every packet is the largest single cost of
// such a run).
bool build_frame_into(const RocePacket& packet, std::vector<uint8_t>& frame, bool with_checksums = true);

enum class ParseError : uint8_t {
  kNone,
  kNotRoce,       // not IPv4/IPv6 UDP to port 4791 (other ethertype, IP protocol or port)
  kTruncated,     // the frame ends before its IP length, or the transport packet is too short for
                  // the BTH, the opcode's extension headers and the ICRC
  kBadIpHeader,   // IP version does not match the ethertype, IHL < 5, IPv4 total length shorter
                  // than its header, bad IPv4 header checksum, an IPv4 fragment, an IPv6
                  // packet from an IPv4-mapped source (that GID travels as IPv4)
  kBadUdpLength,  // UDP length differs from the IP payload length
  kBadVersion,    // BTH TVer != 0
  kUnknownOpcode,
  kBadPad,        // payload + pad not a multiple of 4, pad longer than what follows the headers,
                  // or a payload/pad on an opcode that carries none
  kBadIcrc,
};
const char* parse_error_name(ParseError);

struct ParseResult {
  ParseError error = ParseError::kNone;
  RocePacket packet;
};

// Validates and decodes a frame; on success packet.payload points into `frame`. Bytes after the IP
// packet (Ethernet padding) are ignored; the UDP checksum is not checked (the ICRC is, unless
// check_icrc is false: a receiver whose frames come only from the model's own senders over a wire
// that changes no bit, as hcareplay's fabric).
ParseResult parse_frame(std::span<const uint8_t> frame, bool check_icrc = true);

// Cheap classification for a port's receive path: Ethernet [+ one 802.1Q tag] + IPv4 (non-fragment)
// or IPv6 + UDP with destination port 4791. Nothing beyond that is validated.
bool is_roce_v2(std::span<const uint8_t> frame);

}  // namespace hcaemu::transport
