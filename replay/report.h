#pragma once
// What a replay writes (one directory per run): messages.csv, one row per operation, and the
// summary: flow completion time percentiles per opcode and size bucket, and the run's totals.
#include <ostream>

#include "replay/replayer.h"

namespace hcaemu::replay {

// qp,op,opcode,bytes,post_ns,done_ns,fct_ns,status (times in ns with three decimals).
void write_messages_csv(std::ostream& out, const ReplayResult& result);
void write_summary(std::ostream& out, const ReplayResult& result);

}  // namespace hcaemu::replay
