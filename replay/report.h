#pragma once
// What a replay writes (one directory per run; docs/replay.md lists every column):
//   messages.csv  one row per operation: post, first packet, completion, FCT, ideal FCT, slowdown
//   summary.txt   FCT and slowdown percentiles per opcode and size bucket, links, totals (printed too)
//   summary.csv   the same percentiles, one row per opcode and size bucket (and "all")
//   totals.csv    key,value: packets, drops, ECN marks, pause frames, goodput...
//   links.csv     per link direction and bin: bytes, Gb/s, queue, ECN marks, pause frames, drops
//   qps.csv       per QP and bin: payload completed and its rate
#include <ostream>

#include "replay/replayer.h"

namespace hcaemu::replay {

void write_messages_csv(std::ostream& out, const ReplayResult& result);
void write_summary(std::ostream& out, const ReplayResult& result);
void write_summary_csv(std::ostream& out, const ReplayResult& result);
void write_totals_csv(std::ostream& out, const ReplayResult& result);
void write_link_timeline(std::ostream& out, const ReplayResult& result, uint64_t bin_ps);
void write_qp_timeline(std::ostream& out, const ReplayResult& result, uint64_t bin_ps);

// A size bucket as the CSV files name it: "64B", "4KiB", "1MiB".
std::string size_bucket_label(uint64_t top);

}  // namespace hcaemu::replay
