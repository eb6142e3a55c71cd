#pragma once
// A well-formed RoCEv2 request over IPv4 as a hostile tenant builds it (hca_tenant_probe): right
// lengths, IP checksum and ICRC, so only the device's own checks can stop it. Plain C (the probe
// runs in the guest); the host test builds it as C++ against hcaemu's parser.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ROCE_PORT 4791

static inline uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t size) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

static inline uint16_t ipv4_checksum(const uint8_t* header) {
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (uint32_t)(header[i] << 8 | header[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

static inline void put16(uint8_t* p, uint32_t v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }
static inline void put32(uint8_t* p, uint32_t v) { put16(p, v >> 16), put16(p + 2, v); }

// One RoCEv2 request over IPv4: BTH, then RETH (WRITE) or DETH (UD), 64 bytes of payload, ICRC.
static inline size_t build_request(uint8_t* f, const uint8_t dst_mac[6], const uint8_t src_mac[6], uint32_t dst_ip,
                            uint32_t src_ip, uint8_t opcode, uint32_t qpn, uint32_t psn) {
  const int write = (opcode & 0x1f) == 0x0a, ud = opcode == 0x64;
  const size_t payload = 64, ext = write ? 16 : ud ? 8 : 0;
  const size_t ip_size = 20 + 8 + 12 + ext + payload + 4;
  memcpy(f, dst_mac, 6);
  memcpy(f + 6, src_mac, 6);
  put16(f + 12, 0x0800);
  uint8_t* ip = f + 14;
  memset(ip, 0, 20);
  ip[0] = 0x45;
  put16(ip + 2, (uint32_t)ip_size);
  ip[6] = 0x40;  // don't fragment
  ip[8] = 64;
  ip[9] = 17;
  put32(ip + 12, src_ip);
  put32(ip + 16, dst_ip);
  put16(ip + 10, ipv4_checksum(ip));
  uint8_t* udp = ip + 20;
  put16(udp, 0xc000 | (qpn & 0x3fff));
  put16(udp + 2, ROCE_PORT);
  put16(udp + 4, (uint32_t)(ip_size - 20));
  put16(udp + 6, 0);
  uint8_t* bth = udp + 8;
  bth[0] = opcode;
  bth[1] = 0;  // no solicited event, no pad, transport version 0
  put16(bth + 2, 0xffff);
  put32(bth + 4, qpn & 0xffffff);
  put32(bth + 8, psn & 0xffffff);
  uint8_t* p = bth + 12;
  if (write) {
    put32(p, 0x7f000000), put32(p + 4, 0x00001000);  // a guessed virtual address
    put32(p + 8, 0x00000100 | (qpn & 0xff));          // and rkey
    put32(p + 12, (uint32_t)payload);
  } else if (ud) {
    put32(p, 0x80010000), put32(p + 4, 1);  // the GSI Q_Key and a source QP
  }
  memset(p + ext, 0xee, payload);
  // ICRC: CRC-32 over 8 bytes of ones (the LRH a RoCEv2 packet lacks) and the IP packet with its
  // variant fields (TOS, TTL, IP and UDP checksums, BTH resv8a) masked to ones; little-endian.
  uint8_t masked[20 + 8 + 12];
  memcpy(masked, ip, sizeof masked);
  masked[1] = 0xff, masked[8] = 0xff, masked[10] = 0xff, masked[11] = 0xff;
  masked[20 + 6] = 0xff, masked[20 + 7] = 0xff;
  masked[28 + 4] = 0xff;
  static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  uint32_t crc = crc32_update(0, ones, 8);
  crc = crc32_update(crc, masked, sizeof masked);
  crc = crc32_update(crc, ip + sizeof masked, ip_size - sizeof masked - 4);
  uint8_t* icrc = ip + ip_size - 4;
  icrc[0] = (uint8_t)crc, icrc[1] = (uint8_t)(crc >> 8), icrc[2] = (uint8_t)(crc >> 16), icrc[3] = (uint8_t)(crc >> 24);
  return 14 + ip_size;
}
