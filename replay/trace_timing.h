#pragma once
// hcaemu's own latency trace (--trace PREFIX: PREFIX.csv) as the timing of a capture of the same
// run. A capture shows when packets left; the trace shows when each WQE's doorbell rang and when
// its CQE was written, in the same model time. The trace names no peer, so it joins the capture
// rather than standing alone: a connected message's trace id is its requester's QPN and its last
// PSN, which the capture's reconstruction knows too.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "replay/reconstruct.h"

namespace hcaemu::replay {

struct TraceTiming {
  struct Times {
    uint64_t doorbell_ps = 0, cqe_ps = 0;  // cqe_ps 0: no CQE (an unsignalled WQE)
    bool payload_dma = false;              // false: its data came inline in the WQE (or it has none)
  };
  std::map<uint64_t, Times> by_id;  // (QPN << 24 | last PSN) -> times, for ids one function has
  uint64_t messages = 0;            // with a doorbell
  uint64_t ambiguous = 0;           // ids several functions have (left out)
};

// Reads PREFIX.csv; null with "FILE:LINE: reason" on malformed input.
std::optional<TraceTiming> read_trace_timing(const std::string& csv_path, std::string* error);
// Sets what the trace knows of every message of `capture` it has (doorbell, CQE, whether it was
// signalled and whether its payload was read by DMA); returns how many.
size_t apply_trace_timing(Reconstruction& capture, const TraceTiming& timing);

}  // namespace hcaemu::replay
