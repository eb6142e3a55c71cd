#include "model/objects/block_signature.h"

#include "common/endian.h"

namespace hcaemu::model {
namespace {

// BSF (struct mlx5_bsf): basic section, then 16 reserved bytes, then the wire's and the memory's
// inline T10-DIF sections.
constexpr uint32_t kSizeSbs = 0, kCheckMask = 1, kWireSelector = 2, kMemorySelector = 3, kWireBfsPsv = 8,
                   kMemoryBfsPsv = 12, kWireInline = 32, kMemoryInline = 48;
constexpr uint8_t kSbs = 1u << 4;  // same block structure: the PI passes from one domain to the other
// Inline section (struct mlx5_bsf_inl).
constexpr uint16_t kInlineValid = 0x8000;
constexpr uint32_t kInlApp = 2, kInlRef = 4, kInlSigType = 8, kInlSeed = 9, kInlFlags = 13, kInlAppMask = 14;
constexpr uint8_t kInlSigTypeCrc = 1, kInlSigTypeCsum = 2, kInlSeedOnes = 0x08;
constexpr uint8_t kInlIncRef = 0x40, kInlAppRefEscape = 0x02, kInlAppEscape = 0x01;
// Block format selector of a CRC domain (high nibble) and its seed-is-zero bit.
constexpr uint8_t kBfsCrc32 = 0x2, kBfsCrc32c = 0x4, kBfsSeedZero = 0x01;

uint32_t block_size_of(uint8_t selector) {
  switch (selector) {
    case 1: return 512;
    case 2: return 520;
    case 3: return 4096;
    case 4: return 4160;
    default: return 0;
  }
}

BsfError parse_domain(std::span<const uint8_t> bsf, uint8_t selector, uint32_t bfs_psv_at, uint32_t inline_at,
                      SigDomain& d) {
  const uint32_t bfs_psv = load_be32(&bsf[bfs_psv_at]);
  const uint8_t bfs = uint8_t(bfs_psv >> 24);
  const uint8_t* inl = &bsf[inline_at];
  d = SigDomain{};
  d.psv = bfs_psv & 0xffffff;
  if (load_be16(inl) & kInlineValid) {
    const uint8_t type = inl[kInlSigType];
    if (type != kInlSigTypeCrc && type != kInlSigTypeCsum) return BsfError::kType;
    d.type = type == kInlSigTypeCrc ? SigType::kT10DifCrc : SigType::kT10DifCsum;
    d.app_tag = load_be16(inl + kInlApp);
    d.ref_tag = load_be32(inl + kInlRef);
    d.seed_ones = (inl[kInlSeed] & kInlSeedOnes) != 0;
    d.inc_ref_tag = (inl[kInlFlags] & kInlIncRef) != 0;
    d.app_ref_escape = (inl[kInlFlags] & kInlAppRefEscape) != 0;
    d.app_escape = !d.app_ref_escape && (inl[kInlFlags] & kInlAppEscape) != 0;
    d.app_mask = load_be16(inl + kInlAppMask);
  } else if (bfs != 0) {
    const uint8_t kind = bfs >> 4;
    if (kind != kBfsCrc32 && kind != kBfsCrc32c) return BsfError::kType;  // CRC64 is not offered
    d.type = kind == kBfsCrc32 ? SigType::kCrc32 : SigType::kCrc32c;
    d.seed_ones = (bfs & kBfsSeedZero) == 0;
  } else {
    return BsfError::kNone;
  }
  d.block_size = block_size_of(selector);
  return d.block_size == 0 ? BsfError::kBlockSize : BsfError::kNone;
}

}  // namespace

BsfError parse_bsf(std::span<const uint8_t> bsf, BlockSignature& out) {
  if (bsf.size() < kBsfBytes) return BsfError::kType;
  out = BlockSignature{};
  if (bsf[kSizeSbs] & kSbs) return BsfError::kBothDomains;
  out.check_mask = bsf[kCheckMask];
  if (BsfError e = parse_domain(bsf, bsf[kWireSelector], kWireBfsPsv, kWireInline, out.wire); e != BsfError::kNone)
    return e;
  if (BsfError e = parse_domain(bsf, bsf[kMemorySelector], kMemoryBfsPsv, kMemoryInline, out.memory);
      e != BsfError::kNone)
    return e;
  return out.wire.has_pi() && out.memory.has_pi() ? BsfError::kBothDomains : BsfError::kNone;
}

uint16_t crc16_t10dif(uint16_t init, std::span<const uint8_t> data) {
  uint16_t crc = init;
  for (uint8_t byte : data) {
    crc ^= uint16_t(byte) << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) ? uint16_t((crc << 1) ^ 0x8bb7) : uint16_t(crc << 1);
  }
  return crc;
}

uint32_t crc32_block(uint32_t init, std::span<const uint8_t> data, bool castagnoli) {
  const uint32_t poly = castagnoli ? 0x82f63b78u : 0xedb88320u;
  uint32_t crc = init;
  for (uint8_t byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (poly & (0u - (crc & 1)));
  }
  return crc ^ 0xffffffffu;
}

uint16_t ip_checksum_guard(std::span<const uint8_t> data) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < data.size(); i += 2) sum += load_be16(&data[i]);
  if (data.size() % 2) sum += uint32_t(data.back()) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

void compute_pi(const SigDomain& d, std::span<const uint8_t> data, uint64_t block, std::span<uint8_t> pi) {
  switch (d.type) {
    case SigType::kNone: return;
    case SigType::kCrc32:
    case SigType::kCrc32c:
      store_be32(pi.data(), crc32_block(d.seed_ones ? 0xffffffffu : 0, data, d.type == SigType::kCrc32c));
      return;
    case SigType::kT10DifCrc:
    case SigType::kT10DifCsum:
      store_be16(pi.data(), d.type == SigType::kT10DifCrc ? crc16_t10dif(d.seed_ones ? 0xffff : 0, data)
                                                          : ip_checksum_guard(data));
      store_be16(pi.data() + 2, d.app_tag);
      store_be32(pi.data() + 4, d.inc_ref_tag ? uint32_t(d.ref_tag + block) : d.ref_tag);
      return;
  }
}

std::optional<SigCheckFailure> check_pi(const SigDomain& d, uint8_t check_mask, std::span<const uint8_t> data,
                                        uint64_t block, std::span<const uint8_t> pi) {
  std::array<uint8_t, 8> expected{};
  compute_pi(d, data, block, expected);
  const bool t10dif = d.type == SigType::kT10DifCrc || d.type == SigType::kT10DifCsum;
  if (t10dif) {
    const uint16_t app = load_be16(&pi[2]);
    if (d.app_ref_escape && app == 0xffff && load_be32(&pi[4]) == 0xffffffffu) return std::nullopt;
    if (d.app_escape && app == 0xffff) return std::nullopt;
  }
  uint16_t syndrome = 0;
  for (uint32_t i = 0; i < d.pi_size(); ++i) {
    if ((check_mask & (0x80u >> i)) == 0) continue;
    uint8_t differ = uint8_t(expected[i] ^ pi[i]);
    if (t10dif && (i == 2 || i == 3)) differ &= uint8_t(d.app_mask >> (i == 2 ? 8 : 0));
    if (differ == 0) continue;
    syndrome |= !t10dif || i < 2 ? sig_syndrome::kGuard : i < 4 ? sig_syndrome::kAppTag : sig_syndrome::kRefTag;
  }
  if (syndrome == 0) return std::nullopt;
  SigCheckFailure failure;
  failure.syndrome = syndrome;
  if (t10dif) {
    failure.expected_signature = load_be32(expected.data());
    failure.actual_signature = load_be32(pi.data());
    failure.expected_ref_tag = load_be32(&expected[4]);
    failure.actual_ref_tag = load_be32(&pi[4]);
  } else {
    failure.expected_signature = load_be32(expected.data());
    failure.actual_signature = load_be32(pi.data());
  }
  return failure;
}

}  // namespace hcaemu::model
