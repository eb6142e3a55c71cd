// libFuzzer target: arbitrary bytes as a send WQE (every service type, with and without an SGE
// limit), as RQ and SRQ receive WQEs and as the BSF a signature key's UMR carries. The parsers must
// answer every shape without reading outside the buffer, what they accept must be consistent with
// ds, and a signature domain they accept must accept the PI it computes itself.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "model/objects/block_signature.h"
#include "model/queues/recv_wqe.h"
#include "model/objects/resources.h"
#include "model/queues/send_wqe.h"

using namespace hcaemu::model;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes, so ASan sees any read past the end.
  const std::vector<uint8_t> bytes(data, data + size);
  const std::span<const uint8_t> all(bytes);
  const uint32_t qpn = size >= 8 ? (uint32_t(bytes[4]) << 16 | uint32_t(bytes[5]) << 8 | bytes[6]) : 0;
  SendWqe wqe;
  for (uint8_t st : {qp_st::kRc, qp_st::kUc, qp_st::kUd, qp_st::kXrc, qp_st::kQp1, qp_st::kRegUmr}) {
    for (uint32_t max_sges : {wqe_format::kMaxDs, 1u}) {
      if (parse_send_wqe(all, st, qpn, wqe, max_sges) != WqeError::kNone) continue;
      // Accepted: ds fits the bytes, the payload fits ds, the limits hold.
      if (wqe.ds == 0 || uint64_t(wqe.ds) * 16 > size || wqe.sges.size() > max_sges) abort();
      if (wqe.inline_data.size() > uint64_t(wqe.ds) * 16 || wqe.length() > wqe_format::kMaxMessage) abort();
      if (wqe.has_inline && !wqe.sges.empty()) abort();
      if (wqe.wqebbs() * 64 < uint32_t(wqe.ds) * 16) abort();
    }
  }
  (void)peek_ds(all);
  std::vector<Sge> sges;
  if (parse_recv_wqe(all, sges) == WqeError::kNone && sges.size() * 16 > size) abort();
  uint16_t next = 0;
  if (parse_srq_wqe(all, next, sges) == WqeError::kNone && sges.size() * 16 + 16 > size) abort();
  BlockSignature signature;
  if (size >= kBsfBytes && parse_bsf(all.first(kBsfBytes), signature) == BsfError::kNone) {
    if (signature.memory.has_pi() && signature.wire.has_pi()) abort();  // one domain at most
    for (const SigDomain* d : {&signature.memory, &signature.wire}) {
      if (!d->has_pi()) continue;
      if (d->block_size == 0 || d->block_size > 4160 || d->pi_size() > 8) abort();
      std::vector<uint8_t> block(d->block_size);
      for (size_t i = 0; i < block.size(); ++i) block[i] = bytes[i % size];
      std::array<uint8_t, 8> pi{};
      compute_pi(*d, block, size, pi);
      if (check_pi(*d, 0xff, block, size, std::span<const uint8_t>(pi.data(), d->pi_size()))) abort();
    }
  }
  return 0;
}
