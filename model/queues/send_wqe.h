#pragma once
// Send WQEs of RDMA QPs as libmlx5 and mlx5_ib write them (mlx5-device-bringup.md section 7.3):
// a 16-byte control segment, then per opcode and service type an XRC segment, a datagram segment
// (address vector), a remote address segment, an atomic segment, and the payload as data
// segments (gather list) or inline segments. Everything the guest wrote is checked here; the
// engines that execute a WQE see only a parsed SendWqe.
//
// Decisions (see the comments in queues/send_wqe.cpp for the reasons):
// - A data segment with byte_count 0 means 2 GiB (PRM semantics). libmlx5 and mlx5_ib never
//   write one: they leave zero-length SGEs out of the WQE. So such an SGE is kept, as 2^31 bytes.
// - UD and QP1 (GSI) WQEs are parsed: the 48-byte datagram segment becomes a UdAddress.
// - XRC initiator WQEs are parsed: the XRC segment gives the target SRQ.
// - DCI WQEs are parsed: the datagram segment names the DCT (number, access key, address).
// - LOCAL_INVAL and UMR (memory registration through the SQ) and the masked atomics (extended
//   atomics, whose argument layout depends on opmod) are refused with kBadOpcode: the caps offer
//   neither UMR-based registration nor extended atomics, so no driver writes them.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace hcaemu::model {

namespace wqe_op {
inline constexpr uint8_t kNop = 0x00, kSendInval = 0x01, kRdmaWrite = 0x08, kRdmaWriteImm = 0x09, kSend = 0x0a,
                         kSendImm = 0x0b, kRdmaRead = 0x10, kAtomicCs = 0x11, kAtomicFa = 0x12, kMaskedAtomicCs = 0x14,
                         kMaskedAtomicFa = 0x15, kLocalInval = 0x1b, kSetPsv = 0x20, kUmr = 0x25;
}

// Sizes and markers shared by send and receive WQEs.
namespace wqe_format {
inline constexpr uint32_t kBasicBlock = 64;            // WQEBB
inline constexpr uint32_t kSegment = 16;               // the ds unit; every segment is a multiple
inline constexpr uint32_t kMaxDs = 0x3f;               // qpn_ds [5:0]
inline constexpr uint32_t kInlineFlag = 0x80000000u;   // byte_count bit 31: an inline segment
inline constexpr uint32_t kInvalidLkey = 0x100;        // MLX5_INVALID_LKEY: ends a receive list
inline constexpr uint64_t kMaxMessage = uint64_t(1) << 31;
inline constexpr uint32_t kZeroByteCountLength = 0x80000000u;  // a data segment's byte_count 0
inline constexpr uint32_t kDatagramSize = 48;          // mlx5_wqe_av, always the extended form
inline constexpr uint32_t kAtomicArgSize = 8;          // the local buffer of an atomic
inline constexpr uint8_t kCeAlways = 0x08;             // fm_ce_se: CE [3:2] >= 2, a CQE per WQE
inline constexpr uint8_t kSolicited = 0x02;            // fm_ce_se: SE
inline constexpr uint32_t kFenceShift = 5;             // fm_ce_se [7:5]
}  // namespace wqe_format

struct Sge {
  uint64_t addr = 0;
  uint32_t lkey = 0;
  uint32_t length = 0;
};

// The datagram segment of a UD/QP1 WQE (mlx5_wqe_av, 48 bytes); a DCI's WQE carries one too, with
// the DCT's access key in place of the Q_Key and the DCT number as the remote QPN.
struct UdAddress {
  uint32_t qkey = 0;            // 0x00
  uint64_t dc_key = 0;          // 0x00, 8 bytes (DCI)
  uint32_t remote_qpn = 0;      // 0x08 [23:0]
  bool extended = false;        // 0x08 [31] MLX5_EXTENDED_UD_AV: libmlx5 and mlx5_ib always set it
  uint8_t stat_rate_sl = 0;     // 0x0c
  uint8_t fl_mlid = 0;          // 0x0d
  uint16_t rlid = 0;            // 0x0e; on RoCE v2 libmlx5 puts the UDP source port here (UNSURE)
  std::array<uint8_t, 6> rmac{};  // 0x14
  uint8_t tclass = 0;           // 0x1a
  uint8_t hop_limit = 0;        // 0x1b
  bool grh = false;             // 0x1c [30]
  uint8_t sgid_index = 0;       // 0x1c [27:20]
  uint32_t flow_label = 0;      // 0x1c [19:0]
  std::array<uint8_t, 16> rgid{};  // 0x20
};

struct SendWqe {
  uint8_t opcode = 0, opmod = 0;
  uint16_t wqe_index = 0;       // ctrl dword0 [23:8]
  uint32_t qpn = 0;             // ctrl dword1 [31:8]
  uint8_t ds = 0;               // 16-byte units incl. ctrl
  uint8_t fence = 0;            // fm_ce_se [7:5]
  uint16_t stream = 0;          // ctrl bytes 9-10: a DCI's stream channel (mlx5dv_wr_set_dc_addr_stream)
  bool signalled = false;       // CE >= 2 (2 = CQE, 3 = CQE and EQE)
  bool solicited = false;       // SE
  uint32_t imm = 0;             // ctrl dword3 in host order: immediate, or the rkey SEND_INVAL invalidates
  uint32_t xrc_srqn = 0;        // XRC segment (XRC QPs)
  std::optional<UdAddress> ud;  // datagram segment (UD, QP1 and DCI)
  uint64_t remote_va = 0;       // remote address segment (WRITE*, READ, atomics)
  uint32_t rkey = 0;
  uint64_t swap_add = 0, compare = 0;  // atomic segment
  std::vector<Sge> sges;        // data segments in order (gather list; READ: scatter list)
  std::vector<uint8_t> inline_data;  // the inline segments' payload, concatenated
  bool has_inline = false;

  uint32_t wqebbs() const { return (uint32_t(ds) + 3) / 4; }
  uint64_t length() const;      // message length: inline size, or the sum of the SGE lengths
};

enum class WqeError : uint8_t {
  kNone,
  kBadDs,              // ds 0, larger than the bytes given, or segments overrun ds
  kBadOpcode,          // unknown, unsupported, or not allowed for the QP's service type
  kBadInline,          // inline length overruns ds, inline where the opcode forbids it, inline mixed with pointers
  kTooManySges,        // more data segments than allowed
  kMisalignedAtomic,   // atomic remote_va not 8-byte aligned
  kBadAtomicSge,       // an atomic needs exactly one 8-byte data segment
  kQpnMismatch,        // ctrl QPN is not the QP the doorbell named
  kTooLong,            // message longer than 2^31 bytes
};
const char* wqe_error_name(WqeError error);

// Parses one send WQE. `bytes` = its WQEBBs as fetched from the ring (already unwrapped, at least
// ds * 16 bytes; bytes past ds are ignored), `st` = qp_st::kRc/kUc/kUd/kXrc/kQp1 (objects/resources.h),
// `max_sges` = the most data segments accepted (the ds field bounds them anyway).
// On error `out` holds what was parsed so far (the ctrl fields at least, when ds was readable).
WqeError parse_send_wqe(std::span<const uint8_t> bytes, uint8_t st, uint32_t expected_qpn, SendWqe& out,
                        uint32_t max_sges = wqe_format::kMaxDs);

// The ctrl segment alone (opcode, opmod, index, QPN, ds, fence, CE, SE, immediate) into `out`, for
// WQEs parsed elsewhere (the UMR queue); false when fewer than 16 bytes are given.
bool parse_ctrl_segment(std::span<const uint8_t> bytes, SendWqe& out);

// The ds field of a WQE's first 16 bytes (to know how many WQEBBs to fetch); 0 if unreadable.
uint8_t peek_ds(std::span<const uint8_t> first_segment);

}  // namespace hcaemu::model
