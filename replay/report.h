#pragma once
// What a replay writes (one directory per run): messages.csv, one row per operation, and the
// summary: flow completion time percentiles per opcode and size bucket, and the run's totals.
#include <ostream>

#include "replay/replayer.h"

namespace hcaemu::replay {

// qp,op,opcode,bytes,post_ns,done_ns,fct_ns,status (times in ns with three decimals).
void write_messages_csv(std::ostream& out, const ReplayResult& result);
void write_summary(std::ostream& out, const ReplayResult& result);
// Timelines in bins of `bin_ps` (bins without traffic left out):
//   links.csv: port,bin_start_ns,bytes,gbps,max_queue_bytes   (each switch port toward a host)
//   qps.csv:   qp,bin_start_ns,bytes,gbps                      (payload of the operations completed)
void write_link_timeline(std::ostream& out, const ReplayResult& result, uint64_t bin_ps);
void write_qp_timeline(std::ostream& out, const ReplayResult& result, uint64_t bin_ps);

}  // namespace hcaemu::replay
