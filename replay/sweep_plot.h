#pragma once
// A metric of a sweep's results.csv (replay/collect.h) against one of its keys, drawn by gnuplot
// as DIR/plot-METRIC-vs-KEY.png and .svg from DIR/plot-METRIC-vs-KEY.gp and .dat:
//   - which rows: by default the "all" rows (opcode all, size all); --by size one line per size
//     bucket, --by opcode one per opcode; --opcode OP and --size S keep those rows only;
//   - one line per combination of the row's opcode and size and the values of the other swept
//     keys that vary, its points in the order of x;
//   - x is numeric when every value of KEY parses as a number (log scale when they are positive
//     and span a factor of 100 or more), else categorical in the sweep's order.
// Filters and --by add to the file name (plot-METRIC-vs-KEY-by-size-opcode-write).
#include <string>

namespace hcaemu::replay {

struct SweepPlotRequest {
  std::string dir, x, y;
  std::string by;      // "", "size" or "opcode"
  std::string opcode;  // "" or an opcode of results.csv
  std::string size;    // "" or a size bucket of results.csv
};

// Writes the script and data file; their stem (plot-METRIC-vs-KEY...) in *stem. False with the
// reason in error: an unknown key or metric (listing the known ones), no row selected, a
// malformed results.csv.
bool write_sweep_plot(const SweepPlotRequest& request, std::string* stem, std::string* error);

// write_sweep_plot, then gnuplot on the script in DIR (gnuplot's warnings into *warnings).
bool plot_sweep(const SweepPlotRequest& request, std::string* stem, std::string* error, std::string* warnings);

}  // namespace hcaemu::replay
