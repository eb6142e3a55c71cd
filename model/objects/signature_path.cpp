#include "model/objects/signature_path.h"

#include <algorithm>

namespace hcaemu::model {
namespace {

// Where stream byte `stream` of a key sits in a domain whose blocks of `block` bytes each carry
// `pi` bytes of PI after them.
uint64_t domain_offset(uint64_t stream, uint32_t block, uint32_t pi) { return stream + stream / block * pi; }

}  // namespace

const Mkey* signature_key(const Resources& r, uint32_t key) {
  const Mkey* m = r.mkeys.find(key >> 8);
  if (m == nullptr || m->variant != (key & 0xff) || m->free || !m->bsf_enabled) return nullptr;
  return m->signature.memory.has_pi() || m->signature.wire.has_pi() ? m : nullptr;
}

bool any_signature_key(const Resources& r, std::span<const Sge> sges) {
  return std::any_of(sges.begin(), sges.end(), [&](const Sge& s) { return signature_key(r, s.lkey) != nullptr; });
}

ProtectionError SignatureList::open(const Resources& r, std::span<const Sge> sges, uint32_t pd, uint8_t access) {
  resources_ = &r;
  pd_ = pd;
  access_ = access;
  pieces_.clear();
  wire_length_ = 0;
  error_.reset();
  for (const Sge& sge : sges) {
    Piece p{.key = sge.lkey, .sig = signature_key(r, sge.lkey), .stream_start = sge.addr, .length = sge.length};
    p.wire_start = wire_length_;
    if (p.sig != nullptr) {
      const BlockSignature& s = p.sig->signature;
      const uint32_t block = s.block_size();
      // The key's length is its memory's; a stream range past its data (or wrapping) is out too.
      const uint64_t memory_pi = s.memory.pi_size();
      const uint64_t stream_bytes = p.sig->length / (block + memory_pi) * block +
                                    std::min<uint64_t>(p.sig->length % (block + memory_pi), block);
      if (p.stream_start % block != 0 || p.stream_start > stream_bytes || p.length > stream_bytes - p.stream_start)
        return ProtectionError::kBounds;
      // The memory range the stream covers, PI of its completed blocks included, is inside the key.
      const uint64_t memory_end = domain_offset(p.stream_start + p.length, block, s.memory.pi_size());
      std::vector<DmaChunk> probe;
      const uint64_t memory_start = domain_offset(p.stream_start, block, s.memory.pi_size());
      if (ProtectionError e = translate(r, p.key, pd, memory_start, memory_end - memory_start, access, probe);
          e != ProtectionError::kNone)
        return e;
      p.wire_length = p.length + p.length / block * s.wire.pi_size();
    } else {
      if (ProtectionError e = translate(r, p.key, pd, p.stream_start, p.length, access, p.chunks);
          e != ProtectionError::kNone)
        return e;
      p.wire_length = p.length;
    }
    wire_length_ += p.wire_length;
    pieces_.push_back(std::move(p));
  }
  return ProtectionError::kNone;
}

bool SignatureList::read(pcie::HostMemory& m, uint64_t offset, std::span<uint8_t> out) {
  return io(m, offset, out.size(), out, {});
}

bool SignatureList::write(pcie::HostMemory& m, uint64_t offset, std::span<const uint8_t> in,
                          std::array<uint8_t, 8>& pending_pi) {
  pending_pi_ = &pending_pi;
  return io(m, offset, in.size(), {}, in);
}

bool SignatureList::io(pcie::HostMemory& m, uint64_t offset, size_t size, std::span<uint8_t> out,
                       std::span<const uint8_t> in) {
  if (offset + size > wire_length_) return false;
  size_t done = 0;
  for (const Piece& p : pieces_) {
    if (done == size) break;
    const uint64_t at = offset + done;
    if (at >= p.wire_start + p.wire_length) continue;
    const size_t run = size_t(std::min<uint64_t>(size - done, p.wire_start + p.wire_length - at));
    if (!piece_io(m, p, at - p.wire_start, out.empty() ? out : out.subspan(done, run),
                  in.empty() ? in : in.subspan(done, run)))
      return false;
    done += run;
  }
  return done == size;
}

bool SignatureList::memory_io(pcie::HostMemory& m, const Piece& p, uint64_t memory_offset, std::span<uint8_t> out,
                              std::span<const uint8_t> in) {
  std::vector<DmaChunk> chunks;
  const uint64_t length = out.empty() ? in.size() : out.size();
  if (translate(*resources_, p.key, pd_, memory_offset, length, out.empty() ? access_ : access::kLocalRead, chunks) !=
      ProtectionError::kNone)
    return false;
  return out.empty() ? write_chunks(m, chunks, 0, in) : read_chunks(m, chunks, 0, out);
}

bool SignatureList::block_data(pcie::HostMemory& m, const Piece& p, uint64_t block, std::vector<uint8_t>& data,
                               std::span<uint8_t> pi) {
  const BlockSignature& s = p.sig->signature;
  const uint32_t size = s.block_size();
  data.resize(size);
  const uint64_t at = block * (size + s.memory.pi_size());
  return memory_io(m, p, at, data, {}) && (pi.empty() || memory_io(m, p, at + size, pi, {}));
}

void SignatureList::record(const Piece& p, std::optional<SigCheckFailure> failure, uint64_t block) {
  if (!failure || error_) return;
  failure->memory_domain = p.sig->signature.memory.has_pi();
  failure->offset = block * p.sig->signature.block_size();
  error_ = SignatureError{.key = p.key, .failure = *failure};
}

// The wire bytes [offset, offset + n) of one piece: a plain SGE's straight, a signature SGE's
// block by block (data, then the wire PI of a completed block).
bool SignatureList::piece_io(pcie::HostMemory& m, const Piece& p, uint64_t offset, std::span<uint8_t> out,
                             std::span<const uint8_t> in) {
  if (p.sig == nullptr) return out.empty() ? write_chunks(m, p.chunks, offset, in) : read_chunks(m, p.chunks, offset, out);
  const BlockSignature& s = p.sig->signature;
  const uint32_t block = s.block_size(), wire_pi = s.wire.pi_size(), memory_pi = s.memory.pi_size();
  const uint32_t unit = block + wire_pi;
  const bool gather = in.empty();
  const size_t size = gather ? out.size() : in.size();
  std::array<uint8_t, 8> pi{};
  for (size_t done = 0; done < size;) {
    const uint64_t pos = offset + done;
    const uint64_t k = pos / unit;
    const uint32_t r = uint32_t(pos % unit);
    const uint64_t abs_block = p.stream_start / block + k;
    if (r < block) {  // data
      if (k * block + r >= p.length) return false;  // past the stream (wire_length bounds the offsets)
      const size_t run = size_t(std::min<uint64_t>({size - done, block - r, p.length - (k * block + r)}));
      const uint64_t memory_at = abs_block * (block + memory_pi) + r;
      if (!memory_io(m, p, memory_at, gather ? out.subspan(done, run) : std::span<uint8_t>{},
                     gather ? std::span<const uint8_t>{} : in.subspan(done, run)))
        return false;
      done += run;
      const bool completes = r + run == block && (k + 1) * block <= p.length;
      if (completes && memory_pi != 0) {
        std::span<uint8_t> mpi(pi.data(), memory_pi);
        if (!block_data(m, p, abs_block, block_, gather ? mpi : std::span<uint8_t>{})) return false;
        if (gather) {
          record(p, check_pi(s.memory, s.check_mask, block_, abs_block, mpi), abs_block);
        } else {
          compute_pi(s.memory, block_, abs_block, mpi);
          if (!memory_io(m, p, abs_block * (block + memory_pi) + block, {}, mpi)) return false;
        }
      }
      continue;
    }
    // The wire PI of block abs_block, byte r - block on.
    const uint32_t i = r - block;
    const size_t run = std::min<size_t>(size - done, wire_pi - i);
    if (gather) {
      if (!block_data(m, p, abs_block, block_, {})) return false;
      compute_pi(s.wire, block_, abs_block, pi);
      std::copy_n(pi.begin() + i, run, out.begin() + done);
    } else {
      std::copy_n(in.begin() + done, run, pending_pi_->begin() + i);
      if (i + run == wire_pi) {
        if (!block_data(m, p, abs_block, block_, {})) return false;
        record(p, check_pi(s.wire, s.check_mask, block_, abs_block, std::span<const uint8_t>(pending_pi_->data(), wire_pi)),
               abs_block);
      }
    }
    done += run;
  }
  return true;
}

}  // namespace hcaemu::model
