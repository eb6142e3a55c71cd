#pragma once
// Sweeps: hcareplay run over the cartesian product of parameter values, one process and one
// directory per point, then their results in one table and plots of it (docs/replay-sweeps.md).
//
//   hcareplay sweep INPUT --out DIR --set KEY=V1,V2,... [--set ...] [-j N] [--emit-jobs FILE] [RUN OPTIONS]
//       DIR/points.csv (point,KEY1,KEY2,...), DIR/p0001 ... one run each, as
//       `hcareplay run INPUT --out DIR/pNNNN RUN OPTIONS --set KEY1=v --set KEY2=v --quiet`, its
//       output in DIR/pNNNN/log.txt, the exit statuses in DIR/status.csv, then collect.
//       --emit-jobs FILE writes the command lines instead (GNU parallel, Slurm) and runs nothing.
//   hcareplay collect DIR        DIR/results.csv from every DIR/pNNNN (replay/collect.h)
//   hcareplay plot DIR --x KEY --y METRIC [--by size|opcode] [--opcode OP] [--size S]
//                                a metric of results.csv against a swept key (replay/sweep_plot.h)
//   hcareplay plot DIR           the plots of one run directory (replay/plots.h)
//
// The points run as processes of the hcareplay binary itself, so each has its own SystemC kernel
// (it starts once per process) and a failing point cannot take the others down.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "replay/plots.h"

namespace hcaemu::replay {

inline constexpr size_t kMaxSweepPoints = 10000;

// One --set of a sweep: a key and the values it takes, in the order given.
struct SweepKey {
  std::string name;
  std::vector<std::string> values;
};
// One point: a value for every key, in --set order.
using SweepPoint = std::vector<std::pair<std::string, std::string>>;

// "KEY=V1,V2,...": KEY of [A-Za-z0-9_.-], at least one value, none empty or given twice.
bool parse_sweep_key(const std::string& arg, SweepKey* key, std::string* error);

// The cartesian product of the keys' values, the first key outermost (its value changes
// slowest). False with the reason for no key, a key given twice, or more than kMaxSweepPoints.
bool sweep_points(const std::vector<SweepKey>& keys, std::vector<SweepPoint>* points, std::string* error);

// The directory name of point `index` (0-based) of `count`: p0001, p0002, ... (wider past 9999).
std::string point_name(size_t index, size_t count);

// The arguments of one point's run: HCAREPLAY run INPUT --out POINT_DIR RUN_OPTIONS --set K=v ... --quiet.
std::vector<std::string> point_command(const std::string& hcareplay, const std::string& input,
                                       const std::string& point_dir, const std::vector<std::string>& run_options,
                                       const SweepPoint& point);

// `word` as one word of a POSIX shell command line (single-quoted unless it needs nothing).
std::string shell_quote(const std::string& word);

// The commands. `args` are the arguments after the command word; the result is hcareplay's exit
// status: 0 done, 1 a point failed / nothing could be read / a plot could not be drawn, 2 usage.
// self_exe is the hcareplay binary the points run (self_executable()).
int sweep_command(const std::vector<std::string>& args, const std::string& self_exe);
int collect_command(const std::vector<std::string>& args);
int plot_command(const std::vector<std::string>& args);

// The hcareplay binary running now, as an absolute path (/proc/self/exe, else argv[0] resolved).
std::string self_executable(const char* argv0);

}  // namespace hcaemu::replay
