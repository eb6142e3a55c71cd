#pragma once
// Child processes without a shell, for the sweep's points (hcareplay run) and for gnuplot: the
// arguments go to the program as they are, so paths with spaces or quotes need no quoting.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace hcaemu::replay {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is the program's path (no search through PATH)
  std::string cwd;                // where it runs; empty: our own working directory
  int stdout_fd = -1;             // where its output goes; -1: /dev/null (stdin is always /dev/null)
  int stderr_fd = -1;
};

// Starts the program: its pid, or -1 with the reason in error.
pid_t spawn_process(const SpawnSpec& spec, std::string* error);

// How a child ended: its exit status, or 128 + the signal that killed it (as a shell says it).
// wait_process blocks; poll_process answers nullopt while the child runs.
int wait_process(pid_t pid);
std::optional<int> poll_process(pid_t pid);

// The path of `name` through $PATH (or `name` itself when it holds a '/' and is executable);
// empty when not found.
std::string find_program(const std::string& name);

}  // namespace hcaemu::replay
