#pragma once
// The data path through signature MKEYs (objects/block_signature.h): a send's gather list and a
// receive WQE's scatter list may name such keys. Their SGEs count stream (data) bytes and must
// start on a block boundary; the bytes on the wire are the stream with the wire domain's PI after
// each completed block, the bytes in memory (through the key's layout) the stream with the memory
// domain's PI. Remote access (RDMA READ/WRITE, atomics) through a signature key is refused.
#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include "model/objects/memory_protection.h"
#include "model/objects/resources.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

// The signature key `key` names (enabled, with a BSF), or null.
const Mkey* signature_key(const Resources& r, uint32_t key);
bool any_signature_key(const Resources& r, std::span<const Sge> sges);

// A found signature error: the key and what failed.
struct SignatureError {
  uint32_t key = 0;
  SigCheckFailure failure;
};

// One gather or scatter list in wire units.
class SignatureList {
 public:
  // kBounds when a signature SGE does not start on a block boundary or its memory range runs past
  // the key; the keys' access was checked by translate_sges before.
  ProtectionError open(const Resources& r, std::span<const Sge> sges, uint32_t pd, uint8_t access);
  // The list's length on the wire: stream bytes plus the wire PI of every completed block.
  uint64_t wire_length() const { return wire_length_; }
  // Gather: the wire bytes [offset, offset + out.size()); checks the memory PI of every block whose
  // last byte it reads. False on a DMA fault or past the end.
  bool read(pcie::HostMemory& m, uint64_t offset, std::span<uint8_t> out);
  // Scatter: wire bytes at `offset` (in order); writes the data, checks the wire PI of every block
  // it completes and writes the memory PI after every block it completes. `pending_pi` keeps a
  // wire PI that a packet boundary split until its last byte arrives.
  bool write(pcie::HostMemory& m, uint64_t offset, std::span<const uint8_t> in, std::array<uint8_t, 8>& pending_pi);
  // The first check that failed since the last call (each block is checked once).
  std::optional<SignatureError> take_error() { return std::exchange(error_, std::nullopt); }

 private:
  struct Piece {
    uint32_t key = 0;
    const Mkey* sig = nullptr;    // null: a plain SGE
    uint64_t stream_start = 0;    // the SGE's address (a signature key is zero-based)
    uint64_t length = 0;          // stream bytes
    uint64_t wire_start = 0, wire_length = 0;
    std::vector<DmaChunk> chunks; // a plain SGE's translation
  };
  bool piece_io(pcie::HostMemory& m, const Piece& p, uint64_t offset, std::span<uint8_t> out,
                std::span<const uint8_t> in);
  bool io(pcie::HostMemory& m, uint64_t offset, size_t size, std::span<uint8_t> out, std::span<const uint8_t> in);
  bool memory_io(pcie::HostMemory& m, const Piece& p, uint64_t memory_offset, std::span<uint8_t> out,
                 std::span<const uint8_t> in);
  bool block_data(pcie::HostMemory& m, const Piece& p, uint64_t block, std::vector<uint8_t>& data, std::span<uint8_t> pi);
  void record(const Piece& p, std::optional<SigCheckFailure> failure, uint64_t block);

  const Resources* resources_ = nullptr;
  uint32_t pd_ = 0;
  uint8_t access_ = 0;
  std::vector<Piece> pieces_;
  uint64_t wire_length_ = 0;
  std::array<uint8_t, 8>* pending_pi_ = nullptr;
  std::vector<uint8_t> block_;
  std::optional<SignatureError> error_;
};

}  // namespace hcaemu::model
