// TCP segmentation offload: what mlx5e's LSO WQEs become on the wire.
#include <gtest/gtest.h>

#include "common/endian.h"
#include "model/eth/frame.h"

namespace hcaemu::model::frame {
namespace {

std::vector<uint8_t> tcp_frame(bool ipv6, uint32_t payload, uint8_t flags) {
  const uint32_t l3 = 14, ip_header = ipv6 ? 40 : 20, l4 = l3 + ip_header;
  std::vector<uint8_t> f(l4 + 20 + payload, 0);
  store_be16(&f[12], ipv6 ? 0x86dd : 0x0800);
  if (ipv6) {
    f[l3] = 0x60;
    store_be16(&f[l3 + 4], uint16_t(20 + payload));
    f[l3 + 6] = 6;
    f[l3 + 7] = 64;
  } else {
    f[l3] = 0x45;
    store_be16(&f[l3 + 2], uint16_t(20 + 20 + payload));
    store_be16(&f[l3 + 4], 0x1234);
    f[l3 + 8] = 64;
    f[l3 + 9] = 6;
  }
  store_be32(&f[l4 + 4], 1000);  // seq
  f[l4 + 12] = 5 << 4;
  f[l4 + 13] = flags;
  for (uint32_t i = 0; i < payload; ++i) f[l4 + 20 + i] = uint8_t(i * 7);
  return f;
}

TEST(Tso, Ipv4SegmentsCarrySequenceLengthsAndFlags) {
  auto f = tcp_frame(false, 2500, 0x18 | 0x80);  // PSH|ACK|CWR
  auto segs = segment_tcp(f, 1000);
  ASSERT_EQ(segs.size(), 3u);
  uint32_t total = 0;
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& s = segs[i];
    const uint32_t payload = uint32_t(s.size()) - 54;
    total += payload;
    EXPECT_EQ(load_be16(&s[16]), s.size() - 14) << "IPv4 total length";
    EXPECT_EQ(load_be16(&s[18]), 0x1234 + i) << "IPv4 ID";
    EXPECT_EQ(load_be32(&s[38]), 1000 + 1000 * i) << "sequence";
    EXPECT_EQ((s[47] & 0x08) != 0, i == 2) << "PSH only on the last";
    EXPECT_EQ((s[47] & 0x80) != 0, i == 0) << "CWR only on the first";
    std::vector<uint8_t> again = s;
    const Parsed p = parse(again);
    fill_ipv4_checksum(again, p);
    fill_l4_checksum(again, p);
    EXPECT_EQ(again, s) << "checksums already right";
  }
  EXPECT_EQ(total, 2500u);
  EXPECT_EQ(segs[2][54], uint8_t(2000 * 7)) << "payload bytes in order";
}

TEST(Tso, Ipv6PayloadLength) {
  auto segs = segment_tcp(tcp_frame(true, 3000, 0x10), 1440);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(load_be16(&segs[0][18]), 20 + 1440);
  EXPECT_EQ(load_be16(&segs[2][18]), 20 + 120);
}

TEST(Tso, RefusesWhatIsNotTcpOrHasNoMss) {
  auto udp = tcp_frame(false, 100, 0);
  udp[23] = 17;
  EXPECT_TRUE(segment_tcp(udp, 1000).empty());
  EXPECT_TRUE(segment_tcp(tcp_frame(false, 100, 0), 0).empty());
  std::vector<uint8_t> runt(20, 0);
  EXPECT_TRUE(segment_tcp(runt, 1000).empty());
}

}  // namespace
}  // namespace hcaemu::model::frame
