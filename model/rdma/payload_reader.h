#pragma once
// The payload of a send WQE as the send engine reads it: the gather list's local keys checked
// once (local read access in the QP's PD), then any part of it read, all reads pipelined from one
// issue time so that each part waits only for its own bytes. The RC requester reads a message
// packet by packet; a datagram reads its one packet.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/objects/memory_protection.h"
#include "model/objects/signature_path.h"
#include "model/objects/resources.h"
#include "model/queues/send_wqe.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

class PayloadReader {
 public:
  // The local keys' check: anything but kNone fails the message (kNotPresent: an ODP page to
  // fault in first). Without host memory the reader opens, and every read fails (a DMA fault).
  ProtectionError open(const Resources& resources, pcie::HostMemory* memory, const SendWqe& wqe, uint32_t pd,
                       uint64_t issue_ps) {
    chunks_.clear();
    reads_.reset();
    uint64_t total = 0;
    if (const ProtectionError error = translate_sges(resources, wqe.sges, pd, access::kLocalRead, chunks_, total);
        error != ProtectionError::kNone)
      return error;
    // Through a signature key the payload is the wire domain's (objects/signature_path.h).
    signature_.reset();
    if (any_signature_key(resources, wqe.sges)) {
      if (const ProtectionError error = signature_.emplace().open(resources, wqe.sges, pd, access::kLocalRead);
          error != ProtectionError::kNone)
        return error;
    }
    if (memory != nullptr) reads_.emplace(*memory, issue_ps);
    return ProtectionError::kNone;
  }
  // `out.size()` bytes of the payload from `offset`; false on a DMA fault.
  bool read(uint64_t offset, std::span<uint8_t> out) {
    if (!reads_) return false;
    return signature_ ? signature_->read(*reads_, offset, out) : read_chunks(*reads_, chunks_, offset, out);
  }
  // A PI check of a signature key that failed in the reads so far.
  std::optional<SignatureError> take_signature_error() {
    return signature_ ? signature_->take_error() : std::nullopt;
  }
  // When the bytes read so far have arrived (model time).
  uint64_t ready_ps() const { return reads_ ? reads_->ready_ps() : 0; }

 private:
  std::vector<DmaChunk> chunks_;
  std::optional<SignatureList> signature_;
  std::optional<pcie::PipelinedReads> reads_;
};

}  // namespace hcaemu::model
