#pragma once
// The RoCEv2 invariant CRC (IBA Vol 1 7.8.1 ICRC, as RoCEv2 redefines its coverage in Annex A17).
//
// The ICRC is the Ethernet CRC-32 (reflected polynomial 0x04c11db7, initial value and final XOR
// 0xffffffff) over:
//   64 bits of 1s                      standing in for the IB LRH that RoCEv2 does not carry
//   the IP header                      IPv4: TOS, TTL and header checksum replaced by 1s;
//                                      IPv6: traffic class, flow label and hop limit replaced by 1s
//   the UDP header                     checksum replaced by 1s
//   the BTH                            resv8a (byte 4, the FECN/BECN byte) replaced by 1s
//   extension headers, payload, pad    as they are
// i.e. every field a router or switch may rewrite is masked. It is sent like the Ethernet FCS: the
// CRC register's low byte first. compute_icrc() returns that value, so the four bytes on the wire
// are store_le32(value) (a capture showing "82 fd 00 2a" holds the value 0x2a00fd82).
#include <cstdint>
#include <span>

namespace hcaemu::transport {

// `ip_packet` runs from the first byte of the IPv4/IPv6 header to the end of the ICRC field (the
// IP total/payload length says where); the ICRC field itself (last 4 bytes) is not covered. IPv4
// options, when present, are covered unmasked. Returns 0 when the span is too short to hold the
// IP, UDP and BTH headers and an ICRC or is not IPv4/IPv6 (no CRC is computed then).
uint32_t icrc_of_ip_packet(std::span<const uint8_t> ip_packet);

// The ICRC a whole Ethernet frame (Ethernet [+ one 802.1Q tag] + IPv4/IPv6 + UDP + BTH ... + ICRC,
// no FCS) should carry in its last four bytes; bytes after the IP packet (Ethernet padding) are
// ignored. Returns 0 for a frame that is not IPv4/IPv6 or is shorter than its IP length says.
uint32_t compute_icrc(std::span<const uint8_t> frame);

}  // namespace hcaemu::transport
