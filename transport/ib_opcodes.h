#pragma once
// InfiniBand transport opcodes (IBA Vol 1 9.2.1, table 38) and what follows the BTH for each: the
// one table that building, parsing and validation of packets consult. Also the AETH syndrome
// (IBA 9.7.5.2.2) and the 24-bit PSN arithmetic (IBA 9.7.1).
#include <array>
#include <cstdint>

namespace hcaemu::transport {

// ---- BTH opcodes: bits 7:5 transport (000 RC, 001 UC, 011 UD), bits 4:0 the operation ----
namespace opcode {
inline constexpr uint8_t kRcSendFirst = 0x00;
inline constexpr uint8_t kRcSendMiddle = 0x01;
inline constexpr uint8_t kRcSendLast = 0x02;
inline constexpr uint8_t kRcSendLastImm = 0x03;
inline constexpr uint8_t kRcSendOnly = 0x04;
inline constexpr uint8_t kRcSendOnlyImm = 0x05;
inline constexpr uint8_t kRcRdmaWriteFirst = 0x06;
inline constexpr uint8_t kRcRdmaWriteMiddle = 0x07;
inline constexpr uint8_t kRcRdmaWriteLast = 0x08;
inline constexpr uint8_t kRcRdmaWriteLastImm = 0x09;
inline constexpr uint8_t kRcRdmaWriteOnly = 0x0a;
inline constexpr uint8_t kRcRdmaWriteOnlyImm = 0x0b;
inline constexpr uint8_t kRcRdmaReadRequest = 0x0c;
inline constexpr uint8_t kRcRdmaReadResponseFirst = 0x0d;
inline constexpr uint8_t kRcRdmaReadResponseMiddle = 0x0e;
inline constexpr uint8_t kRcRdmaReadResponseLast = 0x0f;
inline constexpr uint8_t kRcRdmaReadResponseOnly = 0x10;
inline constexpr uint8_t kRcAcknowledge = 0x11;
inline constexpr uint8_t kRcAtomicAcknowledge = 0x12;
inline constexpr uint8_t kRcCompareSwap = 0x13;
inline constexpr uint8_t kRcFetchAdd = 0x14;
// 0x15 is reserved for RC (RESYNC exists for RD only).
inline constexpr uint8_t kRcSendLastInvalidate = 0x16;
inline constexpr uint8_t kRcSendOnlyInvalidate = 0x17;

// UC: the SEND and RDMA WRITE subset of RC, same layouts, transport bits 001.
inline constexpr uint8_t kUcSendFirst = 0x20;
inline constexpr uint8_t kUcSendMiddle = 0x21;
inline constexpr uint8_t kUcSendLast = 0x22;
inline constexpr uint8_t kUcSendLastImm = 0x23;
inline constexpr uint8_t kUcSendOnly = 0x24;
inline constexpr uint8_t kUcSendOnlyImm = 0x25;
inline constexpr uint8_t kUcRdmaWriteFirst = 0x26;
inline constexpr uint8_t kUcRdmaWriteMiddle = 0x27;
inline constexpr uint8_t kUcRdmaWriteLast = 0x28;
inline constexpr uint8_t kUcRdmaWriteLastImm = 0x29;
inline constexpr uint8_t kUcRdmaWriteOnly = 0x2a;
inline constexpr uint8_t kUcRdmaWriteOnlyImm = 0x2b;

inline constexpr uint8_t kUdSendOnly = 0x64;
inline constexpr uint8_t kUdSendOnlyImm = 0x65;

// XRC (IBA Annex A14): every RC opcode again at 0xa0 + the RC value; requests carry an XRCETH.
inline constexpr uint8_t kXrcBase = 0xa0;
// DC (Dynamically Connected, Mellanox's own transport; its wire format is not public): hcaemu's
// encoding takes the manufacturer-specific opcodes (IBA table 38: 0xc0-0xff), every RC opcode again
// at 0xc0 + the RC value, and its requests carry a DCETH (below). transport/README.md says so.
inline constexpr uint8_t kDcBase = 0xc0;

// RoCEv2 congestion notification packet (IBA Annex A17, 'CNP'): BTH to the QP that sent the
// ECN-marked packet, 16 reserved bytes, ICRC. DCQCN's notification to the sender.
inline constexpr uint8_t kCnp = 0x81;
inline constexpr uint32_t kCnpPayloadSize = 16;
}  // namespace opcode

// ---- Extension header sizes (IBA 9.3) ----
inline constexpr uint32_t kBthSize = 12;
inline constexpr uint32_t kRethSize = 16;
inline constexpr uint32_t kAethSize = 4;
inline constexpr uint32_t kAtomicEthSize = 28;
inline constexpr uint32_t kAtomicAckEthSize = 8;
inline constexpr uint32_t kImmDtSize = 4;
inline constexpr uint32_t kIethSize = 4;
inline constexpr uint32_t kDethSize = 8;
inline constexpr uint32_t kXrcethSize = 4;
// DCETH (hcaemu's DC encoding): the DC access key (8 bytes), a flags byte (bit 7: this request
// opens the connection, its PSN the first of it) and the initiator's DCI number (24 bits).
inline constexpr uint32_t kDcethSize = 12;
inline constexpr uint32_t kIcrcSize = 4;

// ---- What an opcode carries: headers_of() bits ----
namespace hdr {
inline constexpr uint16_t kReth = 1u << 0;
inline constexpr uint16_t kAeth = 1u << 1;
inline constexpr uint16_t kAtomicEth = 1u << 2;
inline constexpr uint16_t kAtomicAckEth = 1u << 3;
inline constexpr uint16_t kImmDt = 1u << 4;
inline constexpr uint16_t kIeth = 1u << 5;
inline constexpr uint16_t kDeth = 1u << 6;
inline constexpr uint16_t kPayload = 1u << 7;   // a payload (possibly empty) may follow the headers
inline constexpr uint16_t kFirst = 1u << 8;     // first packet of a message (Only = kFirst | kLast)
inline constexpr uint16_t kMiddle = 1u << 9;
inline constexpr uint16_t kLast = 1u << 10;
inline constexpr uint16_t kResponse = 1u << 11; // responder -> requester (ACK, read response, atomic ACK)
inline constexpr uint16_t kXrceth = 1u << 12;   // XRC requests: the target's XRC SRQ number
inline constexpr uint16_t kDceth = 1u << 13;    // DC requests: access key, connect flag, DCI number
inline constexpr uint16_t kKnown = 1u << 15;    // the opcode is one this model speaks
}  // namespace hdr

namespace detail {
// One row per opcode: the headers after the BTH and the packet's place in its message.
constexpr std::array<uint16_t, 256> make_opcode_table() {
  using namespace hdr;
  std::array<uint16_t, 256> t{};
  constexpr uint16_t kOnly = kFirst | kLast;
  // SEND and RDMA WRITE, shared by RC (base 0x00) and UC (base 0x20).
  for (uint8_t base : {uint8_t(0x00), uint8_t(0x20)}) {
    t[base + 0x00] = kPayload | kFirst;
    t[base + 0x01] = kPayload | kMiddle;
    t[base + 0x02] = kPayload | kLast;
    t[base + 0x03] = kPayload | kLast | kImmDt;
    t[base + 0x04] = kPayload | kOnly;
    t[base + 0x05] = kPayload | kOnly | kImmDt;
    t[base + 0x06] = kPayload | kFirst | kReth;
    t[base + 0x07] = kPayload | kMiddle;
    t[base + 0x08] = kPayload | kLast;
    t[base + 0x09] = kPayload | kLast | kImmDt;
    t[base + 0x0a] = kPayload | kOnly | kReth;
    t[base + 0x0b] = kPayload | kOnly | kReth | kImmDt;
  }
  // RC only.
  t[0x0c] = kOnly | kReth;                                 // RDMA READ request: no payload
  t[0x0d] = kPayload | kFirst | kResponse | kAeth;         // READ response first
  t[0x0e] = kPayload | kMiddle | kResponse;                // READ response middle: no AETH
  t[0x0f] = kPayload | kLast | kResponse | kAeth;
  t[0x10] = kPayload | kOnly | kResponse | kAeth;
  t[0x11] = kOnly | kResponse | kAeth;                     // ACK / NAK
  t[0x12] = kOnly | kResponse | kAeth | kAtomicAckEth;     // ATOMIC ACK
  t[0x13] = kOnly | kAtomicEth;                            // CmpSwap
  t[0x14] = kOnly | kAtomicEth;                            // FetchAdd
  t[0x16] = kPayload | kLast | kIeth;                      // SEND last with invalidate
  t[0x17] = kPayload | kOnly | kIeth;                      // SEND only with invalidate
  // XRC: RC's rows at 0xa0; requests add the XRCETH, responses are RC's.
  for (uint8_t op = 0x00; op <= 0x17; ++op) {
    if (t[op] != 0) t[opcode::kXrcBase + op] = uint16_t(t[op] | ((t[op] & kResponse) ? 0 : kXrceth));
  }
  // DC: RC's rows at 0xc0; requests add the DCETH, responses are RC's.
  for (uint8_t op = 0x00; op <= 0x17; ++op) {
    if (t[op] != 0) t[opcode::kDcBase + op] = uint16_t(t[op] | ((t[op] & kResponse) ? 0 : kDceth));
  }
  t[opcode::kCnp] = kPayload | kOnly;  // 16 reserved bytes as its payload
  // UD.
  t[0x64] = kPayload | kOnly | kDeth;
  t[0x65] = kPayload | kOnly | kDeth | kImmDt;
  for (auto& row : t) {
    if (row != 0) row |= kKnown;
  }
  return t;
}
inline constexpr std::array<uint16_t, 256> kOpcodeTable = make_opcode_table();
}  // namespace detail

// The hdr:: bits of an opcode; 0 for an opcode this model does not know.
constexpr uint16_t headers_of(uint8_t op) { return detail::kOpcodeTable[op]; }
constexpr bool is_known_opcode(uint8_t op) { return (headers_of(op) & hdr::kKnown) != 0; }
constexpr bool carries(uint8_t op, uint16_t bits) { return (headers_of(op) & bits) == bits; }

// Bytes of extension headers between the BTH and the payload.
constexpr uint32_t extension_headers_size(uint8_t op) {
  const uint16_t h = headers_of(op);
  uint32_t n = 0;
  if (h & hdr::kDeth) n += kDethSize;
  if (h & hdr::kXrceth) n += kXrcethSize;
  if (h & hdr::kDceth) n += kDcethSize;
  if (h & hdr::kReth) n += kRethSize;
  if (h & hdr::kAtomicEth) n += kAtomicEthSize;
  if (h & hdr::kAeth) n += kAethSize;
  if (h & hdr::kAtomicAckEth) n += kAtomicAckEthSize;
  if (h & hdr::kImmDt) n += kImmDtSize;
  if (h & hdr::kIeth) n += kIethSize;
  return n;
}

// An XRC opcode's name (0xa0-0xb7), or a DC one's (0xc0-0xd7: "DC_" and RC's name without "RC_").
constexpr const char* xrc_opcode_name(uint8_t op) {
  constexpr const char* kDcNames[0x18] = {
      "DC_SEND_FIRST", "DC_SEND_MIDDLE", "DC_SEND_LAST", "DC_SEND_LAST_IMM", "DC_SEND_ONLY",
      "DC_SEND_ONLY_IMM", "DC_RDMA_WRITE_FIRST", "DC_RDMA_WRITE_MIDDLE", "DC_RDMA_WRITE_LAST",
      "DC_RDMA_WRITE_LAST_IMM", "DC_RDMA_WRITE_ONLY", "DC_RDMA_WRITE_ONLY_IMM", "DC_RDMA_READ_REQUEST",
      "DC_RDMA_READ_RESPONSE_FIRST", "DC_RDMA_READ_RESPONSE_MIDDLE", "DC_RDMA_READ_RESPONSE_LAST",
      "DC_RDMA_READ_RESPONSE_ONLY", "DC_ACKNOWLEDGE", "DC_ATOMIC_ACKNOWLEDGE", "DC_COMPARE_SWAP",
      "DC_FETCH_ADD", "UNKNOWN", "DC_SEND_LAST_INV", "DC_SEND_ONLY_INV"};
  if (op >= opcode::kDcBase && op < opcode::kDcBase + 0x18) return kDcNames[op - opcode::kDcBase];
  constexpr const char* kNames[0x18] = {
      "XRC_SEND_FIRST", "XRC_SEND_MIDDLE", "XRC_SEND_LAST", "XRC_SEND_LAST_IMM", "XRC_SEND_ONLY",
      "XRC_SEND_ONLY_IMM", "XRC_RDMA_WRITE_FIRST", "XRC_RDMA_WRITE_MIDDLE", "XRC_RDMA_WRITE_LAST",
      "XRC_RDMA_WRITE_LAST_IMM", "XRC_RDMA_WRITE_ONLY", "XRC_RDMA_WRITE_ONLY_IMM", "XRC_RDMA_READ_REQUEST",
      "XRC_RDMA_READ_RESPONSE_FIRST", "XRC_RDMA_READ_RESPONSE_MIDDLE", "XRC_RDMA_READ_RESPONSE_LAST",
      "XRC_RDMA_READ_RESPONSE_ONLY", "XRC_ACKNOWLEDGE", "XRC_ATOMIC_ACKNOWLEDGE", "XRC_COMPARE_SWAP",
      "XRC_FETCH_ADD", "UNKNOWN", "XRC_SEND_LAST_INV", "XRC_SEND_ONLY_INV"};
  return op >= opcode::kXrcBase && op < opcode::kXrcBase + 0x18 ? kNames[op - opcode::kXrcBase] : "UNKNOWN";
}

// Short name for logs ("RC_SEND_ONLY"); "UNKNOWN" for an opcode this model does not know.
constexpr const char* opcode_name(uint8_t op) {
  switch (op) {
    case opcode::kRcSendFirst: return "RC_SEND_FIRST";
    case opcode::kRcSendMiddle: return "RC_SEND_MIDDLE";
    case opcode::kRcSendLast: return "RC_SEND_LAST";
    case opcode::kRcSendLastImm: return "RC_SEND_LAST_IMM";
    case opcode::kRcSendOnly: return "RC_SEND_ONLY";
    case opcode::kRcSendOnlyImm: return "RC_SEND_ONLY_IMM";
    case opcode::kRcRdmaWriteFirst: return "RC_RDMA_WRITE_FIRST";
    case opcode::kRcRdmaWriteMiddle: return "RC_RDMA_WRITE_MIDDLE";
    case opcode::kRcRdmaWriteLast: return "RC_RDMA_WRITE_LAST";
    case opcode::kRcRdmaWriteLastImm: return "RC_RDMA_WRITE_LAST_IMM";
    case opcode::kRcRdmaWriteOnly: return "RC_RDMA_WRITE_ONLY";
    case opcode::kRcRdmaWriteOnlyImm: return "RC_RDMA_WRITE_ONLY_IMM";
    case opcode::kRcRdmaReadRequest: return "RC_RDMA_READ_REQUEST";
    case opcode::kRcRdmaReadResponseFirst: return "RC_RDMA_READ_RESPONSE_FIRST";
    case opcode::kRcRdmaReadResponseMiddle: return "RC_RDMA_READ_RESPONSE_MIDDLE";
    case opcode::kRcRdmaReadResponseLast: return "RC_RDMA_READ_RESPONSE_LAST";
    case opcode::kRcRdmaReadResponseOnly: return "RC_RDMA_READ_RESPONSE_ONLY";
    case opcode::kRcAcknowledge: return "RC_ACKNOWLEDGE";
    case opcode::kRcAtomicAcknowledge: return "RC_ATOMIC_ACKNOWLEDGE";
    case opcode::kRcCompareSwap: return "RC_COMPARE_SWAP";
    case opcode::kRcFetchAdd: return "RC_FETCH_ADD";
    case opcode::kRcSendLastInvalidate: return "RC_SEND_LAST_INV";
    case opcode::kRcSendOnlyInvalidate: return "RC_SEND_ONLY_INV";
    case opcode::kUcSendFirst: return "UC_SEND_FIRST";
    case opcode::kUcSendMiddle: return "UC_SEND_MIDDLE";
    case opcode::kUcSendLast: return "UC_SEND_LAST";
    case opcode::kUcSendLastImm: return "UC_SEND_LAST_IMM";
    case opcode::kUcSendOnly: return "UC_SEND_ONLY";
    case opcode::kUcSendOnlyImm: return "UC_SEND_ONLY_IMM";
    case opcode::kUcRdmaWriteFirst: return "UC_RDMA_WRITE_FIRST";
    case opcode::kUcRdmaWriteMiddle: return "UC_RDMA_WRITE_MIDDLE";
    case opcode::kUcRdmaWriteLast: return "UC_RDMA_WRITE_LAST";
    case opcode::kUcRdmaWriteLastImm: return "UC_RDMA_WRITE_LAST_IMM";
    case opcode::kUcRdmaWriteOnly: return "UC_RDMA_WRITE_ONLY";
    case opcode::kUcRdmaWriteOnlyImm: return "UC_RDMA_WRITE_ONLY_IMM";
    case opcode::kUdSendOnly: return "UD_SEND_ONLY";
    case opcode::kUdSendOnlyImm: return "UD_SEND_ONLY_IMM";
    case opcode::kCnp: return "CNP";
    default:
      // XRC opcodes are named by their RC twin ("XRC" in place of "RC").
      return is_known_opcode(op) ? xrc_opcode_name(op) : "UNKNOWN";
  }
}

// ---- AETH syndrome (IBA 9.7.5.2.2): bit 7 reserved, bits 6:5 type, bits 4:0 value ----
enum class AethType : uint8_t { kAck = 0, kRnrNak = 1, kReserved = 2, kNak = 3 };
enum class NakCode : uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
  kInvalidRdRequest = 4,
};
inline constexpr uint8_t kAethCreditsInvalid = 0x1f;  // ACK without end-to-end credit information

constexpr uint8_t aeth_ack(uint8_t credits) { return uint8_t(credits & 0x1f); }
constexpr uint8_t aeth_rnr_nak(uint8_t timer) { return uint8_t(0x20 | (timer & 0x1f)); }
constexpr uint8_t aeth_nak(NakCode code) { return uint8_t(0x60 | (uint8_t(code) & 0x1f)); }
constexpr AethType aeth_type(uint8_t syndrome) { return AethType((syndrome >> 5) & 0x3); }
// The credit count (ACK), the RNR timer (RNR NAK) or the NAK code (NAK).
constexpr uint8_t aeth_value(uint8_t syndrome) { return uint8_t(syndrome & 0x1f); }
constexpr bool aeth_is_ack(uint8_t syndrome) { return aeth_type(syndrome) == AethType::kAck; }

// ---- PSN arithmetic: 24-bit sequence numbers compared within half the window (IBA 9.7.1) ----
inline constexpr uint32_t kPsnMask = 0xffffff;
constexpr uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }
// a - b as a signed distance in [-2^23, 2^23): > 0 when a is after b, < 0 when before.
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
  const uint32_t d = ((a - b) & kPsnMask) << 8;  // the 24-bit difference in the top bits
  return int32_t(d) >> 8;                        // arithmetic shift sign-extends (C++20)
}

}  // namespace hcaemu::transport
