// The isolation matrix's attacker sends RoCEv2 requests built by roce_request.h. They must be
// well-formed (lengths, IP checksum, ICRC) for the test to mean anything: hcaemu's parser takes
// each opcode the probe sends, with the QPN, PSN and addresses it was given.
#include <gtest/gtest.h>

#include "roce_request.h"
#include "transport/roce_packet.h"

namespace hcaemu::transport {
namespace {

TEST(TenantProbeFrames, EveryRequestParsesWithARightIcrc) {
  const uint8_t dst_mac[6] = {2, 0xc9, 0, 0, 0, 1}, src_mac[6] = {2, 0xc9, 0, 0, 0, 3};
  for (uint8_t opcode : {0x04, 0x0a, 0x24, 0x2a, 0x64}) {
    uint8_t frame[256];
    const size_t size = build_request(frame, dst_mac, src_mac, 0x0a090001, 0x0a090002, opcode, 0x1234, 0xfffffe);
    const ParseResult parsed = parse_frame({frame, size});
    ASSERT_EQ(parsed.error, ParseError::kNone) << "opcode " << int(opcode);
    EXPECT_EQ(parsed.packet.opcode, opcode);
    EXPECT_EQ(parsed.packet.dest_qp, 0x1234u);
    EXPECT_EQ(parsed.packet.psn, 0xfffffeu);
    EXPECT_EQ(parsed.packet.src_gid, gid_from_ipv4(0x0a090002));
    EXPECT_EQ(parsed.packet.dst_gid, gid_from_ipv4(0x0a090001));
    EXPECT_EQ(parsed.packet.src_mac, (Mac{2, 0xc9, 0, 0, 0, 3}));
    EXPECT_EQ(parsed.packet.payload.size(), 64u);
    frame[size - 10] ^= 1;  // one payload bit: the ICRC no longer holds
    EXPECT_EQ(parse_frame({frame, size}).error, ParseError::kBadIcrc);
  }
}

}  // namespace
}  // namespace hcaemu::transport
