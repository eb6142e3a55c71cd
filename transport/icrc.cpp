#include "transport/icrc.h"

#include "transport/ethernet.h"

#include <array>
#include <isa-l/crc.h>

#include <cstring>

#include "common/endian.h"
#include "transport/ib_opcodes.h"

namespace hcaemu::transport {
namespace {

constexpr uint32_t kIpv4MinHeaderSize = 20, kIpv4MaxHeaderSize = 60, kIpv6HeaderSize = 40;
constexpr uint32_t kUdpHeaderSize = 8;

// Offsets of the variant fields that the ICRC masks.
constexpr uint32_t kIpv4Tos = 1, kIpv4Ttl = 8, kIpv4Checksum = 10;
constexpr uint32_t kIpv6HopLimit = 7;  // traffic class + flow label: the low 28 bits of word 0
constexpr uint32_t kUdpChecksum = 6;
constexpr uint32_t kBthResv8a = 4;

}  // namespace

uint32_t icrc_of_ip_packet(std::span<const uint8_t> ip) {
  if (ip.empty()) return 0;
  const uint8_t version = ip[0] >> 4;
  uint32_t ip_header_size = 0;
  if (version == 4) {
    ip_header_size = uint32_t(ip[0] & 0x0f) * 4;
    if (ip_header_size < kIpv4MinHeaderSize) return 0;
  } else if (version == 6) {
    ip_header_size = kIpv6HeaderSize;
  } else {
    return 0;
  }
  const uint32_t masked_size = ip_header_size + kUdpHeaderSize + kBthSize;
  if (ip.size() < masked_size + kIcrcSize) return 0;

  // The headers with their variant fields masked, in a copy.
  std::array<uint8_t, kIpv4MaxHeaderSize + kUdpHeaderSize + kBthSize> masked;
  std::memcpy(masked.data(), ip.data(), masked_size);
  if (version == 4) {
    masked[kIpv4Tos] = 0xff;
    masked[kIpv4Ttl] = 0xff;
    masked[kIpv4Checksum] = 0xff;
    masked[kIpv4Checksum + 1] = 0xff;
  } else {
    masked[0] |= 0x0f;  // traffic class high nibble (the version nibble stays)
    masked[1] = 0xff;   // traffic class low nibble + flow label
    masked[2] = 0xff;
    masked[3] = 0xff;
    masked[kIpv6HopLimit] = 0xff;
  }
  uint8_t* udp = masked.data() + ip_header_size;
  udp[kUdpChecksum] = 0xff;
  udp[kUdpChecksum + 1] = 0xff;
  udp[kUdpHeaderSize + kBthResv8a] = 0xff;

  static constexpr std::array<uint8_t, 8> kLrhPlaceholder = {0xff, 0xff, 0xff, 0xff,
                                                             0xff, 0xff, 0xff, 0xff};
  // The ICRC is gzip's CRC-32 (reflected 0x04C11DB7, inverted in and out), chained over the three
  // pieces. ISA-L's crc32_gzip_refl folds with PCLMULQDQ (picked at run time for the CPU): the ICRC
  // of every packet, sent and received, was the engine's hottest loop (59% with zlib at MTU 4096).
  uint32_t crc = crc32_gzip_refl(0, kLrhPlaceholder.data(), kLrhPlaceholder.size());
  crc = crc32_gzip_refl(crc, masked.data(), masked_size);
  crc = crc32_gzip_refl(crc, ip.data() + masked_size, ip.size() - masked_size - kIcrcSize);
  return crc;
}

uint32_t compute_icrc(std::span<const uint8_t> frame) {
  const ethernet::Parsed p = ethernet::parse(frame);
  if (p.ip_version == 0 || p.truncated) return 0;  // the ICRC is where the IP length says
  return icrc_of_ip_packet(frame.subspan(p.l3_offset, p.l3_length));
}

}  // namespace hcaemu::transport
