#pragma once
// User-mode memory registration (UMR) WQEs, as mlx5_ib posts them on its UMR QP to change an
// MKEY without a command: re-registration of access flags and PD (ibv_rereg_mr), and revocation
// (the MKEY set free before a re-registration gives its pages to a new key). A UMR WQE is a control
// segment, a UMR control segment (flags, translation size, the mkey_mask of fields to change) and
// an mkc-layout MKEY segment with the new values. Translation updates (MTT/KLM lists) are not
// modelled: the caps say umr_modify_entity_size_disabled, so the driver registers user memory with
// CREATE_MKEY, and a UMR that carries a translation completes in error instead.
#include <cstdint>
#include <span>

#include "model/objects/resources.h"

namespace hcaemu::model {

namespace umr {
inline constexpr uint8_t kOpcode = 0x25;  // MLX5_OPCODE_UMR
inline constexpr uint32_t kControlOffset = 16, kMkeySegmentOffset = 64, kMinBytes = 128;
// mkey_mask bits (mlx5 "MKEY mask" of the UMR control segment).
inline constexpr uint64_t kMaskLen = 1ull << 0, kMaskPageSize = 1ull << 1, kMaskStartAddr = 1ull << 6,
                          kMaskPd = 1ull << 7, kMaskEnRinval = 1ull << 8, kMaskKey = 1ull << 13,
                          kMaskLocalRead = 1ull << 17, kMaskLocalWrite = 1ull << 18, kMaskRemoteRead = 1ull << 19,
                          kMaskRemoteWrite = 1ull << 20, kMaskAtomic = 1ull << 21, kMaskFree = 1ull << 29;
// What this model changes; other bits (signature, relaxed ordering, fences, QPN) are accepted and
// have no effect here.
inline constexpr uint64_t kMaskTranslation = kMaskLen | kMaskPageSize | kMaskStartAddr;
}  // namespace umr

enum class UmrError : uint8_t {
  kNone,
  kMalformed,     // shorter than its segments, or not a UMR opcode
  kBadKey,        // no MKEY of this function with that key
  kBadPd,         // the new PD is not one of this function's
  kTranslation,   // carries a translation (MTT/KLM list) or changes the range: not modelled
};
const char* umr_error_name(UmrError error);

// Applies one UMR WQE (ctrl segment first) to the function's MKEYs. All or nothing: on an error the
// MKEY is unchanged. PD references move with the MKEY's PD.
UmrError apply_umr(Resources& resources, std::span<const uint8_t> wqe);

// Memory windows (IBA 10.6.7): libmlx5 binds one with a UMR WQE on an RC/UC/XRC QP (ibv_bind_mw,
// IBV_WR_BIND_MW: the window's key in the ctrl segment, the new key, access and range in the MKEY
// segment, one inline KLM naming the MR and where in it the range starts) and invalidates a type 2
// window or a fast-register key with one (IBV_WR_LOCAL_INV: free, the QP checked).
namespace umr {
inline constexpr uint8_t kFlagInline = 1u << 7, kFlagCheckFree = 1u << 5, kFlagCheckQpn = 1u << 3;
inline constexpr uint64_t kMaskQpn = 1ull << 14;
inline constexpr uint32_t kKlmOffset = 128;  // the inline data segment: byte_count, mkey, address
inline constexpr uint32_t kMaxWindow = 0x80000000u;  // one KLM covers at most 2 GiB
}  // namespace umr

enum class BindError : uint8_t {
  kNone,
  kMalformed,  // not a UMR, too short, no inline KLM where a range is bound
  kBadKey,     // the key names no MKEY of the function
  kPd,         // the window (or key) is of another PD than the QP
  kNotFree,    // type 2: bound already (the driver asked for a free window)
  kWrongQp,    // invalidating a type 2 window bound through another QP
  kBadMr,      // the KLM's MR: missing, free, a window, another PD, or not covering the range
  kAccess,     // remote write or atomic through a window on an MR without local write
};
const char* bind_error_name(BindError error);

// Applies a UMR WQE of QP `qpn` (of PD `qp_pd`): binds a window or frees a key. All or nothing.
BindError apply_bind_umr(Resources& resources, std::span<const uint8_t> wqe, uint32_t qp_pd, uint32_t qpn);

}  // namespace hcaemu::model
