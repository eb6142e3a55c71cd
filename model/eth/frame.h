#pragma once
// What the Ethernet data path needs to know about a frame's bytes: the header walk and checksums
// of transport/ethernet.h, and the flow steering match key (fte_match_set_lyr_2_4 of the outer
// headers), which is mlx5's layout and so the model's.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "transport/ethernet.h"

namespace hcaemu::model::frame {

using namespace transport::ethernet;

// fte_match_set_lyr_2_4 (0x40 bytes) of the frame's outer headers.
std::array<uint8_t, 0x40> outer_match_key(std::span<const uint8_t> frame, const Parsed& p);

// The blocks of fte_match_param the model matches a frame by: outer headers (0x00), misc
// parameters (0x40: GRE, VXLAN and Geneve headers, the outer IPv6 flow label, a RoCEv2 BTH's
// opcode and destination QP) and inner headers (0x80: the tunnelled frame's lyr_2_4, after VXLAN,
// Geneve with Ethernet inside, or GRE). The blocks after them read as zero for every frame.
inline constexpr uint32_t kMatchKeySize = 0xc0;
using MatchKey = std::array<uint8_t, kMatchKeySize>;
MatchKey match_key(std::span<const uint8_t> frame, const Parsed& p);

// Where the frame a tunnel (VXLAN, Geneve, GRE) carries starts in `frame`, and whether it is an
// Ethernet frame or an IP packet; nullopt when nothing is tunnelled.
struct TunnelPayload {
  uint32_t offset = 0;
  bool ethernet = false;
};
std::optional<TunnelPayload> tunnel_payload(std::span<const uint8_t> frame, const Parsed& p);

// L2-to-L2 tunnel encapsulation (a NIC TX packet reformat): `outer` (the tunnel's Ethernet, IP, UDP
// and tunnel headers) before `inner`, into `out`. The outer IP length (and IPv4 header checksum) and
// the UDP length are set for the frame that results, the UDP checksum to 0 (as tunnels send it).
void encapsulate(std::span<const uint8_t> outer, std::span<const uint8_t> inner, std::vector<uint8_t>& out);

}  // namespace hcaemu::model::frame
