// The opcode table, AETH syndromes and PSN arithmetic of ib_opcodes.h.
#include "transport/ib_opcodes.h"

#include <gtest/gtest.h>

#include <string>

namespace hcaemu::transport {
namespace {

using namespace hdr;

TEST(IbOpcodes, TableMatchesIbaTable38) {
  // IBA Vol 1 9.2.1 / 9.3: the headers each RC opcode carries after the BTH.
  struct Row { uint8_t op; uint16_t headers; bool payload; };
  const Row rows[] = {
      {opcode::kRcSendFirst, 0, true},
      {opcode::kRcSendMiddle, 0, true},
      {opcode::kRcSendLast, 0, true},
      {opcode::kRcSendLastImm, kImmDt, true},
      {opcode::kRcSendOnly, 0, true},
      {opcode::kRcSendOnlyImm, kImmDt, true},
      {opcode::kRcRdmaWriteFirst, kReth, true},
      {opcode::kRcRdmaWriteMiddle, 0, true},
      {opcode::kRcRdmaWriteLast, 0, true},
      {opcode::kRcRdmaWriteLastImm, kImmDt, true},
      {opcode::kRcRdmaWriteOnly, kReth, true},
      {opcode::kRcRdmaWriteOnlyImm, kReth | kImmDt, true},
      {opcode::kRcRdmaReadRequest, kReth, false},
      {opcode::kRcRdmaReadResponseFirst, kAeth, true},
      {opcode::kRcRdmaReadResponseMiddle, 0, true},
      {opcode::kRcRdmaReadResponseLast, kAeth, true},
      {opcode::kRcRdmaReadResponseOnly, kAeth, true},
      {opcode::kRcAcknowledge, kAeth, false},
      {opcode::kRcAtomicAcknowledge, kAeth | kAtomicAckEth, false},
      {opcode::kRcCompareSwap, kAtomicEth, false},
      {opcode::kRcFetchAdd, kAtomicEth, false},
      {opcode::kRcSendLastInvalidate, kIeth, true},
      {opcode::kRcSendOnlyInvalidate, kIeth, true},
      {opcode::kUdSendOnly, kDeth, true},
      {opcode::kUdSendOnlyImm, kDeth | kImmDt, true},
  };
  constexpr uint16_t kHeaderBits = kReth | kAeth | kAtomicEth | kAtomicAckEth | kImmDt | kIeth | kDeth;
  for (const Row& r : rows) {
    SCOPED_TRACE(opcode_name(r.op));
    EXPECT_TRUE(is_known_opcode(r.op));
    EXPECT_EQ(headers_of(r.op) & kHeaderBits, r.headers);
    EXPECT_EQ((headers_of(r.op) & kPayload) != 0, r.payload);
    EXPECT_STRNE(opcode_name(r.op), "UNKNOWN");
  }
  // UC mirrors RC's SEND/WRITE rows.
  for (uint8_t op = 0; op <= 0x0b; ++op) {
    EXPECT_EQ(headers_of(uint8_t(0x20 | op)), headers_of(op)) << int(op);
  }
  // XRC (Annex A14) mirrors every RC row at 0xa0; its requests carry an XRCETH, its responses not.
  for (uint8_t op = 0; op <= 0x17; ++op) {
    const uint8_t xrc = uint8_t(opcode::kXrcBase + op);
    EXPECT_EQ(is_known_opcode(xrc), is_known_opcode(op)) << int(op);
    if (!is_known_opcode(op)) continue;
    const bool response = carries(op, kResponse);
    EXPECT_EQ(headers_of(xrc), uint16_t(headers_of(op) | (response ? 0 : kXrceth))) << int(op);
    EXPECT_EQ(extension_headers_size(xrc), extension_headers_size(op) + (response ? 0 : kXrcethSize)) << int(op);
    EXPECT_EQ(std::string(opcode_name(xrc)), "X" + std::string(opcode_name(op))) << int(op);
  }
  // DC (hcaemu's encoding in the manufacturer-specific range) mirrors every RC row at 0xc0; its
  // requests carry a DCETH, its responses not.
  for (uint8_t op = 0; op <= 0x17; ++op) {
    const uint8_t dc = uint8_t(opcode::kDcBase + op);
    EXPECT_EQ(is_known_opcode(dc), is_known_opcode(op)) << int(op);
    if (!is_known_opcode(op)) continue;
    const bool response = carries(op, kResponse);
    EXPECT_EQ(headers_of(dc), uint16_t(headers_of(op) | (response ? 0 : kDceth))) << int(op);
    EXPECT_EQ(extension_headers_size(dc), extension_headers_size(op) + (response ? 0 : kDcethSize)) << int(op);
    EXPECT_EQ(std::string(opcode_name(dc)), "DC_" + std::string(opcode_name(op)).substr(3)) << int(op);
  }
  EXPECT_FALSE(is_known_opcode(0xd5));  // RC's reserved 0x15
  EXPECT_FALSE(is_known_opcode(0xd8));
  EXPECT_FALSE(is_known_opcode(0xe0));
  EXPECT_FALSE(is_known_opcode(0xb5));  // RC's reserved 0x15
  EXPECT_FALSE(is_known_opcode(0x15));  // reserved for RC
  EXPECT_FALSE(is_known_opcode(0x18));
  EXPECT_FALSE(is_known_opcode(0x2c));  // UC has no READ
  EXPECT_FALSE(is_known_opcode(0x4c));  // RD is not modelled
  EXPECT_TRUE(is_known_opcode(0x81));  // CNP (DCQCN): 16 reserved bytes after the BTH
  EXPECT_STREQ(opcode_name(0x81), "CNP");
  EXPECT_EQ(headers_of(0xff), 0);  // manufacturer-specific beyond DC's rows
  EXPECT_STREQ(opcode_name(0x15), "UNKNOWN");
}

TEST(IbOpcodes, MessagePlaceAndDirection) {
  EXPECT_TRUE(carries(opcode::kRcSendOnly, kFirst | kLast));
  EXPECT_TRUE(carries(opcode::kRcRdmaWriteFirst, kFirst));
  EXPECT_FALSE(carries(opcode::kRcRdmaWriteFirst, kLast));
  EXPECT_TRUE(carries(opcode::kRcRdmaWriteMiddle, kMiddle));
  EXPECT_TRUE(carries(opcode::kRcRdmaReadResponseLast, kLast | kResponse));
  EXPECT_TRUE(carries(opcode::kRcAcknowledge, kResponse));
  EXPECT_FALSE(carries(opcode::kRcRdmaReadRequest, kResponse));
  EXPECT_FALSE(carries(opcode::kRcCompareSwap, kResponse));
}

TEST(IbOpcodes, ExtensionHeaderSizes) {
  EXPECT_EQ(extension_headers_size(opcode::kRcSendOnly), 0u);
  EXPECT_EQ(extension_headers_size(opcode::kRcRdmaWriteOnlyImm), 20u);
  EXPECT_EQ(extension_headers_size(opcode::kRcRdmaReadRequest), 16u);
  EXPECT_EQ(extension_headers_size(opcode::kRcAtomicAcknowledge), 12u);
  EXPECT_EQ(extension_headers_size(opcode::kRcCompareSwap), 28u);
  EXPECT_EQ(extension_headers_size(opcode::kUdSendOnlyImm), 12u);
  EXPECT_EQ(extension_headers_size(opcode::kRcSendOnlyInvalidate), 4u);
}

TEST(IbOpcodes, AethSyndromes) {
  // IBA 9.7.5.2.2: bits 6:5 type, 4:0 credits / RNR timer / NAK code.
  static_assert(aeth_ack(5) == 0x05);
  static_assert(aeth_rnr_nak(0x12) == 0x32);
  static_assert(aeth_nak(NakCode::kPsnSequenceError) == 0x60);
  static_assert(aeth_nak(NakCode::kInvalidRequest) == 0x61);
  static_assert(aeth_nak(NakCode::kRemoteAccessError) == 0x62);
  static_assert(aeth_nak(NakCode::kRemoteOperationalError) == 0x63);
  EXPECT_EQ(aeth_ack(kAethCreditsInvalid), 0x1f);
  EXPECT_EQ(aeth_type(aeth_ack(31)), AethType::kAck);
  EXPECT_TRUE(aeth_is_ack(aeth_ack(0)));
  EXPECT_EQ(aeth_type(aeth_rnr_nak(1)), AethType::kRnrNak);
  EXPECT_EQ(aeth_value(aeth_rnr_nak(0x1f)), 0x1f);
  EXPECT_EQ(aeth_type(aeth_nak(NakCode::kRemoteAccessError)), AethType::kNak);
  EXPECT_EQ(NakCode(aeth_value(aeth_nak(NakCode::kRemoteAccessError))), NakCode::kRemoteAccessError);
  EXPECT_FALSE(aeth_is_ack(aeth_nak(NakCode::kPsnSequenceError)));
  EXPECT_EQ(aeth_type(0x40), AethType::kReserved);
  EXPECT_EQ(aeth_ack(0x25), 0x05);  // out-of-range credit counts are cut to 5 bits
}

TEST(IbOpcodes, PsnArithmeticWrapsAt24Bits) {
  static_assert(psn_add(0xffffff, 1) == 0);
  static_assert(psn_add(0xfffffe, 5) == 3);
  static_assert(psn_diff(5, 3) == 2);
  static_assert(psn_diff(3, 5) == -2);
  static_assert(psn_diff(0, 0xffffff) == 1);
  static_assert(psn_diff(0xffffff, 0) == -1);
  EXPECT_EQ(psn_diff(0x7fffff, 0), 0x7fffff);    // the furthest "after"
  EXPECT_EQ(psn_diff(0x800000, 0), -0x800000);   // half the window away counts as "before"
  EXPECT_EQ(psn_diff(100, 100), 0);
  EXPECT_EQ(psn_diff(0x1000005, 3), 2);  // bits above 24 are ignored
  for (uint32_t a : {0u, 1u, 0x7ffffeu, 0xfffff0u}) {
    for (uint32_t n : {0u, 1u, 17u, 0x7fffffu}) {
      EXPECT_EQ(psn_diff(psn_add(a, n), a), int32_t(n)) << a << " + " << n;
    }
  }
}

}  // namespace
}  // namespace hcaemu::transport
