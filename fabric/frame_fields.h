#pragma once
// What the switch model reads from and writes into a frame: its priority (the VLAN tag's PCP, else
// the DSCP's class selector), its ECN field (RED marks ECN-capable packets Congestion Experienced),
// the UDP source port ECMP hashes on, and the IEEE 802.1Qbb priority flow control frame a switch
// sends upstream.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace hcaemu::fabric {

struct FrameFields {
  uint8_t priority = 0;
  uint16_t ip_offset = 0;   // 0: not IP
  uint8_t ip_version = 0;
  uint8_t ecn = 0;          // 0 not ECN-capable, 1 ECT(1), 2 ECT(0), 3 CE
  uint16_t udp_source = 0;  // 0: not UDP
  bool ecn_capable() const { return ecn == 1 || ecn == 2; }
};

FrameFields read_fields(std::span<const uint8_t> frame);
// Sets the ECN field to CE (and the IPv4 header checksum to match). The ICRC does not cover it.
void mark_congestion(std::span<uint8_t> frame, const FrameFields& fields);

inline constexpr std::array<uint8_t, 6> kPfcDestination = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
// A PFC frame from `source` pausing `priority` for `quanta` x 512 bit times (0: resume).
std::vector<uint8_t> pfc_frame(const std::array<uint8_t, 6>& source, uint8_t priority, uint16_t quanta);
bool is_pfc_frame(std::span<const uint8_t> frame);

}  // namespace hcaemu::fabric
