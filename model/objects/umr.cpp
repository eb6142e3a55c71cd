#include "model/objects/umr.h"

#include "common/endian.h"
#include "model/prm/bits.h"
#include "model/prm/mkc_fields.h"

namespace hcaemu::model {
namespace {

constexpr uint32_t kKeyIndexShift = 8;

// The UMR control segment (after the 16-byte ctrl segment).
constexpr Field kXltOctowords{umr::kControlOffset + 0x04, 31, 16};
constexpr uint32_t kMkeyMask = umr::kControlOffset + 0x08;

// The MKEY segment has mkc's layout.
namespace seg {
using mkc::within;
constexpr uint32_t at = umr::kMkeySegmentOffset;
constexpr Field kFree = within(mkc::kFree, at), kAtomic = within(mkc::kAtomic, at),
                kRemoteWrite = within(mkc::kRemoteWrite, at), kRemoteRead = within(mkc::kRemoteRead, at),
                kLocalWrite = within(mkc::kLocalWrite, at), kLocalRead = within(mkc::kLocalRead, at),
                kVariant = within(mkc::kVariant, at), kEnRinval = within(mkc::kEnRinval, at), kPd = within(mkc::kPd, at);
constexpr Field kStartMkeyQpn = within(Field{0x04, 31, 8}, at);  // mkc.qpn
constexpr uint32_t kStartAddr = at + mkc::kStartAddr, kLen = at + mkc::kLen;
}  // namespace seg

constexpr uint32_t kUmrFlags = umr::kControlOffset;  // the UMR control segment's first byte

}  // namespace

const char* umr_error_name(UmrError error) {
  switch (error) {
    case UmrError::kNone: return "none";
    case UmrError::kMalformed: return "malformed";
    case UmrError::kBadKey: return "bad_key";
    case UmrError::kBadPd: return "bad_pd";
    case UmrError::kTranslation: return "translation_not_modelled";
  }
  return "?";
}

UmrError apply_umr(Resources& r, std::span<const uint8_t> wqe) {
  if (wqe.size() < umr::kMinBytes || wqe[3] != umr::kOpcode) return UmrError::kMalformed;
  const uint32_t key = load_be32(&wqe[12]);  // ctrl general_id: the MKEY to change
  const uint64_t mask = load_be64(&wqe[kMkeyMask]);
  Mkey* m = r.mkeys.find(key >> kKeyIndexShift);
  if (m == nullptr || m->variant != (key & 0xff)) return UmrError::kBadKey;
  if (get(wqe, kXltOctowords) != 0 || (mask & umr::kMaskTranslation) != 0) return UmrError::kTranslation;
  ProtectionDomain* new_pd = nullptr;
  const uint32_t pd = get(wqe, seg::kPd);
  if ((mask & umr::kMaskPd) != 0 && pd != m->pd && (new_pd = r.pds.find(pd)) == nullptr) return UmrError::kBadPd;

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
    if (!m->is_window() && !m->umr_en) return BindError::kBadKey;  // an ibv_reg_mr key is the kernel's
    m->free = true;
    set(m->context, mkc::kFree, 1);
    return BindError::kNone;
  }
  if (!m->is_window()) return BindError::kBadKey;
  if ((flags & umr::kFlagCheckFree) && !m->free) return BindError::kNotFree;
  if (!(flags & umr::kFlagInline) || wqe.size() < umr::kKlmOffset + 16) return BindError::kMalformed;
  const uint64_t start = load_be64(&wqe[seg::kStartAddr]);
  const uint64_t length = load_be64(&wqe[seg::kLen]);
  const uint32_t klm_bytes = load_be32(&wqe[umr::kKlmOffset]);
  const uint32_t mr_key = load_be32(&wqe[umr::kKlmOffset + 4]);
  const uint64_t mr_address = load_be64(&wqe[umr::kKlmOffset + 8]);
  if (length == 0 || length > umr::kMaxWindow || klm_bytes < length || start + (length - 1) < start)
    return BindError::kMalformed;
  const Mkey* mr = r.mkeys.find(mr_key >> kKeyIndexShift);
  if (mr == nullptr || mr->variant != (mr_key & 0xff) || mr->free || mr->is_window() || mr->pd != qp_pd)
    return BindError::kBadMr;
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
  m->free = false;
  set(m->context, mkc::kFree, 0);
  set(m->context, mkc::kVariant, m->variant);
  return BindError::kNone;
}

}  // namespace hcaemu::model
