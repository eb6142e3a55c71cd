#pragma once
// Runs a sweep's points on this machine: at most N processes at once, each one's stdout and
// stderr into its log file, a progress line per finished point. A point that fails (or cannot
// start) is recorded and the others go on.
#include <ostream>
#include <string>
#include <vector>

namespace hcaemu::replay {

struct PointJob {
  std::string name;               // p0001
  std::vector<std::string> argv;  // argv[0] is the program's path
  std::string log_path;           // created or truncated
};

struct PointOutcome {
  std::string name;
  int exit_status = 0;  // 128 + signal when killed; 127 when it could not start
  double seconds = 0;   // wall-clock
  std::string error;    // why it could not start
};

// Runs every job, at most `parallel` (>= 1) at a time, in the jobs' order; the outcomes in the
// same order. One line per finished point on *progress when given: the count, the failures so
// far and the time to go.
std::vector<PointOutcome> run_points(const std::vector<PointJob>& jobs, size_t parallel, std::ostream* progress);

}  // namespace hcaemu::replay
