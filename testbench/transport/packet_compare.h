#pragma once
// Field-by-field comparison of a RocePacket that went through build_frame() + parse_frame() with
// the one that was built: what the wire carries must come back, what it does not carry must come
// back as the default. Shared by the unit tests and the fuzz target.
#include <algorithm>
#include <sstream>
#include <string>

#include "transport/roce_packet.h"

namespace hcaemu::transport::testing {

// Empty when `got` is what parsing a frame built from `sent` must give; otherwise what differs.
inline std::string packet_diff(const RocePacket& sent, const RocePacket& got) {
  std::ostringstream d;
  auto check = [&](const char* name, auto want, auto have) {
    if (!(want == have)) d << name << " ";
  };
  const bool v4 = is_ipv4_mapped(sent.src_gid);
  const uint16_t h = headers_of(sent.opcode);
  check("dst_mac", sent.dst_mac, got.dst_mac);
  check("src_mac", sent.src_mac, got.src_mac);
  check("vlan_tci", sent.vlan_tci, got.vlan_tci);
  check("src_gid", sent.src_gid, got.src_gid);
  Gid dst = sent.dst_gid;
  if (v4) {  // only the IPv4 address travels
    dst = gid_from_ipv4((uint32_t(dst[12]) << 24) | (uint32_t(dst[13]) << 16) | (uint32_t(dst[14]) << 8) |
                        dst[15]);
  }
  check("dst_gid", dst, got.dst_gid);
  check("traffic_class", sent.traffic_class, got.traffic_class);
  check("hop_limit", sent.hop_limit, got.hop_limit);
  check("flow_label", v4 ? 0u : (sent.flow_label & 0xfffff), got.flow_label);
  check("udp_sport", sent.udp_sport, got.udp_sport);
  check("opcode", sent.opcode, got.opcode);
  check("solicited", sent.solicited, got.solicited);
  check("mig_req", sent.mig_req, got.mig_req);
  check("ack_req", sent.ack_req, got.ack_req);
  check("pkey", sent.pkey, got.pkey);
  check("dest_qp", sent.dest_qp & 0xffffff, got.dest_qp);
  check("psn", sent.psn & 0xffffff, got.psn);
  const Reth reth = (h & hdr::kReth) ? sent.reth : Reth{};
  check("reth.va", reth.va, got.reth.va);
  check("reth.rkey", reth.rkey, got.reth.rkey);
  check("reth.dma_length", reth.dma_length, got.reth.dma_length);
  const Aeth aeth = (h & hdr::kAeth) ? sent.aeth : Aeth{};
  check("aeth.syndrome", aeth.syndrome, got.aeth.syndrome);
  check("aeth.msn", aeth.msn & 0xffffff, got.aeth.msn);
  const AtomicEth atomic = (h & hdr::kAtomicEth) ? sent.atomic : AtomicEth{};
  check("atomic.va", atomic.va, got.atomic.va);
  check("atomic.rkey", atomic.rkey, got.atomic.rkey);
  check("atomic.swap_add", atomic.swap_add, got.atomic.swap_add);
  check("atomic.compare", atomic.compare, got.atomic.compare);
  check("atomic_ack", (h & hdr::kAtomicAckEth) ? sent.atomic_ack : 0, got.atomic_ack);
  check("immediate", (h & hdr::kImmDt) ? sent.immediate : 0u, got.immediate);
  check("invalidate_rkey", (h & hdr::kIeth) ? sent.invalidate_rkey : 0u, got.invalidate_rkey);
  const Deth deth = (h & hdr::kDeth) ? sent.deth : Deth{};
  check("deth.qkey", deth.qkey, got.deth.qkey);
  check("deth.src_qp", deth.src_qp & 0xffffff, got.deth.src_qp);
  check("xrc_srqn", (h & hdr::kXrceth) ? sent.xrc_srqn & 0xffffff : 0u, got.xrc_srqn);
  const Dceth dceth = (h & hdr::kDceth) ? sent.dceth : Dceth{};
  check("dceth.access_key", dceth.access_key, got.dceth.access_key);
  check("dceth.connect", dceth.connect, got.dceth.connect);
  check("dceth.initiator", dceth.initiator & 0xffffff, got.dceth.initiator);
  if (!std::equal(sent.payload.begin(), sent.payload.end(), got.payload.begin(), got.payload.end())) {
    d << "payload ";
  }
  return d.str();
}

}  // namespace hcaemu::transport::testing
