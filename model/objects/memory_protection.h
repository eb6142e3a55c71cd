#pragma once
// Memory keys on the data path (mlx5-device-bringup.md section 6.5): an lkey/rkey names an MKEY
// of the function ((index << 8) | variant); an access by a QP must come from the MKEY's PD, be
// granted by its access flags, and stay inside [start, start + length). The MKEY then turns the
// virtual range into host addresses: PA mode takes the address as it is, MTT mode maps page k of
// the region (aligned down to its page size) through MTT entry k.
//
// Keys of another function cannot occur: each function has its own Resources, so a key is only
// ever looked up in the table of the function whose QP uses it.
#include <cstdint>
#include <span>
#include <vector>

#include "model/objects/resources.h"
#include "model/queues/send_wqe.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

namespace access {
inline constexpr uint8_t kLocalRead = 1, kLocalWrite = 2, kRemoteRead = 4, kRemoteWrite = 8, kAtomic = 16;
}

enum class ProtectionError : uint8_t {
  kNone,
  kBadKey,       // no such index, the variant byte differs, or MLX5_INVALID_LKEY
  kFreeKey,      // the MKEY is in the free state (waiting for a UMR)
  kPdMismatch,   // the MKEY belongs to another PD than the QP
  kAccess,       // an access flag the MKEY does not grant
  kBounds,       // outside [start, start + length), or va + length wraps
  kTranslation,  // past the key's MTT entries, unsupported access mode or page size, a window's MR gone
  kNotPresent,   // an MTT entry of the range is 0 (never loaded, or zapped): an ODP page fault
  kQpMismatch,   // a type 2 memory window used through another QP than the one it is bound through
};
const char* protection_error_name(ProtectionError error);

// A piece of host memory (the address the function's HostMemory takes).
struct DmaChunk {
  uint64_t address = 0;
  uint32_t length = 0;
};

// The largest DmaChunk translate builds (contiguous ranges are merged up to it).
inline constexpr uint32_t kMaxDmaChunk = 0x80000000u;

// Translates [va, va + length) of `key` for an access by a QP of PD `pd` with the `access` flags
// (several may be combined; local read is always granted, as mlx5 MKEYs have lr set). Appends
// page-bounded chunks to `out`, merging contiguous ones. Length 0 checks the key (existence,
// state, PD, access) but not the bounds, and appends nothing. On error `out` is as it was.
// A memory window translates through the MR it is bound to; `qpn` is the QP using the key (a
// type 2 window answers only to the QP it was bound through), kAnyQp where no QP is involved.
// `pd` kAnyPd: the key's own PD (the 6.1 driver's UMR QP has none; a key of the function is all
// it can name).
inline constexpr uint32_t kAnyQp = 0xffffffffu, kAnyPd = 0xffffffffu;
ProtectionError translate(const Resources& r, uint32_t key, uint32_t pd, uint64_t va, uint64_t length, uint8_t access,
                          std::vector<DmaChunk>& out, uint32_t qpn = kAnyQp);

// A scatter/gather list: every SGE translated with the same pd/access, appended to `out` in
// order; `total` = the sum of the lengths. On error `out` is as it was and `total` is 0.
ProtectionError translate_sges(const Resources& r, std::span<const Sge> sges, uint32_t pd, uint8_t access,
                               std::vector<DmaChunk>& out, uint64_t& total);

// A SEND with Invalidate names `key` for the responder to free (IBA 10.6.7.2.6): only a key of
// the QP's PD made for registration by UMR (a fast-register MR or a type 2 memory window: umr_en or
// en_rinval) can be invalidated remotely; a plain MR (ibv_reg_mr, also when the driver loaded it
// into a umr_en key of its MKEY cache) cannot, as in Soft-RoCE. On
// success the MKEY is in the free state and every later access through it fails.
ProtectionError invalidate_remotely(Resources& r, uint32_t key, uint32_t pd);

// Copies between the bytes of a chunk list (starting `offset` bytes into it) and a buffer.
// False when offset + size runs past the chunks (then nothing is copied) or the host refuses a
// DMA (then the chunks before it may have been copied).
bool read_chunks(pcie::HostMemory& m, std::span<const DmaChunk> chunks, uint64_t offset, std::span<uint8_t> out);
bool write_chunks(pcie::HostMemory& m, std::span<const DmaChunk> chunks, uint64_t offset,
                  std::span<const uint8_t> in);

}  // namespace hcaemu::model
