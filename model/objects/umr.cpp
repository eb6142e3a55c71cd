#include "model/objects/umr.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "common/endian.h"
#include "model/prm/bits.h"
#include "model/prm/mkc_fields.h"

namespace hcaemu::model {
namespace {

constexpr uint32_t kKeyIndexShift = 8;
constexpr uint32_t kMaxLogPageSize = 30;  // mlx5_ib's MR page sizes: 4 KiB (PageList::kMinLogPageSize) .. 1 GiB

// The UMR control segment (after the 16-byte ctrl segment).
constexpr Field kXltOctowords{umr::kControlOffset + 0x04, 31, 16};
constexpr uint32_t kXltOffset = umr::kControlOffset + 0x06;      // BE16: octowords 15:0
constexpr uint32_t kMkeyMask = umr::kControlOffset + 0x08;
constexpr uint32_t kXltOffsetHigh = umr::kControlOffset + 0x10;  // BE32: octowords 47:16

// The MKEY segment has mkc's layout.
namespace seg {
using mkc::within;
constexpr uint32_t at = umr::kMkeySegmentOffset;
constexpr Field kFree = within(mkc::kFree, at), kAtomic = within(mkc::kAtomic, at),
                kRemoteWrite = within(mkc::kRemoteWrite, at), kRemoteRead = within(mkc::kRemoteRead, at),
                kLocalWrite = within(mkc::kLocalWrite, at), kLocalRead = within(mkc::kLocalRead, at),
                kVariant = within(mkc::kVariant, at), kEnRinval = within(mkc::kEnRinval, at), kPd = within(mkc::kPd, at);
constexpr Field kStartMkeyQpn = within(Field{0x04, 31, 8}, at);  // mkc.qpn
constexpr Field kLength64 = within(mkc::kLength64, at), kLogPageSize = within(mkc::kLogPageSize, at);
constexpr uint32_t kStartAddr = at + mkc::kStartAddr, kLen = at + mkc::kLen;
constexpr Field kBsfEnable = within(mkc::kBsfEn, at), kSigErrCount = within(mkc::kExpectedSigerrCount, at);
}  // namespace seg
constexpr uint32_t kBsfOctowords = umr::kControlOffset + 0x06;  // BE16: a BSF follows the translation

constexpr uint32_t kUmrFlags = umr::kControlOffset;  // the UMR control segment's first byte

}  // namespace

const char* umr_error_name(UmrError error) {
  switch (error) {
    case UmrError::kNone: return "none";
    case UmrError::kMalformed: return "malformed";
    case UmrError::kBadKey: return "bad_key";
    case UmrError::kBadPd: return "bad_pd";
    case UmrError::kTranslation: return "translation";
    case UmrError::kState: return "key_state";
    case UmrError::kXltRange: return "translation_range";
    case UmrError::kXltRead: return "translation_read";
    case UmrError::kBudget: return "translation_budget";
  }
  return "?";
}

namespace {

// A translation a UMR WQE carries, read and checked before anything changes.
struct Translation {
  uint64_t first = 0;              // entry index of entries[0]
  std::vector<uint64_t> entries;   // MTT: host order, as CREATE_MKEY stores them
  std::vector<Mkey::KsmEntry> ksm;  // KSM: 16 bytes each (byte count, key, address)
  uint64_t start = 0, length = 0;  // the new range and page size (the key's own where not masked)
  bool length64 = false;
  uint32_t log_page_size = 12;
};

UmrError read_translation(const Mkey& m, std::span<const uint8_t> wqe, uint64_t mask, const XltReader& read_xlt,
                          Translation& t) {
  t.start = (mask & umr::kMaskStartAddr) ? load_be64(&wqe[seg::kStartAddr]) : m.start;
  t.length = (mask & umr::kMaskLen) ? load_be64(&wqe[seg::kLen]) : m.length;
  t.length64 = (mask & umr::kMaskLen) ? get(wqe, seg::kLength64) != 0 : m.length64;
  t.log_page_size = (mask & umr::kMaskPageSize) ? get(wqe, seg::kLogPageSize) : m.log_page_size;
  const bool ksm = m.access_mode == Mkey::kAccessKsm;
  if ((m.access_mode != Mkey::kAccessMtt && !ksm) || t.log_page_size < PageList::kMinLogPageSize ||
      t.log_page_size > kMaxLogPageSize || (!t.length64 && t.length > ~t.start))
    return UmrError::kTranslation;
  const uint32_t octowords = get(wqe, kXltOctowords);
  if (octowords == 0) return UmrError::kNone;
  const uint8_t flags = wqe[kUmrFlags];
  if ((flags & umr::kFlagInline) || wqe.size() < umr::kDataSegmentOffset + 16) return UmrError::kTranslation;
  const uint64_t per_octoword = ksm ? 1 : 2;  // 16-byte octowords of two MTT entries or one KSM entry
  const uint64_t entry_bytes = 16 / per_octoword;
  const uint64_t count = uint64_t(octowords) * per_octoword;
  if ((flags & umr::kFlagTranslationOffset) != 0)
    t.first = ((uint64_t(load_be32(&wqe[kXltOffsetHigh])) << 16) | load_be16(&wqe[kXltOffset])) * per_octoword;
  if (t.first > m.mtt_capacity || count > m.mtt_capacity - t.first) return UmrError::kXltRange;
  const uint32_t byte_count = load_be32(&wqe[umr::kDataSegmentOffset]);
  const uint32_t lkey = load_be32(&wqe[umr::kDataSegmentOffset + 4]);
  const uint64_t address = load_be64(&wqe[umr::kDataSegmentOffset + 8]);
  if (byte_count < count * entry_bytes || !read_xlt) return UmrError::kXltRead;
  std::vector<uint8_t> raw(count * entry_bytes);
  if (!read_xlt(lkey, address, raw)) return UmrError::kXltRead;
  if (ksm) {  // each entry is one page of the key: its byte count is implied
    t.ksm.resize(count);
    for (uint64_t i = 0; i < count; ++i) t.ksm[i] = {load_be32(&raw[i * 16 + 4]), load_be64(&raw[i * 16 + 8])};
    return UmrError::kNone;
  }
  t.entries.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    t.entries[i] = load_be64(&raw[i * 8]);
    if (!Mkey::mtt_entry_aligned(t.entries[i], t.log_page_size)) return UmrError::kXltRange;
  }
  return UmrError::kNone;
}

}  // namespace

UmrError apply_umr(Resources& r, std::span<const uint8_t> wqe, const XltReader& read_xlt) {
  if (wqe.size() < umr::kMinBytes || wqe[3] != umr::kOpcode) return UmrError::kMalformed;
  const uint32_t key = load_be32(&wqe[12]);  // ctrl general_id: the MKEY to change
  const uint64_t mask = load_be64(&wqe[kMkeyMask]);
  Mkey* m = r.mkeys.find(key >> kKeyIndexShift);
  if (m == nullptr || m->variant != (key & 0xff)) return UmrError::kBadKey;
  const uint8_t check = wqe[kUmrFlags] & (3u << 5);
  if ((check == umr::kFlagCheckFree && !m->free) || (check == umr::kFlagMustBeInUse && m->free)) return UmrError::kState;
  const bool translating = get(wqe, kXltOctowords) != 0 || (mask & umr::kMaskTranslation) != 0;
  Translation t;
  if (translating) {
    if (const UmrError error = read_translation(*m, wqe, mask, read_xlt, t); error != UmrError::kNone) return error;
  }
  const bool ksm = m->access_mode == Mkey::kAccessKsm;
  const uint64_t loaded = ksm ? m->ksm.size() : m->mtt.size();
  const uint64_t new_size = std::max<uint64_t>(loaded, t.first + (ksm ? t.ksm.size() : t.entries.size()));
  if (new_size > loaded && !r.translation_fits(new_size - loaded)) return UmrError::kBudget;
  ProtectionDomain* new_pd = nullptr;
  const uint32_t pd = get(wqe, seg::kPd);
  if ((mask & umr::kMaskPd) != 0 && pd != m->pd && (new_pd = r.pds.find(pd)) == nullptr) return UmrError::kBadPd;

  if (translating) {  // checked: the entries and the range land together
    if (new_size > loaded) {
      if (ksm)
        m->ksm.resize(new_size);  // entries never loaded name the null MKEY: not present
      else
        m->mtt.resize(new_size, 0);  // entries never loaded stay 0: not present
      m->mtt_charge = BudgetCharge(r.translation_entries, new_size);
    }
    if (ksm)
      std::copy(t.ksm.begin(), t.ksm.end(), m->ksm.begin() + std::ptrdiff_t(t.first));
    else
      std::copy(t.entries.begin(), t.entries.end(), m->mtt.begin() + std::ptrdiff_t(t.first));
    m->start = t.start;
    m->length = t.length;
    m->length64 = t.length64;
    m->log_page_size = t.log_page_size;
    m->driver_loaded = true;
    store_be64(&m->context[mkc::kStartAddr], t.start);
    store_be64(&m->context[mkc::kLen], t.length);
    set(m->context, mkc::kLength64, t.length64 ? 1 : 0);
    set(m->context, mkc::kLogPageSize, t.log_page_size);
  }

  // Each masked field lands in the MKEY and in its mkc.
  auto take = [&](uint64_t bit, Field from, Field to, auto apply) {
    if ((mask & bit) == 0) return;
    const uint32_t value = get(wqe, from);
    set(m->context, to, value);
    apply(value);
  };
  take(umr::kMaskLocalRead, seg::kLocalRead, mkc::kLocalRead, [&](uint32_t v) { m->local_read = v; });
  take(umr::kMaskLocalWrite, seg::kLocalWrite, mkc::kLocalWrite, [&](uint32_t v) { m->local_write = v; });
  take(umr::kMaskRemoteRead, seg::kRemoteRead, mkc::kRemoteRead, [&](uint32_t v) { m->remote_read = v; });
  take(umr::kMaskRemoteWrite, seg::kRemoteWrite, mkc::kRemoteWrite, [&](uint32_t v) { m->remote_write = v; });
  take(umr::kMaskAtomic, seg::kAtomic, mkc::kAtomic, [&](uint32_t v) { m->atomic = v; });
  take(umr::kMaskEnRinval, seg::kEnRinval, mkc::kEnRinval, [&](uint32_t v) { m->remote_invalidate = v; });
  take(umr::kMaskFree, seg::kFree, mkc::kFree, [&](uint32_t v) { m->free = v; });
  take(umr::kMaskKey, seg::kVariant, mkc::kVariant, [&](uint32_t v) { m->variant = uint8_t(v); });
  take(umr::kMaskPd, seg::kPd, mkc::kPd, [&](uint32_t v) {
    if (v == m->pd) return;
    if (ProtectionDomain* old_pd = r.pds.find(m->pd)) --old_pd->refs;
    ++new_pd->refs;
    m->pd = v;
  });
  return UmrError::kNone;
}

const char* bind_error_name(BindError error) {
  switch (error) {
    case BindError::kNone: return "none";
    case BindError::kMalformed: return "malformed";
    case BindError::kBadKey: return "bad_key";
    case BindError::kPd: return "pd";
    case BindError::kNotFree: return "not_free";
    case BindError::kWrongQp: return "wrong_qp";
    case BindError::kBadMr: return "bad_mr";
    case BindError::kAccess: return "access";
  }
  return "?";
}

namespace {

// An entry of an indirect layout names a key of the function that is not free, not itself
// indirect or a window, of the indirect key's PD, and covers every byte the entry maps.
bool entry_maps(const Resources& r, const Mkey::IndirectEntry& e, uint32_t pd, uint32_t repeats) {
  const Mkey* target = r.direct_key(e.key);
  if (target == nullptr || target->pd != pd) return false;
  if (e.bytes == 0) return true;
  const uint64_t span = uint64_t(repeats > 1 ? repeats - 1 : 0) * e.stride + (e.bytes - 1);
  const uint64_t last = e.va + span;
  return last >= e.va && target->covers(e.va, last);
}

// The inline translation of a layout UMR: a KLM list (byte_count, key, address each) summing to
// the key's length, or a repeat block (byte_count, op 0x400, repeat_count, num_ent) followed by
// num_ent entries (stride, byte_count, key, address) repeated repeat_count times.
constexpr uint32_t kRepeatBlockOp = 0x400;
constexpr uint32_t kMaxRepeatCount = 1u << 20;  // bounds the key's length with the 2 GiB of an entry set

std::optional<std::vector<Mkey::IndirectEntry>> parse_layout(std::span<const uint8_t> data, uint64_t length,
                                                             uint32_t& repeat_count) {
  std::vector<Mkey::IndirectEntry> entries;
  repeat_count = 0;
  if (data.size() >= 16 && load_be32(&data[4]) == kRepeatBlockOp) {
    const uint32_t block_bytes = load_be32(&data[0]);
    const uint32_t repeats = load_be32(&data[8]);
    const uint32_t count = load_be16(&data[14]);
    if (repeats == 0 || repeats > kMaxRepeatCount || count == 0 || (uint64_t(count) + 1) * 16 > data.size())
      return std::nullopt;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t* p = &data[16 + i * 16];
      const Mkey::IndirectEntry e{load_be32(p + 4), load_be64(p + 8), load_be16(p + 2), load_be16(p)};
      if (e.stride < e.bytes) return std::nullopt;  // entries of one repeat would overlap the next
      sum += e.bytes;
      entries.push_back(e);
    }
    if (sum != block_bytes || sum * repeats != length) return std::nullopt;
    repeat_count = repeats;
    return entries;
  }
  uint64_t sum = 0;
  for (size_t at = 0; at + 16 <= data.size() && sum < length; at += 16) {
    const Mkey::IndirectEntry e{load_be32(&data[at + 4]), load_be64(&data[at + 8]), load_be32(&data[at]), 0};
    if (e.bytes == 0 || e.bytes > umr::kMaxWindow) return std::nullopt;
    sum += e.bytes;
    entries.push_back(e);
  }
  if (sum != length || entries.empty()) return std::nullopt;
  return entries;
}

// mlx5dv_wr_mkey_configure on an indirect key (mlx5dv_create_mkey): the layout (inline, the key's
// length in the MKEY segment, no start address: the key is zero-based as created), the access
// flags the mask names, and the key enabled.
BindError configure_indirect(Resources& r, Mkey& m, std::span<const uint8_t> wqe, uint64_t mask) {
  if ((mask & umr::kMaskLen) == 0) return BindError::kMalformed;
  const uint32_t octowords = uint32_t(get(wqe, kXltOctowords));
  const uint64_t length = load_be64(&wqe[seg::kLen]);
  if (octowords == 0 || wqe.size() < umr::kKlmOffset + uint64_t(octowords) * 16 || length == 0 ||
      octowords > get(m.context, mkc::kTranslationsOctwordSize))
    return BindError::kMalformed;
  uint32_t repeat_count = 0;
  auto entries = parse_layout(wqe.subspan(umr::kKlmOffset, size_t(octowords) * 16), length, repeat_count);
  if (!entries) return BindError::kMalformed;
  for (const Mkey::IndirectEntry& e : *entries)
    if (!entry_maps(r, e, m.pd, repeat_count)) return BindError::kBadMr;
  // A signature key's BSF follows the translation; the mask turns it on or off.
  const uint32_t bsf_octowords = load_be16(&wqe[kBsfOctowords]);
  BlockSignature signature = m.signature;
  if (bsf_octowords != 0) {
    const uint64_t bsf_at = umr::kKlmOffset + uint64_t(octowords) * 16;
    if (!m.bsf_capable || bsf_octowords * 16 < kBsfBytes || wqe.size() < bsf_at + bsf_octowords * 16 ||
        parse_bsf(wqe.subspan(size_t(bsf_at), kBsfBytes), signature) != BsfError::kNone)
      return BindError::kMalformed;
  }
  const bool bsf_enabled = (mask & umr::kMaskBsfEnable) ? get(wqe, seg::kBsfEnable) != 0 : m.bsf_enabled;
  if (bsf_enabled && !m.bsf_capable) return BindError::kMalformed;

  auto take = [&](uint64_t bit, Field from, Field to, bool& flag) {
    if ((mask & bit) == 0) return;
    flag = get(wqe, from) != 0;
    set(m.context, to, flag ? 1 : 0);
  };
  take(umr::kMaskLocalWrite, seg::kLocalWrite, mkc::kLocalWrite, m.local_write);
  take(umr::kMaskRemoteRead, seg::kRemoteRead, mkc::kRemoteRead, m.remote_read);
  take(umr::kMaskRemoteWrite, seg::kRemoteWrite, mkc::kRemoteWrite, m.remote_write);
  take(umr::kMaskAtomic, seg::kAtomic, mkc::kAtomic, m.atomic);
  if (mask & umr::kMaskKey) m.variant = uint8_t(get(wqe, seg::kVariant));
  m.indirect = std::move(*entries);
  m.repeat_count = repeat_count;
  m.signature = signature;
  m.bsf_enabled = bsf_enabled;
  if (mask & umr::kMaskSigErr) m.sigerr_expected = uint8_t(get(wqe, seg::kSigErrCount));
  m.length = length;
  m.parent_key = 0;
  m.bound_qpn = Mkey::kNoQpn;
  m.free = false;
  set(m.context, mkc::kFree, 0);
  set(m.context, mkc::kVariant, m.variant);
  set64(m.context, mkc::kLen, length);
  return BindError::kNone;
}

}  // namespace

BindError apply_bind_umr(Resources& r, std::span<const uint8_t> wqe, uint32_t qp_pd, uint32_t qpn) {
  if (wqe.size() < umr::kMinBytes || wqe[3] != umr::kOpcode) return BindError::kMalformed;
  // ctrl imm: the window's (or key's) key. Its index names the MKEY; its tag is not compared, as
  // libmlx5 moves a type 1 window's tag on at unbind and leaves a type 2 window's at invalidation.
  const uint32_t key = load_be32(&wqe[12]);
  const uint8_t flags = wqe[kUmrFlags];
  const uint64_t mask = load_be64(&wqe[kMkeyMask]);
  Mkey* m = r.mkeys.find(key >> kKeyIndexShift);
  if (m == nullptr) return BindError::kBadKey;
  if (m->pd != qp_pd) return BindError::kPd;
  const bool invalidate = (mask & umr::kMaskFree) != 0 && get(wqe, seg::kFree) != 0;
  if (invalidate) {
    if ((flags & umr::kFlagCheckQpn) && m->bound_qpn != Mkey::kNoQpn && m->bound_qpn != qpn) return BindError::kWrongQp;
    if (!m->is_window() && (!m->umr_en || m->driver_loaded)) return BindError::kBadKey;  // an ibv_reg_mr key is the kernel's
    m->free = true;
    set(m->context, mkc::kFree, 1);
    return BindError::kNone;
  }
  if (!m->is_window()) return BindError::kBadKey;
  // A layout without a start address configures an indirect key; a bind names where the window starts.
  if ((flags & umr::kFlagInline) && (mask & umr::kMaskStartAddr) == 0) return configure_indirect(r, *m, wqe, mask);
  if ((flags & umr::kFlagCheckFree) && !m->free) return BindError::kNotFree;
  if (!(flags & umr::kFlagInline) || wqe.size() < umr::kKlmOffset + 16) return BindError::kMalformed;
  const uint64_t start = load_be64(&wqe[seg::kStartAddr]);
  const uint64_t length = load_be64(&wqe[seg::kLen]);
  const uint32_t klm_bytes = load_be32(&wqe[umr::kKlmOffset]);
  const uint32_t mr_key = load_be32(&wqe[umr::kKlmOffset + 4]);
  const uint64_t mr_address = load_be64(&wqe[umr::kKlmOffset + 8]);
  if (length == 0 || length > umr::kMaxWindow || klm_bytes < length || start + (length - 1) < start)
    return BindError::kMalformed;
  const Mkey* mr = r.direct_key(mr_key);
  if (mr == nullptr || mr->pd != qp_pd) return BindError::kBadMr;
  const uint64_t mr_last = mr_address + (length - 1);
  if (mr_last < mr_address || !mr->covers(mr_address, mr_last)) return BindError::kBadMr;
  const bool remote_write = get(wqe, seg::kRemoteWrite), atomic = get(wqe, seg::kAtomic);
  if ((remote_write || atomic) && !mr->local_write) return BindError::kAccess;  // IBA 10.6.7.2.3

  // Bound: the new key tag, the QP a type 2 window now answers to, its access and range.
  if (mask & umr::kMaskKey) m->variant = uint8_t(get(wqe, seg::kVariant));
  m->bound_qpn = (mask & umr::kMaskQpn) ? get(wqe, seg::kStartMkeyQpn) : Mkey::kNoQpn;
  m->local_write = get(wqe, seg::kLocalWrite);
  m->remote_read = get(wqe, seg::kRemoteRead);
  m->remote_write = remote_write;
  m->atomic = atomic;
  m->start = start;
  m->length = length;
  m->parent_key = mr_key;
  m->parent_address = mr_address;
  m->indirect.clear();
  m->repeat_count = 0;
  m->free = false;
  set(m->context, mkc::kFree, 0);
  set(m->context, mkc::kVariant, m->variant);
  return BindError::kNone;
}

}  // namespace hcaemu::model
