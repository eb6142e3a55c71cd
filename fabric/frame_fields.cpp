#include "fabric/frame_fields.h"

#include "common/endian.h"

namespace hcaemu::fabric {

namespace {
constexpr uint16_t kVlan = 0x8100, kIpv4 = 0x0800, kIpv6 = 0x86dd, kMacControl = 0x8808, kPfcOpcode = 0x0101;
constexpr uint8_t kUdp = 17;
}  // namespace

FrameFields read_fields(std::span<const uint8_t> f) {
  FrameFields out;
  if (f.size() < 14) return out;
  size_t at = 12;
  uint16_t type = load_be16(&f[at]);
  bool tagged = false;
  if (type == kVlan && f.size() >= 18) {
    out.priority = uint8_t(f[14] >> 5);
    tagged = true;
    at += 4;
    type = load_be16(&f[at]);
  }
  const size_t ip = at + 2;
  uint8_t protocol = 0;
  size_t l4 = 0;
  if (type == kIpv4 && f.size() >= ip + 20) {
    out.ip_version = 4;
    out.ecn = f[ip + 1] & 3;
    if (!tagged) out.priority = uint8_t(f[ip + 1] >> 5);
    protocol = f[ip + 9];
    l4 = ip + size_t(f[ip] & 0xf) * 4;
  } else if (type == kIpv6 && f.size() >= ip + 40) {
    out.ip_version = 6;
    const uint8_t tclass = uint8_t((load_be16(&f[ip]) >> 4) & 0xff);
    out.ecn = tclass & 3;
    if (!tagged) out.priority = uint8_t(tclass >> 5);
    protocol = f[ip + 6];
    l4 = ip + 40;
  } else {
    return out;
  }
  out.ip_offset = uint16_t(ip);
  if (protocol == kUdp && f.size() >= l4 + 8) out.udp_source = load_be16(&f[l4]);
  return out;
}

void mark_congestion(std::span<uint8_t> f, const FrameFields& fields) {
  const size_t ip = fields.ip_offset;
  if (fields.ip_version == 4) {
    f[ip + 1] |= 3;
    store_be16(&f[ip + 10], 0);
    uint32_t sum = 0;
    const size_t header = size_t(f[ip] & 0xf) * 4;
    for (size_t i = 0; i < header; i += 2) sum += load_be16(&f[ip + i]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    store_be16(&f[ip + 10], uint16_t(~sum));
  } else if (fields.ip_version == 6) {
    f[ip + 1] |= 0x30;  // the low two bits of the traffic class (bits 20-21 of the first word)
  }
}

std::vector<uint8_t> pfc_frame(const std::array<uint8_t, 6>& source, uint8_t priority, uint16_t quanta) {
  std::vector<uint8_t> f(60, 0);  // the minimum frame without FCS
  std::copy(kPfcDestination.begin(), kPfcDestination.end(), f.begin());
  std::copy(source.begin(), source.end(), f.begin() + 6);
  store_be16(&f[12], kMacControl);
  store_be16(&f[14], kPfcOpcode);
  store_be16(&f[16], uint16_t(1u << (priority & 7)));  // class-enable vector
  store_be16(&f[18 + 2 * (priority & 7)], quanta);
  return f;
}

bool is_pfc_frame(std::span<const uint8_t> f) {
  return f.size() >= 34 && load_be16(&f[12]) == kMacControl && load_be16(&f[14]) == kPfcOpcode;
}

}  // namespace hcaemu::fabric
