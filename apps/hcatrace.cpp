// hcatrace: reads the latency traces hcaemu writes (traces/latency_trace.h). Thin: the reading and
// the statistics are traces/trace_summary.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "traces/trace_summary.h"

namespace {

constexpr const char* kUsage = R"(Usage: hcatrace summary [--csv] TRACE
       hcatrace --help | --version

Reads a latency trace that hcaemu wrote in model time (PREFIX.csv or PREFIX.json; the JSON may
be one a killed run left unterminated) and prints, per WQE opcode and exact message size, the
count and the p50/p90/p99/max of
  end_to_end   doorbell -> cqe_write of the same function and message
  ->STAGE      for wqe_fetch, payload_dma, wire_first_packet, remote_delivery, ack, cqe_write
               and interrupt: the time from the message's previous recorded stage to STAGE
               (for an RDMA WRITE: doorbell -> wqe_fetch -> payload_dma -> ... -> interrupt)
Percentiles are nearest-rank over all samples. Messages without a doorbell or a cqe_write count
as messages but give no end_to_end sample.

Commands:
  summary TRACE   print the statistics as an aligned table (times in ns, us or ms)

Options:
  --csv           print CSV instead: opcode,bytes,metric,count,p50_ns,p90_ns,p99_ns,max_ns
                  (times in ns with three decimals, exact to the picosecond)
  -h, --help      show this help and exit
  --version       print the version and exit

Exit status: 0 on success, 1 when TRACE cannot be read or is malformed (the message names the
line), 2 on a usage error. The trace formats are described in docs/timing.md.
)";

int usage_error(const std::string& what) {
  std::cerr << "hcatrace: " << what << "\n(see hcatrace --help)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (a == "--version") {
      std::cout << "hcatrace 0.1.0\n";
      return 0;
    }
  }
  if (args.empty()) return usage_error("a command is required");
  if (args[0] != "summary") return usage_error("unknown command \"" + args[0] + "\"");

  bool csv = false;
  std::string trace;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--csv") {
      csv = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option \"" + a + "\"");
    } else if (trace.empty()) {
      trace = a;
    } else {
      return usage_error("one TRACE only (got \"" + trace + "\" and \"" + a + "\")");
    }
  }
  if (trace.empty()) return usage_error("summary needs a TRACE file");

  std::string error;
  const auto summary = hcaemu::traces::summarize_trace_file(trace, &error);
  if (!summary) {
    std::cerr << "hcatrace: " << error << "\n";
    return 1;
  }
  std::cout << (csv ? hcaemu::traces::format_summary_csv(*summary) : hcaemu::traces::format_summary_table(*summary));
  return std::cout.flush() ? 0 : 1;
}
