#pragma once
// The plots of one run directory (what `hcareplay run` writes, docs/replay.md), drawn by gnuplot
// into DIR/plots/NAME.png and DIR/plots/NAME.svg from DIR/plots/NAME.gp and its data files, which
// stay there to be edited and drawn again:
//   fct_cdf           the CDF of each opcode's flow completion times (messages.csv), log x in us
//   slowdown_by_size  p50 and p99 slowdown per size bucket and opcode (summary.csv, else computed
//                     from messages.csv)
//   throughput        Gb/s completed per QP over time, its DCQCN rate dashed when limited (qps.csv)
//   queue_depth       bytes queued per link that ever holds more than a frame, and the ECN marks
//                     and PFC pause frames of all links as impulses on a second axis (links.csv)
// A missing input file skips its plot with a note; a malformed one is an error naming file and
// line. The same files give byte-identical scripts and data files.
#include <string>
#include <vector>

namespace hcaemu::replay {

struct RunPlots {
  std::vector<std::string> scripts;  // NAME.gp written into DIR/plots, in the order above
  std::vector<std::string> notes;    // plots skipped and why; gnuplot's warnings
  std::vector<std::string> errors;   // malformed inputs ("file:line: what"), files not written
};

// Writes DIR/plots/NAME.gp and the data files of every plot the run's files allow; runs nothing.
RunPlots write_run_plots(const std::string& dir);

// write_run_plots, then gnuplot on each script. False with the errors (one per line) in *error,
// among them kGnuplotMissing (replay/gnuplot.h) when gnuplot is not installed: the caller treats
// that as a warning, the run's CSV files being complete. Notes go into *notes when given.
bool plot_run(const std::string& dir, std::string* error, std::vector<std::string>* notes = nullptr);

}  // namespace hcaemu::replay
