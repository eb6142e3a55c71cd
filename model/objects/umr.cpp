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
}  // namespace seg

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

}  // namespace hcaemu::model
