#pragma once
// Block signatures (T10-DIF and CRC protection information) of a signature MKEY: mlx5dv_create_mkey
// with BLOCK_SIGNATURE makes a KLM key with room for a BSF (byte stream format, 64 bytes) that
// mlx5dv_wr_mkey_configure + mlx5dv_wr_set_mkey_sig_block load by UMR. The BSF describes two
// domains: the memory (what the key's layout points at) and the wire (what the key's users send
// and receive). A domain with a signature carries a PI (protection information) after each block
// of data: 8 bytes of T10-DIF (guard, application tag, reference tag) or 4 of CRC32/CRC32C.
// Addresses and lengths through the key count data bytes only (the stream); the device inserts
// the output domain's PI after each block it completes and checks and strips the input domain's.
// Only one domain may carry a signature here (mlx5's "same block structure" pass-through and
// conversions between two signatures are refused when the BSF is loaded).
#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace hcaemu::model {

enum class SigType : uint8_t { kNone, kT10DifCrc, kT10DifCsum, kCrc32, kCrc32c };

struct SigDomain {
  SigType type = SigType::kNone;
  uint32_t block_size = 0;     // data bytes a PI protects
  bool seed_ones = false;      // guard / CRC starts from all ones (else 0)
  uint16_t app_tag = 0;        // T10-DIF
  uint32_t ref_tag = 0;        // T10-DIF: block k's tag is ref_tag + k with inc_ref_tag
  bool inc_ref_tag = false;
  bool app_escape = false;     // a PI with application tag 0xffff is not checked
  bool app_ref_escape = false; // ... with application tag 0xffff and reference tag 0xffffffff
  uint16_t app_mask = 0xffff;  // application tag bits compared
  uint32_t psv = 0;            // the PSV libmlx5 pairs with the domain

  bool has_pi() const { return type != SigType::kNone; }
  uint32_t pi_size() const { return type == SigType::kCrc32 || type == SigType::kCrc32c ? 4 : has_pi() ? 8 : 0; }
};

struct BlockSignature {
  SigDomain memory, wire;
  uint8_t check_mask = 0;  // bit 7 - i: PI byte i of the input domain is checked
  uint32_t block_size() const { return memory.has_pi() ? memory.block_size : wire.block_size; }
};

// The syndrome bits of a SIGERR CQE (and mlx5dv_mkey_check's error kinds).
namespace sig_syndrome {
inline constexpr uint16_t kGuard = 1u << 13, kAppTag = 1u << 12, kRefTag = 1u << 11;
}

// A block whose input PI failed its check.
struct SigCheckFailure {
  uint16_t syndrome = 0;
  uint32_t expected_signature = 0, actual_signature = 0;  // T10-DIF: guard << 16 | app tag; CRC: the CRC
  uint32_t expected_ref_tag = 0, actual_ref_tag = 0;
  bool memory_domain = false;  // the failing PI was the memory's (else the wire's)
  uint64_t offset = 0;         // stream offset of the failing block
};

inline constexpr uint32_t kBsfBytes = 64;

enum class BsfError : uint8_t { kNone, kBlockSize, kType, kBothDomains };

// Parses the 64-byte BSF of a UMR WQE. kNone with both domains kNone is a key without signature.
BsfError parse_bsf(std::span<const uint8_t> bsf, BlockSignature& out);

// The PI of data block `block` (its `domain.block_size` bytes) in `domain`, into pi[0, pi_size).
void compute_pi(const SigDomain& domain, std::span<const uint8_t> data, uint64_t block, std::span<uint8_t> pi);

// Checks `pi` (as found) against the data under `check_mask`; nothing when it holds or is escaped.
std::optional<SigCheckFailure> check_pi(const SigDomain& domain, uint8_t check_mask, std::span<const uint8_t> data,
                                        uint64_t block, std::span<const uint8_t> pi);

// The checksums (exposed for tests): CRC-16/T10-DIF (poly 0x8bb7, not reflected), CRC-32 (IEEE
// 802.3 / FC-PH, reflected) and CRC-32C (Castagnoli, reflected), each from `init` with the final
// inversion of the 32-bit ones; the IP checksum guard (ones' complement sum of 16-bit words).
uint16_t crc16_t10dif(uint16_t init, std::span<const uint8_t> data);
uint32_t crc32_block(uint32_t init, std::span<const uint8_t> data, bool castagnoli);
uint16_t ip_checksum_guard(std::span<const uint8_t> data);

}  // namespace hcaemu::model
