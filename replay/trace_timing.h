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
#include <vector>

#include "replay/reconstruct.h"
#include "traces/qp_table.h"

namespace hcaemu::replay {

struct TraceTiming {
  struct Times {
    uint64_t doorbell_ps = 0, cqe_ps = 0;  // cqe_ps 0: no CQE (an unsignalled WQE)
    bool payload_dma = false;              // false: its data came inline in the WQE (or it has none)
  };
  // (function, QPN << 24 | last PSN) -> times. The trace's function is a vhca id the capture does
  // not show; the QP table tells it per QP (apply_qp_table), else only ids one function has join.
  std::map<std::pair<uint16_t, uint64_t>, Times> by_function_id;
  std::map<uint64_t, uint16_t> sole_function;  // ids exactly one function has
  uint64_t messages = 0;   // with a doorbell
  uint64_t ambiguous = 0;  // ids several functions have
};

// Reads PREFIX.csv; null with "FILE:LINE: reason" on malformed input.
std::optional<TraceTiming> read_trace_timing(const std::string& csv_path, std::string* error);
// Sets what the trace knows of every message of `capture` it has (doorbell, CQE, whether it was
// signalled and whether its payload was read by DMA); returns how many. Apply the QP table first:
// it names each requester's function, which tells apart ids several functions have.
size_t apply_trace_timing(Reconstruction& capture, const TraceTiming& timing);

// Gives each end of each QP pair what hcaemu's QP table (traces/qp_table.h) has for it (its
// function, CQs, send queue size): the record of the same address and QPN that is the latest
// before the QP's first packet. Returns how many QP ends it found.
size_t apply_qp_table(Reconstruction& capture, const std::vector<traces::QpRecord>& table);

}  // namespace hcaemu::replay
