// MKEY checks and translation on the data path (mlx5-device-bringup.md section 6.5). The checks
// run in a fixed order - key, state, PD, access, bounds, translation - so one bad WQE always
// reports the same error; nothing is appended before every check of the range has passed or
// the list is restored.
#include "model/objects/memory_protection.h"

#include <algorithm>

#include "model/objects/device_memory.h"

namespace hcaemu::model {
namespace {

constexpr uint32_t kKeyIndexShift = 8;      // key = (mkey_index << 8) | variant
constexpr uint32_t kKeyVariantMask = 0xff;
constexpr uint32_t kMaxLogPageSize = 63;

bool granted(const Mkey& m, uint8_t wanted) {
  // Local read needs no flag: mlx5 MKEYs always carry lr.
  if ((wanted & access::kLocalWrite) && !m.local_write) return false;
  if ((wanted & access::kRemoteRead) && !m.remote_read) return false;
  if ((wanted & access::kRemoteWrite) && !m.remote_write) return false;
  if ((wanted & access::kAtomic) && !m.atomic) return false;
  return true;
}

// Appends [address, address + length) to `out`, extending the last chunk when it ends where this
// range starts, and splitting at kMaxDmaChunk.
void append(std::vector<DmaChunk>& out, uint64_t address, uint64_t length) {
  while (length > 0) {
    if (!out.empty()) {
      DmaChunk& last = out.back();
      const uint64_t last_end = last.address + last.length;
      if (last_end >= last.address && last_end == address && last.length < kMaxDmaChunk) {
        const uint64_t n = std::min<uint64_t>(length, kMaxDmaChunk - last.length);
        last.length += uint32_t(n);
        address += n;
        length -= n;
        continue;
      }
    }
    const uint64_t n = std::min<uint64_t>(length, kMaxDmaChunk);
    out.push_back({address, uint32_t(n)});
    address += n;
    length -= n;
  }
}

// Undoes appends on error: `out` back to `size` entries, its last one to `last_length`.
struct Checkpoint {
  std::vector<DmaChunk>& out;
  size_t size;
  uint32_t last_length;

  explicit Checkpoint(std::vector<DmaChunk>& v) : out(v), size(v.size()), last_length(v.empty() ? 0 : v.back().length) {}
  ProtectionError fail(ProtectionError e) {
    out.resize(size);
    if (size > 0) out.back().length = last_length;
    return e;
  }
};

// An MTT entry's low bits (rd_en, wr_en) say how the page is mapped: mlx5_ib's ODP maps a page it
// faulted in for reading (a prefetch, or the shared zero page of untouched memory) read only. A
// write to such a page is a page fault (the driver maps it writable), never a write into it. An
// entry without either bit (a driver that sets none) allows both, as before.
constexpr uint64_t kMttWriteEnable = 1u << 1;

ProtectionError translate_mtt(const Mkey& m, uint64_t va, uint64_t length, bool writes, std::vector<DmaChunk>& out) {
  if (m.log_page_size > kMaxLogPageSize) return ProtectionError::kTranslation;
  Checkpoint checkpoint(out);
  const uint64_t page_mask = (uint64_t(1) << m.log_page_size) - 1;
  // MTT entry k maps page k of the region aligned down to the page size. `va >= start` (bounds),
  // or the index underflows to a huge value that the size check below refuses.
  uint64_t index = (va >> m.log_page_size) - (m.start >> m.log_page_size);
  while (length > 0) {
    // Entries inside the key's UMR room that were never loaded are 0 as well.
    if (index >= m.mtt.size())
      return checkpoint.fail(index < m.mtt_capacity ? ProtectionError::kNotPresent : ProtectionError::kTranslation);
    // Entries are stored as read (host order); their low bits carry flags and firmware/mkey_srq.cpp
    // refused any other bit below the page size, so the page base is the entry without them.
    const uint64_t base = m.mtt[index] & ~page_mask;
    if (base == 0) return checkpoint.fail(ProtectionError::kNotPresent);
    const uint64_t flags = m.mtt[index] & Mkey::kMttFlagBits;
    if (writes && flags != 0 && (flags & kMttWriteEnable) == 0) return checkpoint.fail(ProtectionError::kNotPresent);
    const uint64_t in_page = va & page_mask;
    const uint64_t n = std::min(length, page_mask + 1 - in_page);
    append(out, base + in_page, n);
    va += n;
    length -= n;
    ++index;
  }
  return ProtectionError::kNone;
}

// Calls dma(address, buffer offset, n) for each piece of the `size` bytes that start `offset`
// bytes into the chunk list: one DMA per touched chunk, after checking the list is long enough.
template <typename Dma>
bool for_each_piece(std::span<const DmaChunk> chunks, uint64_t offset, uint64_t size, Dma dma) {
  uint64_t available = 0;
  for (const DmaChunk& c : chunks) available += c.length;  // < 2^32 per chunk: no overflow in practice
  if (offset > available || size > available - offset) return false;
  uint64_t done = 0;
  for (const DmaChunk& c : chunks) {
    if (done == size) break;
    if (offset >= c.length) {
      offset -= c.length;
      continue;
    }
    const uint64_t n = std::min<uint64_t>(c.length - offset, size - done);
    const uint64_t address = c.address + offset;
    if (address < c.address || address + n < address) return false;  // a chunk that wraps
    if (!dma(address, done, n)) return false;
    done += n;
    offset = 0;
  }
  return done == size;
}

// An implicit ODP MR (KSM): page k of the key (2^log_page_size bytes) is at `va` of the MTT key its
// entry names (a child MR the driver made for that part of the address space); the null MKEY, or an
// entry never loaded, is a page not present. The child's own entries may be not present too.
ProtectionError translate_ksm(const Resources& r, const Mkey& m, uint64_t va, uint64_t length, bool writes,
                              std::vector<DmaChunk>& out) {
  if (m.log_page_size >= kMaxLogPageSize) return ProtectionError::kTranslation;
  const uint64_t page = uint64_t(1) << m.log_page_size;
  while (length > 0) {
    const uint64_t offset = va - m.start;  // covers() kept va at or above start
    const uint64_t index = offset >> m.log_page_size;
    if (index >= m.ksm.size())
      return index < m.mtt_capacity ? ProtectionError::kNotPresent : ProtectionError::kTranslation;
    const Mkey::KsmEntry& entry = m.ksm[index];
    if (entry.key == kNullMkey) return ProtectionError::kNotPresent;
    const Mkey* child = r.direct_key(entry.key);
    if (child == nullptr || child->access_mode != Mkey::kAccessMtt) return ProtectionError::kTranslation;
    const uint64_t in_page = offset & (page - 1);
    const uint64_t n = std::min(length, page - in_page);
    const uint64_t child_va = entry.va + in_page;
    if (child_va < entry.va || !child->covers(child_va, child_va + (n - 1))) return ProtectionError::kTranslation;
    if (const ProtectionError e = translate_mtt(*child, child_va, n, writes, out); e != ProtectionError::kNone) return e;
    va += n;
    length -= n;
  }
  return ProtectionError::kNone;
}

ProtectionError translate_range(const Resources& r, const Mkey& m, uint64_t va, uint64_t length, bool writes,
                                std::vector<DmaChunk>& out);

// [va, va + length) of an indirect key (Mkey::indirect): each piece through the entry's key, which
// is looked up again (it may have gone or changed since the layout) and must not be indirect itself.
ProtectionError translate_indirect(const Resources& r, const Mkey& m, uint64_t va, uint64_t length, bool writes,
                                   std::vector<DmaChunk>& out) {
  uint64_t repeat_bytes = 0;
  for (const Mkey::IndirectEntry& e : m.indirect) repeat_bytes += e.bytes;
  if (repeat_bytes == 0) return ProtectionError::kTranslation;
  uint64_t offset = va - m.start;  // covers() kept va inside the key
  while (length > 0) {
    // The repeat the offset falls in (a plain list is one repeat) and the entry within it.
    const uint64_t repeat = m.repeat_count > 0 ? offset / repeat_bytes : 0;
    uint64_t within = offset - repeat * repeat_bytes;
    const Mkey::IndirectEntry* entry = nullptr;
    for (const Mkey::IndirectEntry& e : m.indirect) {
      if (within < e.bytes) {
        entry = &e;
        break;
      }
      within -= e.bytes;
    }
    if (entry == nullptr) return ProtectionError::kTranslation;
    const Mkey* target = r.direct_key(entry->key);
    if (target == nullptr || target->pd != m.pd) return ProtectionError::kTranslation;
    const uint64_t n = std::min(length, entry->bytes - within);
    const uint64_t target_va = entry->va + repeat * entry->stride + within;
    const uint64_t target_last = target_va + (n - 1);
    if (target_va < entry->va || target_last < target_va || !target->covers(target_va, target_last))
      return ProtectionError::kTranslation;
    if (const ProtectionError e = translate_range(r, *target, target_va, n, writes, out); e != ProtectionError::kNone) return e;
    offset += n;
    length -= n;
  }
  return ProtectionError::kNone;
}

// [va, va + length) of a key whose checks passed, inside its range, to host addresses; `writes`:
// the access writes there.
ProtectionError translate_range(const Resources& r, const Mkey& m, uint64_t va, uint64_t length, bool writes,
                                std::vector<DmaChunk>& out) {
  switch (m.access_mode) {
    case Mkey::kAccessPa:
      // Host addresses only: the device memory's addresses are a MEMIC key's to give.
      if (va >= kDeviceMemoryAddress || length > kDeviceMemoryAddress - va) return ProtectionError::kTranslation;
      append(out, va, length);
      return ProtectionError::kNone;
    case Mkey::kAccessMemic:
      append(out, kDeviceMemoryAddress + m.device_offset + va, length);  // covers() bounded va by the length
      return ProtectionError::kNone;
    case Mkey::kAccessSwIcm:
      // Zero-based over ICM addresses below 2^40 (objects/sw_icm.h), bounded by the key's length;
      // the ICM itself refuses a range no longer placed.
      append(out, kSwIcmAddress + m.device_offset + va, length);
      return ProtectionError::kNone;
    case Mkey::kAccessMtt:
      return translate_mtt(m, va, length, writes, out);
    case Mkey::kAccessKlm: {
      if (!m.indirect.empty()) return translate_indirect(r, m, va, length, writes, out);
      // A window: its range sits on its MR at parent_address, checked at bind; the MR may have
      // gone or been re-registered since, so it is looked up again (and a window is never an MR).
      const Mkey* mr = r.direct_key(m.parent_key);
      if (mr == nullptr) return ProtectionError::kTranslation;
      const uint64_t mr_va = m.parent_address + (va - m.start);
      const uint64_t mr_last = mr_va + (length - 1);
      if (mr_va < m.parent_address || mr_last < mr_va || !mr->covers(mr_va, mr_last))
        return ProtectionError::kTranslation;
      return translate_range(r, *mr, mr_va, length, writes, out);
    }
    case Mkey::kAccessKsm:
      return translate_ksm(r, m, va, length, writes, out);
    default:
      return ProtectionError::kTranslation;
  }
}

}  // namespace

const char* protection_error_name(ProtectionError error) {
  switch (error) {
    case ProtectionError::kNone: return "none";
    case ProtectionError::kBadKey: return "bad_key";
    case ProtectionError::kFreeKey: return "free_key";
    case ProtectionError::kPdMismatch: return "pd_mismatch";
    case ProtectionError::kAccess: return "access";
    case ProtectionError::kBounds: return "bounds";
    case ProtectionError::kTranslation: return "translation";
    case ProtectionError::kNotPresent: return "not_present";
    case ProtectionError::kQpMismatch: return "qp_mismatch";
  }
  return "unknown";
}

ProtectionError translate(const Resources& r, uint32_t key, uint32_t pd, uint64_t va, uint64_t length, uint8_t wanted,
                          std::vector<DmaChunk>& out, uint32_t qpn) {
  if (key == wqe_format::kInvalidLkey) return ProtectionError::kBadKey;
  const Mkey* m = r.mkeys.find(key >> kKeyIndexShift);
  if (m == nullptr || m->variant != (key & kKeyVariantMask)) return ProtectionError::kBadKey;
  if (m->free) return ProtectionError::kFreeKey;
  if (pd != kAnyPd && m->pd != pd) return ProtectionError::kPdMismatch;
  if (m->bound_qpn != Mkey::kNoQpn && qpn != kAnyQp && qpn != m->bound_qpn) return ProtectionError::kQpMismatch;
  if (!granted(*m, wanted)) return ProtectionError::kAccess;
  if (length == 0) return ProtectionError::kNone;
  // No WQE or packet asks for more than a message (2^31); refusing more keeps chunk lists bounded.
  if (length > wqe_format::kMaxMessage) return ProtectionError::kBounds;
  const uint64_t last = va + (length - 1);
  if (last < va) return ProtectionError::kBounds;  // wraps the address space
  if (!m->covers(va, last)) return ProtectionError::kBounds;
  Checkpoint checkpoint(out);
  const bool writes = (wanted & (access::kLocalWrite | access::kRemoteWrite | access::kAtomic)) != 0;
  const ProtectionError e = translate_range(r, *m, va, length, writes, out);
  return e == ProtectionError::kNone ? e : checkpoint.fail(e);
}

ProtectionError invalidate_remotely(Resources& r, uint32_t key, uint32_t pd) {
  Mkey* m = r.mkeys.find(key >> kKeyIndexShift);
  if (m == nullptr || m->variant != (key & kKeyVariantMask)) return ProtectionError::kBadKey;
  if (m->free) return ProtectionError::kFreeKey;
  if (m->pd != pd) return ProtectionError::kPdMismatch;
  if ((!m->umr_en && !m->remote_invalidate) || m->driver_loaded) return ProtectionError::kAccess;
  m->free = true;
  return ProtectionError::kNone;
}

ProtectionError translate_sges(const Resources& r, std::span<const Sge> sges, uint32_t pd, uint8_t wanted,
                               std::vector<DmaChunk>& out, uint64_t& total) {
  Checkpoint checkpoint(out);
  total = 0;
  for (const Sge& s : sges) {
    const ProtectionError e = translate(r, s.lkey, pd, s.addr, s.length, wanted, out);
    if (e != ProtectionError::kNone) return total = 0, checkpoint.fail(e);
    if (total + s.length < total) return total = 0, checkpoint.fail(ProtectionError::kBounds);
    total += s.length;
  }
  return ProtectionError::kNone;
}

bool read_chunks(pcie::HostMemory& m, std::span<const DmaChunk> chunks, uint64_t offset, std::span<uint8_t> out) {
  return for_each_piece(chunks, offset, out.size(), [&](uint64_t address, uint64_t at, uint64_t n) {
    return m.read(address, out.subspan(at, n));
  });
}

bool write_chunks(pcie::HostMemory& m, std::span<const DmaChunk> chunks, uint64_t offset,
                  std::span<const uint8_t> in) {
  return for_each_piece(chunks, offset, in.size(), [&](uint64_t address, uint64_t at, uint64_t n) {
    return m.write(address, in.subspan(at, n));
  });
}

}  // namespace hcaemu::model
