#pragma once
// User-mode memory registration (UMR) WQEs, as mlx5_ib posts them on its UMR QP to change an
// MKEY without a command: re-registration of access flags and PD (ibv_rereg_mr), revocation (the
// MKEY set free before a re-registration or the MKEY cache gives its pages to a new key), and
// translation loads: the MTT entries of a user MR written into a key created free with room for
// them (mkc.translations_octword_size), in pieces at an offset, the last one enabling the key with
// its range, page size, PD and access (mlx5r_umr_update_mr_pas, the MKEY cache). A UMR WQE is a
// control segment, a UMR control segment (flags, translation size and offset, the mkey_mask of
// fields to change), an mkc-layout MKEY segment with the new values and, for a translation, a data
// segment pointing at the entries in host memory (through the driver's local DMA key). KLM lists
// and inline translations (user-space UMR) are not modelled and complete in error.
#include <cstdint>
#include <functional>
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
// Signature keys (objects/block_signature.h): the sig err count parity and the BSF enable bit of
// the MKEY segment's flags_pd.
inline constexpr uint64_t kMaskSigErr = 1ull << 9, kMaskBsfEnable = 1ull << 12;
// What this model changes; other bits (relaxed ordering, fences, QPN) are accepted and have no
// effect here.
inline constexpr uint64_t kMaskTranslation = kMaskLen | kMaskPageSize | kMaskStartAddr;
// UMR control segment flags: the translation offset is valid; the key's state the WQE requires
// (bits 6:5: 1 = free, as when a key is loaded and enabled; 2 = in use, as for a later update).
inline constexpr uint8_t kFlagTranslationOffset = 1u << 4, kFlagMustBeInUse = 2u << 5;
inline constexpr uint32_t kDataSegmentOffset = 128;  // a translation's pointer: byte_count, lkey, address
}  // namespace umr

enum class UmrError : uint8_t {
  kNone,
  kMalformed,     // shorter than its segments, or not a UMR opcode
  kBadKey,        // no MKEY of this function with that key
  kBadPd,         // the new PD is not one of this function's
  kTranslation,   // a translation for a key that is not an MTT key, inline, or a bad page size or range
  kState,         // the key is not free (or not in use) as the WQE's check asks
  kXltRange,      // entries past the room the key was created with, or an entry below its page size
  kXltRead,       // the entries could not be read (their key refused, or the DMA failed)
  kBudget,        // more entries than the function's translation budget has left
};
const char* umr_error_name(UmrError error);

// Reads a translation's entries (big-endian MTT entries) from `address` through `lkey`, a key of
// the UMR QP's PD; false when the key refuses the range or the DMA fails.
using XltReader = std::function<bool(uint32_t lkey, uint64_t address, std::span<uint8_t> out)>;

// Applies one UMR WQE (ctrl segment first) to the function's MKEYs. All or nothing: on an error the
// MKEY is unchanged. PD references move with the MKEY's PD; loaded entries count against the
// function's translation budget while the key lives.
UmrError apply_umr(Resources& resources, std::span<const uint8_t> wqe, const XltReader& read_xlt = {});

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
