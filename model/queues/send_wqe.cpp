// Send WQE parsing (mlx5-device-bringup.md section 7.3). One table says, per opcode, which
// service types may post it and which segments follow the control segment; the parser walks
// the segments in that order and checks every length against ds before reading.
//
// Why the decisions in queues/send_wqe.h:
// - byte_count 0 = 2 GiB: the PRM defines it so for data pointer segments, and it is why libmlx5
//   (post_send and the ibv_wr_* setters) and mlx5_ib skip zero-length SGEs instead of writing
//   them. A guest that writes one anyway asks for 2^31 bytes, which the MKEY bounds then judge.
// - Inline data: libmlx5 writes one inline segment per WQE (the SGEs copied back to back, the
//   copy continuing at the start of the ring when it reaches the end; the caller unwraps the
//   ring, so the segment is contiguous here). Several inline segments are accepted and
//   concatenated; inline segments mixed with data segments are refused (kBadInline), since
//   neither driver writes that and the message order would be ambiguous in SendWqe.
// - The datagram segment is always the 48-byte extended address vector: libmlx5 and mlx5_ib
//   always write it whole and set MLX5_EXTENDED_UD_AV. A clear bit is recorded, not refused.
#include "model/queues/send_wqe.h"

#include "common/endian.h"
#include "model/objects/resources.h"

namespace hcaemu::model {
namespace {

using namespace wqe_format;

// Control segment (mlx5_wqe_ctrl_seg).
constexpr uint32_t kCtrlOpmod = 0, kCtrlWqeIndex = 1, kCtrlOpcode = 3, kCtrlQpnDs = 4, kCtrlStream = 9, kCtrlFmCeSe = 11,
                   kCtrlImm = 12;
constexpr uint8_t kDsMask = 0x3f;
constexpr uint8_t kCeMask = 0x0c;
// Remote address segment: raddr BE64, rkey BE32, reserved.
constexpr uint32_t kRaddrSize = 16, kRaddrVa = 0, kRaddrRkey = 8;
// Atomic segment: swap_add BE64, compare BE64.
constexpr uint32_t kAtomicSize = 16, kAtomicSwapAdd = 0, kAtomicCompare = 8;
// XRC segment: xrc_srqn BE32 [23:0], reserved.
constexpr uint32_t kXrcSize = 16;
// Datagram segment (mlx5_wqe_av).
namespace av {
constexpr uint32_t kQkey = 0x00, kDqpDct = 0x08, kStatRateSl = 0x0c, kFlMlid = 0x0d, kRlid = 0x0e, kRmac = 0x14,
                   kTclass = 0x1a, kHopLimit = 0x1b, kGrhGidFl = 0x1c, kRgid = 0x20;
constexpr uint32_t kExtended = 0x80000000u, kGrh = 1u << 30;
}  // namespace av
// Data segment (mlx5_wqe_data_seg): byte_count BE32, lkey BE32, addr BE64.
constexpr uint32_t kDataByteCount = 0, kDataLkey = 4, kDataAddr = 8;
constexpr uint32_t kAtomicAlign = 8;
constexpr uint32_t kQpnMask = 0xffffff;

// Service types as bits, so the opcode table can say where an opcode is allowed.
enum : uint8_t { kSvcRc = 1, kSvcUc = 2, kSvcUd = 4, kSvcXrc = 8, kSvcQp1 = 16, kSvcDci = 32 };
constexpr uint8_t kSvcAll = kSvcRc | kSvcUc | kSvcUd | kSvcXrc | kSvcQp1 | kSvcDci;
constexpr uint8_t kSvcConnected = kSvcRc | kSvcUc | kSvcXrc | kSvcDci;
constexpr uint8_t kSvcReliable = kSvcRc | kSvcXrc | kSvcDci;

uint8_t service_bit(uint8_t st) {
  switch (st) {
    case qp_st::kRc: return kSvcRc;
    case qp_st::kUc: return kSvcUc;
    case qp_st::kUd: return kSvcUd;
    case qp_st::kXrc: return kSvcXrc;
    case qp_st::kQp1: return kSvcQp1;
    case qp_st::kDci: return kSvcDci;
    default: return 0;  // REG_UMR and unknown types post nothing we execute
  }
}

enum class Payload : uint8_t {
  kNone,          // NOP: nothing after ctrl is looked at
  kGather,        // data or inline segments: what is sent
  kScatter,       // data segments only: where READ responses land
  kAtomicResult,  // exactly one 8-byte data segment: where the original value lands
};

struct OpcodeInfo {
  uint8_t opcode;
  uint8_t services;
  bool raddr;
  bool atomic;
  Payload payload;
};

constexpr OpcodeInfo kOpcodes[] = {
    {wqe_op::kNop, kSvcAll, false, false, Payload::kNone},
    {wqe_op::kSendInval, kSvcReliable, false, false, Payload::kGather},  // IBA: RC/XRC SEND with Invalidate
    {wqe_op::kRdmaWrite, kSvcConnected, true, false, Payload::kGather},
    {wqe_op::kRdmaWriteImm, kSvcConnected, true, false, Payload::kGather},
    {wqe_op::kSend, kSvcAll, false, false, Payload::kGather},
    {wqe_op::kSendImm, kSvcAll, false, false, Payload::kGather},
    {wqe_op::kRdmaRead, kSvcReliable, true, false, Payload::kScatter},
    {wqe_op::kAtomicCs, kSvcReliable, true, true, Payload::kAtomicResult},
    {wqe_op::kAtomicFa, kSvcReliable, true, true, Payload::kAtomicResult},
    {wqe_op::kUmr, kSvcConnected, false, false, Payload::kNone},  // memory window bind/invalidate (objects/umr.h)
    {wqe_op::kSetPsv, kSvcConnected, false, false, Payload::kNone},  // a signature key's PSV (objects/block_signature.h)
};

const OpcodeInfo* find_opcode(uint8_t opcode) {
  for (const OpcodeInfo& info : kOpcodes)
    if (info.opcode == opcode) return &info;
  return nullptr;  // masked atomics, LOCAL_INVAL, TSO and the rest
}

uint64_t round_up16(uint64_t n) { return (n + 15) & ~uint64_t(15); }

void parse_datagram(const uint8_t* p, UdAddress& a) {
  a.qkey = load_be32(p + av::kQkey);
  a.dc_key = load_be64(p + av::kQkey);
  const uint32_t dqp = load_be32(p + av::kDqpDct);
  a.remote_qpn = dqp & kQpnMask;
  a.extended = (dqp & av::kExtended) != 0;
  a.stat_rate_sl = p[av::kStatRateSl];
  a.fl_mlid = p[av::kFlMlid];
  a.rlid = load_be16(p + av::kRlid);
  for (size_t i = 0; i < a.rmac.size(); ++i) a.rmac[i] = p[av::kRmac + i];
  a.tclass = p[av::kTclass];
  a.hop_limit = p[av::kHopLimit];
  const uint32_t gid_fl = load_be32(p + av::kGrhGidFl);
  a.grh = (gid_fl & av::kGrh) != 0;
  a.sgid_index = uint8_t(gid_fl >> 20);
  a.flow_label = gid_fl & 0xfffff;
  for (size_t i = 0; i < a.rgid.size(); ++i) a.rgid[i] = p[av::kRgid + i];
}

}  // namespace

uint64_t SendWqe::length() const {
  if (has_inline) return inline_data.size();
  uint64_t total = 0;
  for (const Sge& s : sges) total += s.length;  // at most 63 * 2^31: no overflow
  return total;
}

const char* wqe_error_name(WqeError error) {
  switch (error) {
    case WqeError::kNone: return "none";
    case WqeError::kBadDs: return "bad_ds";
    case WqeError::kBadOpcode: return "bad_opcode";
    case WqeError::kBadInline: return "bad_inline";
    case WqeError::kTooManySges: return "too_many_sges";
    case WqeError::kMisalignedAtomic: return "misaligned_atomic";
    case WqeError::kBadAtomicSge: return "bad_atomic_sge";
    case WqeError::kQpnMismatch: return "qpn_mismatch";
    case WqeError::kTooLong: return "too_long";
  }
  return "unknown";
}

uint8_t peek_ds(std::span<const uint8_t> first_segment) {
  if (first_segment.size() < kSegment) return 0;
  return first_segment[kCtrlQpnDs + 3] & kDsMask;
}

bool parse_ctrl_segment(std::span<const uint8_t> bytes, SendWqe& out) {
  if (bytes.size() < kSegment) return false;
  const uint8_t* c = bytes.data();
  out.opmod = c[kCtrlOpmod];
  out.wqe_index = load_be16(c + kCtrlWqeIndex);
  out.opcode = c[kCtrlOpcode];
  out.qpn = load_be32(c + kCtrlQpnDs) >> 8;
  out.ds = c[kCtrlQpnDs + 3] & kDsMask;
  const uint8_t fm_ce_se = c[kCtrlFmCeSe];
  out.fence = uint8_t(fm_ce_se >> kFenceShift);
  out.signalled = (fm_ce_se & kCeMask) >= kCeAlways;
  out.solicited = (fm_ce_se & kSolicited) != 0;
  out.imm = load_be32(c + kCtrlImm);
  out.stream = load_be16(c + kCtrlStream);
  return true;
}

WqeError parse_send_wqe(std::span<const uint8_t> bytes, uint8_t st, uint32_t expected_qpn, SendWqe& out,
                        uint32_t max_sges) {
  out = SendWqe{};
  if (!parse_ctrl_segment(bytes, out)) return WqeError::kBadDs;

  // Validate the frame first: ds, QPN, opcode for this service type.
  const uint32_t end = uint32_t(out.ds) * kSegment;
  if (out.ds == 0 || end > bytes.size()) return WqeError::kBadDs;
  if (out.qpn != (expected_qpn & kQpnMask)) return WqeError::kQpnMismatch;
  const uint8_t service = service_bit(st);
  const OpcodeInfo* op = find_opcode(out.opcode);
  if (op == nullptr || (op->services & service) == 0) return WqeError::kBadOpcode;
  if (op->payload == Payload::kNone) return WqeError::kNone;

  // Fixed segments, in the order the drivers write them.
  uint32_t at = kSegment;
  auto take = [&](uint32_t size) -> const uint8_t* {
    if (end - at < size) return nullptr;
    const uint8_t* p = &bytes[at];
    at += size;
    return p;
  };
  if (service == kSvcXrc) {
    const uint8_t* p = take(kXrcSize);
    if (p == nullptr) return WqeError::kBadDs;
    out.xrc_srqn = load_be32(p) & kQpnMask;
  }
  if (service == kSvcUd || service == kSvcQp1 || service == kSvcDci) {  // a DCI's names its DCT
    const uint8_t* p = take(kDatagramSize);
    if (p == nullptr) return WqeError::kBadDs;
    parse_datagram(p, out.ud.emplace());
  }
  if (op->raddr) {
    const uint8_t* p = take(kRaddrSize);
    if (p == nullptr) return WqeError::kBadDs;
    out.remote_va = load_be64(p + kRaddrVa);
    out.rkey = load_be32(p + kRaddrRkey);
  }
  if (op->atomic) {
    const uint8_t* p = take(kAtomicSize);
    if (p == nullptr) return WqeError::kBadDs;
    out.swap_add = load_be64(p + kAtomicSwapAdd);
    out.compare = load_be64(p + kAtomicCompare);
    if (out.remote_va % kAtomicAlign != 0) return WqeError::kMisalignedAtomic;
  }

  // The payload: data and inline segments up to ds.
  while (at < end) {
    const uint8_t* p = &bytes[at];
    const uint32_t byte_count = load_be32(p + kDataByteCount);
    if (byte_count & kInlineFlag) {
      if (op->payload == Payload::kAtomicResult) return WqeError::kBadAtomicSge;
      if (op->payload != Payload::kGather || !out.sges.empty()) return WqeError::kBadInline;
      const uint64_t n = byte_count & ~kInlineFlag;
      const uint64_t size = round_up16(4 + n);
      if (size > end - at) return WqeError::kBadInline;
      out.inline_data.insert(out.inline_data.end(), p + 4, p + 4 + n);
      out.has_inline = true;
      at += uint32_t(size);
      continue;
    }
    if (out.has_inline) return WqeError::kBadInline;
    if (out.sges.size() >= max_sges) return WqeError::kTooManySges;
    // `end` and `at` are multiples of 16 here, so the whole segment is inside ds.
    Sge& s = out.sges.emplace_back();
    s.length = byte_count == 0 ? kZeroByteCountLength : byte_count;
    s.lkey = load_be32(p + kDataLkey);
    s.addr = load_be64(p + kDataAddr);
    at += kSegment;
  }

  if (op->payload == Payload::kAtomicResult && (out.sges.size() != 1 || out.sges[0].length != kAtomicArgSize))
    return WqeError::kBadAtomicSge;
  if (out.length() > kMaxMessage) return WqeError::kTooLong;
  return WqeError::kNone;
}

}  // namespace hcaemu::model
