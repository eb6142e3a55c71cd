#pragma once
// The results of a sweep in one table: DIR/results.csv from every point directory DIR/pNNNN
// (its settings.csv, summary.csv and totals.csv), one row per point and row of its summary:
//   point,<setting keys...>,opcode,size,count,fct_p50_ns,fct_p99_ns,fct_p999_ns,
//   slowdown_p50,slowdown_p99,slowdown_p999,<totals keys...>
// Keys appear in the order the points first name them. A point whose summary has no row (no
// operation completed) gets one row with the summary columns empty, so its totals still show.
// A point with a file missing or malformed is left out and named in `skipped`.
#include <string>
#include <vector>

namespace hcaemu::replay {

// summary.csv's columns that results.csv carries, in this order.
inline constexpr const char* kSummaryColumns[] = {"opcode",       "size",         "count",
                                                  "fct_p50_ns",   "fct_p99_ns",   "fct_p999_ns",
                                                  "slowdown_p50", "slowdown_p99", "slowdown_p999"};

struct Collected {
  size_t points = 0;                 // read into results.csv
  size_t rows = 0;                   // rows of results.csv
  std::vector<std::string> skipped;  // "p0003: DIR/p0003/summary.csv: missing"
};

// The point directories of DIR (p followed by digits), in the order of their numbers.
std::vector<std::string> point_directories(const std::string& dir);

// Writes DIR/results.csv. False with the reason in error when no point could be read or the
// file cannot be written; `out` lists what was left out either way.
bool collect_sweep(const std::string& dir, Collected* out, std::string* error);

}  // namespace hcaemu::replay
